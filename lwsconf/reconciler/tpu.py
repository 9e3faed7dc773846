"""TPU environment variables (docs/lws-contract.md section 3.5), as the pods' templates and one admission
policy carry them.

Upstream's pod webhook appends `TPU_WORKER_HOSTNAMES`, `TPU_WORKER_ID`, `TPU_NAME`, `TPU_PROCESS_ADDRESSES`
and `TPU_PROCESS_PORT` to the TPU containers of each LWS pod at CREATE (upstream
`pkg/utils/accelerators/tpu.go`). `pod_entries` computes them for one pod from the same inputs (its worker
index, the group's size and subgroup size, whether the leader requests TPUs, the leader's name and the pod's
subdomain); everything else here turns that into what the reference writes:

* Leader template (shared by every group): the values depend only on the pod's own name, so they are written
  with the kubelet's `$(VAR)` expansion. `TPU_WORKER_HOSTNAMES` is first defined from `fieldRef:
  metadata.name`, `TPU_PROCESS_ADDRESSES` is built from it, and then it is redefined as the host list built
  from `$(TPU_WORKER_HOSTNAMES)` (the trick `podtemplate.leader_env` uses for `LWS_LEADER_ADDRESS`; the
  kubelet expands against earlier entries and the last definition wins). See `leader_spec`.
* Worker template (one per group): the ids, and with subgroups the host lists, differ per pod in ways no
  template can compute (`w - 1`, `(w - 1) mod g`). The template carries the entries with the first worker's
  values and the annotation `TABLE_ANNOTATION`: for each worker ordinal 1..S-1, the JSON Patch `replace`
  operations (`<path>=<value>`, `;`-separated; ordinals `|`-separated) that give that pod its own values.
  The MutatingAdmissionPolicy `leaderworkerset-tpu-env` (manifests/crd/mutating-admission-policy.yaml)
  applies the row of the pod's `apps.kubernetes.io/pod-index` at CREATE. See `worker_spec`. Only values that
  differ from worker 1's are in a row: without subgroups just the id (about 40 bytes per worker); with
  subgroups also the lists of every worker outside subgroup 0, about (S - g) * g * 2 * (host name length + 5)
  bytes: 149 KB for S 100, g 64 and 30-byte host names, 360 KB for S 200, g 32, past the 256 KiB a pod's
  annotations may hold (such pods are refused).

User entries win as upstream: nothing is added to a pod whose first TPU container defines
`TPU_WORKER_HOSTNAMES` or `TPU_WORKER_ID`; a user `TPU_PROCESS_PORT` is used and not added; a user
`TPU_NAME` or `TPU_PROCESS_ADDRESSES` is kept and ours is not added (upstream appends its entry and the LWS
env step then keeps the first of each name, `pkg/utils/pod/pod_utils.go:108-129`).

No I/O here; functions return new dicts and never modify their arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lwsconf.reconciler import labels, revision

Obj = dict[str, Any]

HOSTNAMES = "TPU_WORKER_HOSTNAMES"
WORKER_ID = "TPU_WORKER_ID"
NAME = "TPU_NAME"
ADDRESSES = "TPU_PROCESS_ADDRESSES"
PORT = "TPU_PROCESS_PORT"
DEFAULT_PORT = 8476
TABLE_ANNOTATION = "lwsconf.dev/tpu-env"
"""On worker pods of TPU groups: per ordinal, the env values the admission policy writes (module docstring)."""

Slot = tuple[str, int]
"""("containers" | "initContainers", index) of one container in a pod spec."""


def requests_tpus(container: Mapping[str, Any]) -> bool:
    """A non-zero `google.com/tpu` in the container's limits or requests (upstream reads limits first)."""
    resources = container.get("resources") or {}
    return any(revision.parse_quantity((resources.get(kind) or {}).get(labels.TPU_RESOURCE))
               for kind in ("limits", "requests"))


def tpu_slots(pod_spec: Mapping[str, Any]) -> list[Slot]:
    """The TPU containers: regular containers first, then init containers, each in spec order (tpu.go:74-87)."""
    return [(field, i) for field in ("containers", "initContainers")
            for i, c in enumerate(pod_spec.get(field) or ()) if requests_tpus(c)]


def _env_value(container: Mapping[str, Any], name: str) -> str | None:
    """The first entry named `name`'s literal value ("" when it has none), or None when absent."""
    for entry in container.get("env") or ():
        if entry.get("name") == name:
            return str(entry.get("value") or "")
    return None


def _container(pod_spec: Mapping[str, Any], slot: Slot) -> Mapping[str, Any]:
    containers: Sequence[Mapping[str, Any]] = pod_spec.get(slot[0]) or ()
    return containers[slot[1]]


@dataclass(frozen=True)
class PodPlace:
    """Where a pod sits in its group: what upstream's webhook reads from the pod (section 3.5)."""

    leader_name: str
    subdomain: str
    size: int
    worker_index: int
    leader_counts: bool
    """The leader requests TPUs (workers: the `leader-requests-tpus` annotation; the leader: always)."""
    subgroup_size: int | None = None
    subgroup_index: int | None = None
    """The pod's `subgroup-index` label (with subgroups; used when the leader counts)."""


def pod_entries(pod_spec: Mapping[str, Any], place: PodPlace) -> dict[Slot, list[Obj]]:
    """The TPU env entries upstream appends to each TPU container of one pod (empty: none at all).

    Entries the user already defines (`TPU_NAME`, `TPU_PROCESS_ADDRESSES`, `TPU_PROCESS_PORT`) are left out,
    since the user's entry is the one the container sees.
    """
    slots = tpu_slots(pod_spec)
    if not slots:
        return {}
    first = _container(pod_spec, slots[0])
    if _env_value(first, HOSTNAMES) is not None or _env_value(first, WORKER_ID) is not None:
        return {}
    if place.subgroup_size is not None:
        return _subgroup_entries(pod_spec, slots[0], place, place.subgroup_size)
    ports = [_env_value(_container(pod_spec, s), PORT) or str(DEFAULT_PORT + k) for k, s in enumerate(slots)]
    hosts: list[str] = []
    if place.worker_index == 0 or place.leader_counts:
        hosts.append(f"{place.leader_name}.{place.subdomain}")
    hosts += [f"{place.leader_name}-{i}.{place.subdomain}" for i in range(1, place.size)]
    per_container = [h for h in hosts for _ in slots]
    addresses = [f"{h}:{ports[j % len(slots)]}" for j, h in enumerate(per_container)]
    pod_index = place.worker_index if place.worker_index == 0 or place.leader_counts else place.worker_index - 1
    return {slot: _entries(_container(pod_spec, slot), per_container, pod_index * len(slots) + k,
                           place.leader_name, addresses, ports[k])
            for k, slot in enumerate(slots)}


def _subgroup_entries(pod_spec: Mapping[str, Any], slot: Slot, place: PodPlace, g: int) -> dict[Slot, list[Obj]]:
    """tpu.go:99-198 (main): the first TPU container only, one entry per host of the pod's subgroup."""
    w = place.worker_index
    port = _env_value(_container(pod_spec, slot), PORT) or str(DEFAULT_PORT)
    if w == 0 or place.leader_counts:
        worker_id = w % g
        s = place.subgroup_index or 0
        first = s * g if s else 1
        last = s * g + g - 1
    else:
        worker_id = (w - 1) % g
        s = (w - 1) // g
        first, last = s * g + 1, s * g + g
    hosts = [f"{place.leader_name}.{place.subdomain}"] if (w == 0 or place.leader_counts) and s == 0 else []
    hosts += [f"{place.leader_name}-{i}.{place.subdomain}" for i in range(first, last + 1)]
    addresses = [f"{h}:{port}" for h in hosts]
    return {slot: _entries(_container(pod_spec, slot), hosts, worker_id, place.leader_name, addresses, port)}


def _entries(container: Mapping[str, Any], hosts: Sequence[str], worker_id: int, name: str,
             addresses: Sequence[str], port: str) -> list[Obj]:
    out: list[Obj] = [{"name": HOSTNAMES, "value": ",".join(hosts)}, {"name": WORKER_ID, "value": str(worker_id)},
                      {"name": NAME, "value": name}, {"name": ADDRESSES, "value": ",".join(addresses)},
                      {"name": PORT, "value": port}]
    return [e for e in out if _env_value(container, e["name"]) is None]


def _append(pod_spec: Mapping[str, Any], entries: Mapping[Slot, list[Obj]]) -> Obj:
    out = copy.deepcopy(dict(pod_spec))
    for (field, index), extra in entries.items():
        container = out[field][index]
        container["env"] = [*(container.get("env") or []), *copy.deepcopy(extra)]
    return out


def leader_spec(pod_spec: Mapping[str, Any], *, size: int, subgroup_size: int | None, lws_name: str,
                unique_subdomain: bool, leader_excluded: bool) -> Obj:
    """The shared leader template's pod spec with the TPU entries (module docstring), when it requests TPUs.

    Per TPU container: `TPU_WORKER_HOSTNAMES` from `metadata.name`; `TPU_PROCESS_ADDRESSES` built from it
    (still the pod's name there); `TPU_WORKER_HOSTNAMES` redefined as the host list built from it; the id;
    `TPU_NAME` from `metadata.name`; the port. A `LeaderExcluded` leader gets none: it has no
    `subgroup-index`, and upstream's webhook refuses such a pod (tpu.go:118-121), which the reference does not
    imitate.
    """
    if subgroup_size is not None and leader_excluded:
        return copy.deepcopy(dict(pod_spec))
    self_ref = f"$({HOSTNAMES})"
    subdomain = self_ref if unique_subdomain else lws_name
    place = PodPlace(self_ref, subdomain, size, 0, True, subgroup_size, 0 if subgroup_size is not None else None)
    out: dict[Slot, list[Obj]] = {}
    for slot, extra in pod_entries(pod_spec, place).items():
        by_name = {e["name"]: e for e in extra}
        fixed: list[Obj] = [_field_ref(HOSTNAMES, "metadata.name")]
        if ADDRESSES in by_name:
            fixed.append(by_name[ADDRESSES])
        fixed.append(by_name[HOSTNAMES])
        fixed.append(by_name[WORKER_ID])
        if NAME in by_name:
            fixed.append(_field_ref(NAME, "metadata.name"))
        if PORT in by_name:
            fixed.append(by_name[PORT])
        out[slot] = fixed
    return _append(pod_spec, out)


def _field_ref(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def worker_spec(pod_spec: Mapping[str, Any], *, leader_name: str, subdomain: str, size: int,
                leader_counts: bool, subgroup_size: int | None, subgroup_type: str | None) -> tuple[Obj, str | None]:
    """One group's worker pod spec with the TPU entries of worker 1, and the per-ordinal table (or None).

    Returns (pod_spec, table): table is the `TABLE_ANNOTATION` value, None when the workers get no TPU entries.
    """
    if size < 2:
        return copy.deepcopy(dict(pod_spec)), None
    rows: list[str] = []
    first: dict[Slot, list[Obj]] = {}
    for w in range(1, size):
        sgi = (labels.subgroup_index(size, subgroup_size, w, subgroup_type)
               if subgroup_size is not None else None)
        entries = pod_entries(pod_spec, PodPlace(leader_name, subdomain, size, w, leader_counts, subgroup_size, sgi))
        if not entries:
            return copy.deepcopy(dict(pod_spec)), None
        if w == 1:
            first = entries
        ops = []
        for slot, extra in entries.items():
            base = len(_container(pod_spec, slot).get("env") or ())
            for offset, entry in enumerate(extra):
                if entry != first[slot][offset]:  # the template has worker 1's values
                    ops.append(f"/spec/{slot[0]}/{slot[1]}/env/{base + offset}/value={entry['value']}")
        rows.append(";".join(ops))
    return _append(pod_spec, first), "|".join(rows)
