"""A read-only, defaulted view of one LeaderWorkerSet object as the API serves it (a plain dict).

The CRD already defaults most fields (docs/lws-contract.md §1.3; `manifests/crd/leaderworkersets.yaml`),
but the reconciler must not depend on that: the same defaults are applied here, so an object written
before the CRD was installed, or served by another cluster's CRD, reads the same. `Default` is read as
`None` (the CRD stores it as sent). Raises `ValueError` with the field path for input no defaulting can
repair. No I/O here; templates are returned as they are stored (callers deep-copy before editing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lwsconf import lwsapi
from lwsconf.reconciler import labels

Obj = dict[str, Any]
IntOrStr = int | str

API_VERSION = lwsapi.API_VERSION
KIND = lwsapi.KIND

RECREATE_ON_RESTART = "RecreateGroupOnPodRestart"
RECREATE_AFTER_START = "RecreateGroupAfterStart"
RESTART_NONE = "None"
LEADER_CREATED = "LeaderCreated"
LEADER_READY = "LeaderReady"


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _int(value: Any, default: int, path: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"LeaderWorkerSet {path} must be an integer, got {value!r}")
    return value


def _int_or_str(value: Any, default: int, path: str) -> IntOrStr:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"LeaderWorkerSet {path} must be an integer or a percentage string, got {value!r}")
    return value


@dataclass(frozen=True)
class LwsSpec:
    """The fields the reconciler reads, with defaults applied. Build with `LwsSpec.of(obj)`."""

    name: str
    namespace: str
    uid: str
    generation: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    replicas: int
    size: int
    restart_policy: str
    startup_policy: str
    partition: int
    max_unavailable: IntOrStr
    max_surge: IntOrStr
    subdomain_policy: str
    subgroup_size: int | None
    subgroup_type: str | None
    leader_template: Mapping[str, Any] | None
    worker_template: Mapping[str, Any]
    volume_claim_templates: tuple[Mapping[str, Any], ...]
    pvc_retention_policy: Mapping[str, Any] | None

    @staticmethod
    def of(obj: Mapping[str, Any]) -> LwsSpec:
        """Read a LeaderWorkerSet dict; raises ValueError naming the field when it cannot be read."""
        meta = _dict(obj.get("metadata"))
        spec = _dict(obj.get("spec"))
        lwt = spec.get("leaderWorkerTemplate")
        if not isinstance(lwt, dict) or not isinstance(lwt.get("workerTemplate"), dict):
            raise ValueError(f"LeaderWorkerSet {meta.get('namespace')}/{meta.get('name')}: "
                             "spec.leaderWorkerTemplate.workerTemplate is required")
        rollout = _dict(_dict(spec.get("rolloutStrategy")).get("rollingUpdateConfiguration"))
        subgroup_size, subgroup_type = _subgroup(lwt)
        leader = lwt.get("leaderTemplate")
        retention = lwt.get("persistentVolumeClaimRetentionPolicy")
        return LwsSpec(
            name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")), generation=_int(meta.get("generation"), 0, "metadata.generation"),
            labels=dict(_dict(meta.get("labels"))), annotations=dict(_dict(meta.get("annotations"))),
            replicas=_int(spec.get("replicas"), 1, "spec.replicas"),
            size=_int(lwt.get("size"), 1, "spec.leaderWorkerTemplate.size"),
            restart_policy=_restart_policy(lwt.get("restartPolicy")),
            startup_policy=str(spec.get("startupPolicy") or LEADER_CREATED),
            partition=_int(rollout.get("partition"), 0, "spec.rolloutStrategy.rollingUpdateConfiguration.partition"),
            max_unavailable=_int_or_str(rollout.get("maxUnavailable"), 1,
                                        "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable"),
            max_surge=_int_or_str(rollout.get("maxSurge"), 0,
                                  "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge"),
            subdomain_policy=str(_dict(spec.get("networkConfig")).get("subdomainPolicy")
                                 or labels.SUBDOMAIN_SHARED),
            subgroup_size=subgroup_size, subgroup_type=subgroup_type,
            leader_template=leader if isinstance(leader, dict) else None,
            worker_template=lwt["workerTemplate"],
            volume_claim_templates=tuple(t for t in lwt.get("volumeClaimTemplates") or () if isinstance(t, dict)),
            pvc_retention_policy=retention if isinstance(retention, dict) else None,
        )

    @property
    def exclusive_topology(self) -> str | None:
        """The group topology key (annotation `exclusive-topology`); an empty value counts as absent."""
        return self.annotations.get(labels.EXCLUSIVE_TOPOLOGY) or None

    @property
    def subgroup_exclusive_topology(self) -> str | None:
        """The subgroup topology key; ignored (None) without a subGroupPolicy, since there are no subgroups."""
        if self.subgroup_size is None:
            return None
        return self.annotations.get(labels.SUBGROUP_EXCLUSIVE_TOPOLOGY) or None

    @property
    def unique_subdomains(self) -> bool:
        return self.subdomain_policy == labels.SUBDOMAIN_UNIQUE_PER_REPLICA

    @property
    def recreates_groups(self) -> bool:
        """Whether restarts recreate the group (RecreateGroupOnPodRestart or RecreateGroupAfterStart)."""
        return self.restart_policy in (RECREATE_ON_RESTART, RECREATE_AFTER_START)

    @property
    def waits_for_group_start(self) -> bool:
        """RecreateGroupAfterStart, or RecreateGroupOnPodRestart with the experimental annotation (presence only)."""
        return self.restart_policy == RECREATE_AFTER_START or (
            self.restart_policy == RECREATE_ON_RESTART and labels.RECREATE_GROUP_AFTER_START in self.annotations)

    @property
    def leader_pod_template(self) -> Mapping[str, Any]:
        """The leader's template: `leaderTemplate`, or `workerTemplate` when it is omitted (section 4.11)."""
        return self.leader_template if self.leader_template is not None else self.worker_template


def _restart_policy(value: Any) -> str:
    if not value:
        return RECREATE_ON_RESTART
    return RESTART_NONE if value == "Default" else str(value)


def _subgroup(lwt: Obj) -> tuple[int | None, str | None]:
    policy = lwt.get("subGroupPolicy")
    if not isinstance(policy, dict):
        return None, None
    size = policy.get("subGroupSize")
    path = "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
    if size is None:
        raise ValueError(f"LeaderWorkerSet {path} is required when subGroupPolicy is set")
    size = _int(size, 0, path)
    if size < 1:
        raise ValueError(f"LeaderWorkerSet {path} must be >= 1, got {size}")
    return size, str(policy.get("subGroupPolicyType") or labels.SUBGROUP_LEADER_WORKER)


def owner_reference(obj: Mapping[str, Any], *, api_version: str, kind: str) -> Obj:
    """A controller ownerReference to `obj` (controller and blockOwnerDeletion true)."""
    meta = _dict(obj.get("metadata"))
    return {"apiVersion": api_version, "kind": kind, "name": meta.get("name", ""), "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}
