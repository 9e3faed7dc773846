"""Label, annotation and env-var keys of LeaderWorkerSet (from `lwsconf.lwsapi`), and the portable hashes.

Keys and formulas are exact (docs/lws-contract.md sections 3.1-3.3, 4.8). `group_key` and `subgroup_key`
are portable across implementations (trap T6): SHA-1 hex of documented strings. No I/O here.
"""

from __future__ import annotations

import hashlib

from lwsconf import lwsapi

# The API's names are defined once, in lwsconf.lwsapi (every layer uses them); the reconciler's modules read
# them from here beside the hashes, hence the re-export of all of them.
from lwsconf.lwsapi import *  # noqa: F403

# Labels the StatefulSet controller puts on the pods it creates (not LWS's; used through the
# downward API and for matching, see README "Design choices").
STS_POD_NAME = "statefulset.kubernetes.io/pod-name"
STS_POD_INDEX = "apps.kubernetes.io/pod-index"

TPU_RESOURCE = "google.com/tpu"


def sha1_hex(text: str) -> str:
    """Lowercase 40-character hex SHA-1 of the UTF-8 bytes of `text`."""
    return hashlib.sha1(text.encode()).hexdigest()


def group_key(namespace: str, leader_pod_name: str) -> str:
    """The `group-key` label value: SHA-1 hex of "<ns>/<leaderPodName>"; stable across recreation."""
    return sha1_hex(f"{namespace}/{leader_pod_name}")


def subgroup_key(leader_pod_name: str, subgroup_index: int) -> str:
    """The `subgroup-key` label value: SHA-1 hex of "<leaderPodName>/<subgroupIndex>" (no namespace, T23)."""
    return sha1_hex(f"{leader_pod_name}/{subgroup_index}")


def subgroup_index(size: int, subgroup_size: int, worker_index: int, policy_type: str | None) -> int | None:
    """The `subgroup-index` of pod `worker_index` in a group of `size` (section 4.8, trap T23).

    Args:
        size: group size S (from the pod's `size` annotation).
        subgroup_size: sgs (from the pod's `subgroup-size` annotation); must be >= 1.
        worker_index: j; 0 is the leader.
        policy_type: `LeaderWorker`, `LeaderExcluded` or None (treated as `LeaderWorker`).

    Returns:
        The subgroup index, or None for a `LeaderExcluded` leader (it carries no subgroup labels).
        Workers: `(j-1) // sgs` only when `(S-1) % sgs == 0 and S % sgs != 0` (the leader is the extra
        pod of subgroup 0), else `j // sgs` -- divisibility decides, not the policy type.

    Raises:
        ValueError: `subgroup_size` < 1.
    """
    if subgroup_size < 1:
        raise ValueError(f"subgroup size must be >= 1, got {subgroup_size}")
    if worker_index == 0:
        return None if policy_type == lwsapi.SUBGROUP_LEADER_EXCLUDED else 0
    if (size - 1) % subgroup_size == 0 and size % subgroup_size != 0:
        return (worker_index - 1) // subgroup_size
    return worker_index // subgroup_size
