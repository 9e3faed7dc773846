"""Pod predicates, and the labels the reconciler patches onto LWS pods right after they appear.

Upstream's pod webhook stamps these labels at admission (docs/lws-contract.md section 3.4, trap T1):
`group-index` and `group-key` on leaders, `worker-index` on workers, and `subgroup-index`/`subgroup-key`
on pods of a subgrouped LWS. Without a webhook they cannot be in the pod at creation -- the leader
template is shared by all groups, and a worker template by all workers of a group -- so the runtime
patches them as soon as it sees the pod; `label_patch` computes the patch from the pod alone (its name
and the annotations the templates put on it), with the webhook's rules: group labels only when absent,
`worker-index` always from the name. Nothing in a container depends on these labels: env comes from the
templates (`podtemplate`). No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lwsconf.reconciler import labels, names

Obj = dict[str, Any]


def _meta(pod: Mapping[str, Any]) -> Obj:
    meta = pod.get("metadata")
    return meta if isinstance(meta, dict) else {}


def pod_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return dict(_meta(pod).get("labels") or {})


def is_leader(pod: Mapping[str, Any]) -> bool:
    """Leader pods carry `worker-index: "0"` from the leader StatefulSet's template."""
    return pod_labels(pod).get(labels.WORKER_INDEX) == "0"


def is_deleting(pod: Mapping[str, Any]) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def is_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's `Ready` condition is True (the `LeaderReady` startup gate checks only this, trap T30)."""
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def running_and_ready(pod: Mapping[str, Any]) -> bool:
    """Phase Running and `Ready=True`: the leader half of group readiness (section 4.4.2)."""
    return (pod.get("status") or {}).get("phase") == "Running" and is_ready(pod)


def restart_observed(pod: Mapping[str, Any]) -> bool:
    """The group-restart trigger of section 4.2 (trap T16).

    True when the pod has a deletionTimestamp, or is Running/Pending with any container or init container
    `restartCount > 0` (an absolute count). Failed and Succeeded pods never trigger through restarts.
    """
    if is_deleting(pod):
        return True
    status = pod.get("status") or {}
    if status.get("phase") not in ("Running", "Pending"):
        return False
    statuses = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    return any(int(s.get("restartCount") or 0) > 0 for s in statuses)


def group_index(pod: Mapping[str, Any], lws_name: str) -> int | None:
    """The pod's group: its `group-index` label, else (a leader not yet labelled) from its name `N-i`."""
    raw = pod_labels(pod).get(labels.GROUP_INDEX)
    if raw is not None:
        return int(raw) if raw.isdigit() else None
    if is_leader(pod):
        return names.group_index_from_leader_name(lws_name, str(_meta(pod).get("name", "")))
    return None


def in_group(pods: Iterable[Mapping[str, Any]], lws_name: str, index: int) -> list[Mapping[str, Any]]:
    """The pods of group `index` of LWS `lws_name` (upstream lists `{name: N, group-index: i}`)."""
    return [p for p in pods
            if pod_labels(p).get(labels.NAME) == lws_name and group_index(p, lws_name) == index]


def _int_annotation(pod: Mapping[str, Any], key: str) -> int:
    raw = (_meta(pod).get("annotations") or {}).get(key)
    if raw is None:
        raise ValueError(f"pod {_meta(pod).get('namespace')}/{_meta(pod).get('name')}: annotation {key} is "
                         "missing; LWS pods get it from their StatefulSet template")
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"pod {_meta(pod).get('name')}: annotation {key} must be an integer, got {raw!r}") from None


def _ordinal(pod: Mapping[str, Any]) -> int:
    name = str(_meta(pod).get("name", ""))
    ordinal = names.ordinal(name)
    if ordinal is None:
        raise ValueError(f"pod {_meta(pod).get('namespace')}/{name}: the name has no '-<ordinal>' suffix, "
                         "so its LWS index labels cannot be derived")
    return ordinal


def label_patch(pod: Mapping[str, Any]) -> dict[str, str]:
    """Labels to add or change on an LWS pod so it carries what the webhook would have stamped.

    Returns only the entries that differ from the pod's labels ({} when nothing is missing). Pods without
    the `name` label are not LWS pods and get nothing.

    Raises:
        ValueError: the pod cannot be labelled (no size annotation, or a name without an ordinal), with
            the reason; upstream's webhook would have refused such a pod.
    """
    current = pod_labels(pod)
    if labels.NAME not in current:
        return {}
    size = _int_annotation(pod, labels.SIZE)
    wanted = _leader_labels(pod, current) if is_leader(pod) else _worker_labels(pod, current, size)
    return {k: v for k, v in wanted.items() if current.get(k) != v}


def _leader_labels(pod: Mapping[str, Any], current: dict[str, str]) -> dict[str, str]:
    meta = _meta(pod)
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    out: dict[str, str] = {}
    if labels.GROUP_INDEX not in current:
        out[labels.GROUP_INDEX] = str(_ordinal(pod))
    if labels.GROUP_KEY not in current:
        out[labels.GROUP_KEY] = labels.group_key(namespace, name)
    annotations = meta.get("annotations") or {}
    policy = annotations.get(labels.SUBGROUP_POLICY_TYPE)
    if (labels.SUBGROUP_SIZE in annotations and not current.get(labels.SUBGROUP_INDEX)
            and policy != labels.SUBGROUP_LEADER_EXCLUDED):
        out[labels.SUBGROUP_INDEX] = "0"
        out[labels.SUBGROUP_KEY] = labels.subgroup_key(name, 0)
    return out


def _worker_labels(pod: Mapping[str, Any], current: dict[str, str], size: int) -> dict[str, str]:
    worker_index = _ordinal(pod)
    out = {labels.WORKER_INDEX: str(worker_index)}
    annotations = _meta(pod).get("annotations") or {}
    if labels.SUBGROUP_SIZE in annotations and not current.get(labels.SUBGROUP_INDEX):
        subgroup_size = _int_annotation(pod, labels.SUBGROUP_SIZE)
        # The webhook's worker formula ignores the policy type (trap T23).
        index = labels.subgroup_index(size, subgroup_size, worker_index, None) or 0
        leader_name = str(annotations.get(labels.LEADER_NAME, ""))
        out[labels.SUBGROUP_INDEX] = str(index)
        out[labels.SUBGROUP_KEY] = labels.subgroup_key(leader_name, index)
    return out
