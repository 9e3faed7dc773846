"""What the reconciler stamps into pod templates so pods look as upstream's pod webhook would make them.

Upstream's pod webhook (docs/lws-contract.md section 3.4) edits each pod at admission. There is no webhook
here, so the StatefulSet pod templates carry the result instead:

* Env (section 3.3, trap T21): every container and init container gets the LWS entries first, and
  user entries of the same names are dropped. A worker StatefulSet serves one group, so its values are
  literals, except the worker index, read from the StatefulSet controller's `apps.kubernetes.io/pod-index`
  label. The leader StatefulSet is shared by all groups, so the leader's address is built from its own
  name: `LWS_LEADER_ADDRESS` is first defined from `fieldRef: metadata.name` and immediately redefined
  as `$(LWS_LEADER_ADDRESS).<subdomain>.<ns>`. The kubelet expands `$(VAR)` against earlier entries and
  the last definition wins, so containers (and user `$(LWS_LEADER_ADDRESS)` references in later env,
  command and args) observe `N-i.<subdomain>.<ns>` while `env[0].name` is still `LWS_LEADER_ADDRESS`.
  Kubernetes' duplicate-env warning exempts exactly this form (a later value that contains `$(NAME)`;
  kubernetes/kubernetes pkg/api/pod/warnings.go). Server-side apply refuses duplicate env names, so the
  leader StatefulSet must be written with create/update (see `desired.merged_for_update`).
* Exclusive placement for leaders (section 4.7): one anti-affinity term that keeps a leader away from
  topology domains holding another LWS leader of the namespace. Group keys differ per group and the
  template is shared, so upstream's own-group terms cannot be written here; README "Design choices".

No I/O here; functions return new dicts and never modify their arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from lwsconf.reconciler import labels, revision

Obj = dict[str, Any]


def overlay(user: Mapping[str, str] | None, ours: Mapping[str, str]) -> dict[str, str]:
    """User labels/annotations overlaid with ours (ours win), as upstream's `mergeMetadata`."""
    return {**(user or {}), **ours}


def field_ref_env(name: str, field_path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}}


def leader_env(*, lws_name: str, namespace: str, size: int, unique_subdomain: bool) -> list[Obj]:
    """The LWS env entries of the shared leader template (see the module docstring)."""
    own = f"$({labels.ENV_LEADER_ADDRESS})"
    subdomain = own if unique_subdomain else lws_name
    return [
        field_ref_env(labels.ENV_LEADER_ADDRESS, "metadata.name"),
        {"name": labels.ENV_LEADER_ADDRESS, "value": f"{own}.{subdomain}.{namespace}"},
        {"name": labels.ENV_GROUP_SIZE, "value": str(size)},
        {"name": labels.ENV_WORKER_INDEX, "value": "0"},
    ]


def worker_env(*, leader_name: str, subdomain: str, namespace: str, size: int) -> list[Obj]:
    """The LWS env entries of one group's worker template: literal address and size, index from pod-index."""
    return [
        {"name": labels.ENV_LEADER_ADDRESS, "value": f"{leader_name}.{subdomain}.{namespace}"},
        {"name": labels.ENV_GROUP_SIZE, "value": str(size)},
        field_ref_env(labels.ENV_WORKER_INDEX, f"metadata.labels['{labels.STS_POD_INDEX}']"),
    ]


def with_env(container: Mapping[str, Any], entries: list[Obj]) -> Obj:
    """`entries` first, then the container's own env minus names already present (first one wins).

    As upstream's `addEnvVarsIfNotExists`: LWS names replace user entries of the same name, and a user
    name listed twice keeps its first entry.
    """
    seen = {e["name"] for e in entries}
    env = copy.deepcopy(entries)
    for entry in container.get("env") or ():
        if entry.get("name") not in seen:
            env.append(copy.deepcopy(entry))
            seen.add(entry.get("name"))
    out = copy.deepcopy(dict(container))
    out["env"] = env
    return out


def inject_env(pod_spec: Mapping[str, Any], entries: list[Obj]) -> Obj:
    """The pod spec with `entries` injected into every container and init container (not ephemeral ones)."""
    out = copy.deepcopy(dict(pod_spec))
    for field in ("containers", "initContainers"):
        if out.get(field):
            out[field] = [with_env(c, entries) for c in out[field]]
    return out


def leader_anti_affinity_term(topology_key: str) -> Obj:
    """Keep this leader out of any topology domain that already holds an LWS leader (worker-index "0")."""
    return {"labelSelector": {"matchExpressions": [
        {"key": labels.WORKER_INDEX, "operator": "In", "values": ["0"]}]}, "topologyKey": topology_key}


def with_leader_exclusive_placement(pod_spec: Mapping[str, Any], topology_key: str) -> Obj:
    """The pod spec with the leader anti-affinity term appended to any user terms.

    Skipped when the user's required anti-affinity terms already use this topology key, as the webhook
    skips terms it finds already applied.
    """
    out = copy.deepcopy(dict(pod_spec))
    affinity = out.setdefault("affinity", {}) or {}
    out["affinity"] = affinity
    anti = affinity.setdefault("podAntiAffinity", {}) or {}
    affinity["podAntiAffinity"] = anti
    terms = list(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    if not any(t.get("topologyKey") == topology_key for t in terms):
        terms.append(leader_anti_affinity_term(topology_key))
    anti["requiredDuringSchedulingIgnoredDuringExecution"] = terms
    return out


def with_node_selector(pod_spec: Mapping[str, Any], key: str, value: str) -> Obj:
    """The pod spec with `nodeSelector[key] = value` added (ours wins over a user value for that key)."""
    out = copy.deepcopy(dict(pod_spec))
    out["nodeSelector"] = {**(out.get("nodeSelector") or {}), key: value}
    return out


def requests_tpus(pod_spec: Mapping[str, Any]) -> bool:
    """Whether any container or init container has a non-zero `google.com/tpu` limit or request."""
    containers: Iterable[Mapping[str, Any]] = [*(pod_spec.get("containers") or ()),
                                               *(pod_spec.get("initContainers") or ())]
    for container in containers:
        resources = container.get("resources") or {}
        for kind in ("limits", "requests"):
            amount = revision.parse_quantity((resources.get(kind) or {}).get(labels.TPU_RESOURCE))
            if amount:
                return True
    return False


def template(base: Mapping[str, Any], *, labels_: Mapping[str, str], annotations: Mapping[str, str],
             pod_spec: Mapping[str, Any]) -> Obj:
    """A PodTemplateSpec: `base`'s metadata with labels/annotations overlaid, and `pod_spec`."""
    meta = copy.deepcopy(dict(base.get("metadata") or {}))
    meta["labels"] = overlay(meta.get("labels"), labels_)
    meta["annotations"] = overlay(meta.get("annotations"), annotations)
    return {"metadata": meta, "spec": copy.deepcopy(dict(pod_spec))}
