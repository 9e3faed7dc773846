"""Volcano gang scheduling: each group's PodGroup and the annotation naming it (docs/lws-contract.md 4.13).

On only when the reconciler is run with a gang-scheduling provider (`volcano`, the one upstream supports:
v0.9.0 pkg/schedulerprovider/interface.go:30-31), as upstream's manager is when its configuration has a
`gangSchedulingManagement` section (cmd/main.go:217-226). Then, as upstream:

* every LWS pod is annotated `scheduling.k8s.io/group-name: N-i-<rev>`, its group's PodGroup (upstream's pod
  webhook, pod_webhook.go:159-164 and volcano_provider.go:103-108; here patched right after the pod appears,
  like the labels of `pods.label_patch`: no webhook);
* each leader pod not being deleted gets a PodGroup of that name (pod_controller.go:130-135, before the
  size-1 and LeaderReady gates), created once and never updated, controlled by the leader pod, so it goes
  with the leader (group restart, rollout, resize, LWS deletion) and the leader's successor, on a new
  revision or not, gets a new one (volcano_provider.go:49-100).

The PodGroup: labels `name`, `group-index`, `template-revision-hash`; annotations: the LWS's `volcano.sh/*`
ones; `spec.minMember` = size, or 1 under startupPolicy LeaderReady; `spec.minResources` = the leader
template's pod requests + (size - 1) x the worker template's (utils.go:83-103, component-helpers'
PodRequests: containers summed, init containers as the sidecar KEP counts them, pod-level requests for
cpu/memory/hugepages, overhead); `spec.queue` from the LWS's `scheduling.volcano.sh/queue-name`. No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from lwsconf.reconciler import labels, pods, revision
from lwsconf.reconciler import spec as lws_spec

Obj = dict[str, Any]
PROVIDERS = frozenset({labels.GANG_PROVIDER_VOLCANO})
PODGROUP_API_VERSION = f"{labels.VOLCANO_GROUP}/{labels.VOLCANO_VERSION}"
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


def check_provider(provider: str | None) -> str | None:
    """The provider if supported (None: gang scheduling off); ValueError names the supported ones."""
    if provider is None or provider == "":
        return None
    if provider not in PROVIDERS:
        supported = ", ".join(sorted(PROVIDERS))
        raise ValueError(f"unsupported gang-scheduling provider {provider!r}; supported: {supported}")
    return provider


def podgroup_name(lws_name: str, group_index: int | str, revision_key: str) -> str:
    """`N-i-<rev>` (upstream's GetPodGroupName, interface.go:47-51)."""
    return f"{lws_name}-{group_index}-{revision_key}"


def pod_podgroup_name(pod: Mapping[str, Any]) -> str | None:
    """The PodGroup an LWS pod belongs to, from its name label, group index and revision label (None when the
    pod is no LWS pod or its group cannot be told yet)."""
    lws_name = pods.pod_labels(pod).get(labels.NAME)
    if not lws_name:
        return None
    index = pods.group_index(pod, lws_name)
    key = revision.key_of(pod)
    if index is None or not key:
        return None
    return podgroup_name(lws_name, index, key)


def annotation_patch(pod: Mapping[str, Any]) -> dict[str, str]:
    """`{scheduling.k8s.io/group-name: N-i-<rev>}` when the pod lacks it or names another group, else {}."""
    wanted = pod_podgroup_name(pod)
    if wanted is None:
        return {}
    current = ((pod.get("metadata") or {}).get("annotations") or {}).get(labels.PODGROUP_GROUP_NAME)
    return {} if current == wanted else {labels.PODGROUP_GROUP_NAME: wanted}


def _quantities(resources: Mapping[str, Any] | None) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, raw in (resources or {}).items():
        value = revision.parse_quantity(raw)
        if value is None:
            raise ValueError(f"resource {name}: {raw!r} is not a quantity")
        out[name] = value
    return out


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction], times: int = 1) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value * times


def _requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    return _quantities((container.get("resources") or {}).get("requests"))


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """What a pod of this spec requests, as component-helpers' PodRequests (v0.36 resource/helpers.go:151-187)."""
    total: dict[str, Fraction] = {}
    for container in pod_spec.get("containers") or ():
        _add(total, _requests(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in pod_spec.get("initContainers") or ():
        requests = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            use = dict(sidecars)
        else:
            use = dict(sidecars)
            _add(use, requests)
        for name, value in use.items():
            init_peak[name] = max(init_peak.get(name, Fraction(0)), value)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), value)
    pod_level = _quantities((pod_spec.get("resources") or {}).get("requests"))
    for name, value in pod_level.items():
        if name in _POD_LEVEL or name.startswith(_HUGEPAGES):
            total[name] = value
    _add(total, _quantities(pod_spec.get("overhead")))
    return total


def format_quantity(value: Fraction) -> str:
    """A quantity string of exactly `value`: whole numbers plain, else milli-units, else nano-units."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    if milli.denominator == 1:
        return f"{milli.numerator}m"
    return f"{round(value * 10**9)}n"


def min_resources(lws: Mapping[str, Any]) -> dict[str, str]:
    """The leader's requests plus (size - 1) workers' (the worker template stands in for a missing leader one)."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    worker_spec = (lwt.get("workerTemplate") or {}).get("spec") or {}
    leader_template = lwt.get("leaderTemplate")
    leader_spec = (leader_template.get("spec") or {}) if isinstance(leader_template, dict) else worker_spec
    total = pod_requests(leader_spec)
    size = int(lwt.get("size") or 1)
    if size > 1:
        _add(total, pod_requests(worker_spec), size - 1)
    return {name: format_quantity(value) for name, value in sorted(total.items())}


def pod_group(lws: Mapping[str, Any], leader_pod: Mapping[str, Any]) -> Obj | None:
    """The PodGroup of `leader_pod`'s group, controlled by the leader pod (None when its name cannot be told)."""
    name = pod_podgroup_name(leader_pod)
    if name is None:
        return None
    lws_meta = lws.get("metadata") or {}
    pod_meta = leader_pod.get("metadata") or {}
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    startup = (lws.get("spec") or {}).get("startupPolicy")
    lws_annotations: Mapping[str, str] = lws_meta.get("annotations") or {}
    spec: Obj = {"minMember": 1 if startup == lws_spec.LEADER_READY else int(lwt.get("size") or 1),
                 "minResources": min_resources(lws)}
    queue = lws_annotations.get(labels.PODGROUP_QUEUE_NAME)
    if queue is not None:
        spec["queue"] = queue
    lws_name = str(lws_meta.get("name", ""))
    meta: Obj = {
        "name": name, "namespace": pod_meta.get("namespace"),
        "labels": {labels.NAME: lws_name,
                   labels.GROUP_INDEX: str(pods.group_index(leader_pod, lws_name)),
                   labels.TEMPLATE_REVISION_HASH: revision.key_of(leader_pod)},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_meta.get("name"),
                             "uid": pod_meta.get("uid"), "controller": True, "blockOwnerDeletion": True}],
    }
    inherited = volcano_annotations(lws_annotations.items())
    if inherited:
        meta["annotations"] = inherited
    return {"apiVersion": PODGROUP_API_VERSION, "kind": labels.PODGROUP_KIND, "metadata": meta, "spec": spec}


def volcano_annotations(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The LWS annotations a PodGroup inherits: those starting with `volcano.sh/` (volcano_provider.go:111-119)."""
    return {k: v for k, v in items if k.startswith(labels.VOLCANO_ANNOTATION_PREFIX)}


def owned_by(podgroup: Mapping[str, Any], leader_pod: Mapping[str, Any]) -> bool:
    uid = (leader_pod.get("metadata") or {}).get("uid")
    return any(ref.get("uid") == uid for ref in (podgroup.get("metadata") or {}).get("ownerReferences") or ())
