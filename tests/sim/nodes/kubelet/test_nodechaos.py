"""Reading node faults from a Node's annotations, and the gate pod writes pass through."""

from __future__ import annotations

import asyncio

import pytest

from lwsconf.sim.nodes.kubelet import nodechaos


def node(**annotations: str) -> dict[str, object]:
    return {"metadata": {"name": "n", "annotations": annotations}}


@pytest.mark.parametrize(("value", "ready"), [
    ("true", "Unknown"), ("Unreachable", "Unknown"), ("not-ready", "False"), ("false", "True"), ("", "True"),
    ("maybe", "True"),
])
def test_not_ready_annotation_picks_the_ready_status_it_leads_to(value: str, ready: str) -> None:
    assert nodechaos.from_node(node(**{nodechaos.NOT_READY: value})).ready == ready


@pytest.mark.parametrize(("value", "slow"), [("1.5", 1.5), ("0", 0.0), ("-2", 0.0), ("soon", 0.0), ("inf", 0.0)])
def test_slow_annotation_is_a_non_negative_number_of_seconds(value: str, slow: float) -> None:
    assert nodechaos.from_node(node(**{nodechaos.SLOW: value})).slow == slow


def test_pod_writes_wait_while_the_node_is_cut_off() -> None:
    async def scenario() -> None:
        switch = nodechaos.ChaosSwitch()
        switch.apply(nodechaos.NodeChaos(ready="Unknown"))
        write = asyncio.create_task(switch.before_pod_write())
        done, _ = await asyncio.wait({write}, timeout=0.05)
        assert not done, "a cut-off node writes nothing"
        switch.apply(nodechaos.NodeChaos())
        await asyncio.wait_for(write, 1.0)

    asyncio.run(scenario())


def test_removing_the_slow_fault_releases_a_waiting_write() -> None:
    async def scenario() -> None:
        switch = nodechaos.ChaosSwitch()
        switch.apply(nodechaos.NodeChaos(slow=60.0))
        write = asyncio.create_task(switch.before_pod_write())
        done, _ = await asyncio.wait({write}, timeout=0.05)
        assert not done, "the write waits for the delay"
        switch.apply(nodechaos.NodeChaos())
        await asyncio.wait_for(write, 1.0)

    asyncio.run(scenario())
