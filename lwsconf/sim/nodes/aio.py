"""asyncio helpers the node parts share: the kubelet and the cluster DNS wait the same way.

Standard library only; imports no other node module, so anything under `lwsconf.sim.nodes` may use it.
"""

from __future__ import annotations

import asyncio


async def until_any(*events: asyncio.Event) -> None:
    """Until any of `events` is set (a stop, or the node going away: what node parts wait on)."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
