"""Object names of a LeaderWorkerSet's children and parsing of StatefulSet pod names.

Leader pods and worker StatefulSets are `N-i`, worker pods `N-i-j`, ControllerRevisions
`<N[:220]>-<hash>-<number>` (docs/lws-contract.md sections 2.1, 2.5). Ordinals are parsed the way
upstream's `GetParentNameAndOrdinal` does: the trailing `-<digits>`, which must fit in an int32.
No I/O here.
"""

from __future__ import annotations

import re

_ORDINAL = re.compile(r"^(.*)-([0-9]+)$", re.DOTALL)
_INT32_MAX = 2**31 - 1
REVISION_PREFIX_MAX = 220


def leader_pod_name(lws_name: str, group_index: int) -> str:
    """`N-i`: the leader pod, and the worker StatefulSet and per-group Service of group i."""
    return f"{lws_name}-{group_index}"


def worker_pod_name(lws_name: str, group_index: int, worker_index: int) -> str:
    """`N-i-j`: worker j (1..S-1) of group i."""
    return f"{lws_name}-{group_index}-{worker_index}"


def parent_and_ordinal(pod_name: str) -> tuple[str, int] | None:
    """Split `N-i-j` into (`N-i`, j); None when the name has no `-<digits>` suffix or it overflows int32."""
    match = _ORDINAL.match(pod_name)
    if not match:
        return None
    ordinal = int(match.group(2))
    if ordinal > _INT32_MAX:
        return None
    return match.group(1), ordinal


def ordinal(pod_name: str) -> int | None:
    """The trailing ordinal of a StatefulSet pod name, or None."""
    parsed = parent_and_ordinal(pod_name)
    return None if parsed is None else parsed[1]


def group_index_from_leader_name(lws_name: str, pod_name: str) -> int | None:
    """i when `pod_name` is exactly `N-i` for this LWS, else None (guards against `N-i-j` and other sets)."""
    parsed = parent_and_ordinal(pod_name)
    if parsed is None or parsed[0] != lws_name:
        return None
    return parsed[1]


def revision_name(lws_name: str, revision_hash: str, number: int) -> str:
    """`<N truncated to 220 chars>-<hash>-<number>`, at most 253 characters."""
    return f"{lws_name[:REVISION_PREFIX_MAX]}-{revision_hash}-{number}"
