"""What the server serves: one `ResourceInfo` per resource type, built-ins plus CRD-registered ones.

The `Registry` is the single answer to "is `/apis/G/V/namespaces/ns/R` a thing, and how does it
behave?": discovery documents, the OpenAPI documents, routing and admission all read it. CRDs add and
remove entries at run time. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ScaleSpec:
    """How `/scale` maps onto the object (CRD `subresources.scale`, or fixed for built-ins)."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


STATUS_KEEPS_METADATA: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "namespaces"): (), ("", "services"): (), ("", "nodes"): (), ("", "persistentvolumeclaims"): (),
    ("", "pods"): ("deletionTimestamp", "ownerReferences"),
    ("apps", "statefulsets"): (), ("apps", "replicasets"): (), ("apps", "daemonsets"): (),
    ("apps", "deployments"): ("labels",),
    ("batch", "jobs"): (), ("batch", "cronjobs"): (), ("policy", "poddisruptionbudgets"): (),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (),
}
"""Built-in kinds whose status strategy keeps the metadata a status write sends (kube-apiserver 1.37.2
pkg/registry/*/strategy.go: their `PrepareForUpdate` resets only the spec), with the metadata fields it resets as
well, which `GetResetFields` names too, so no status write owns them: a Deployment's labels, a Pod's
deletionTimestamp and ownerReferences. So kube-controller-manager's Deployment controller writes the revision
annotation through `UpdateStatus`, and the annotation is stored and owned by its status entry in managedFields
(found by the held-out fidelity corpus). The CRD's own status strategy calls `ResetObjectMetaForStatus` with the new
object on both sides, which resets nothing. Every other kind (ValidatingAdmissionPolicy's
`ResetObjectMetaForStatus`, custom resources) keeps only the status a status write sends."""


@dataclass(frozen=True)
class ResourceInfo:
    """One served resource type (`pods`, `statefulsets.apps`, `leaderworkersets.leaderworkerset.x-k8s.io`)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    categories: tuple[str, ...] = ()
    has_status: bool = False
    scale: ScaleSpec | None = None
    extra_subresources: tuple[str, ...] = ()
    """Subresources beyond status/scale (`log`, `binding`, `proxy`, `finalize`...)."""
    list_kind: str = ""
    crd_name: str | None = None
    """Set for resources registered by a CustomResourceDefinition."""
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    """openAPIV3Schema of a CRD version (None for built-ins)."""
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)
    tracks_generation: bool = False
    """Whether spec writes bump `metadata.generation` (true for kinds with a spec/status split)."""
    stored_as: tuple[str, str, str] | None = None
    """(group, version, plural) of the resource whose stored objects this one serves through a
    `conversion.Converter` (events.k8s.io/v1 events are core v1 events); None: stored as served."""

    @property
    def status_write_resets(self) -> tuple[str, ...] | None:
        """For a built-in kind whose status strategy keeps the metadata a status write sends, the metadata fields it
        resets (`STATUS_KEEPS_METADATA`); None where a status write keeps only the status."""
        return None if self.is_custom else STATUS_KEEPS_METADATA.get(self.key)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the resource type: (group, plural), which keys defaults, validation and hooks."""
        return (self.group, self.plural)

    @property
    def storage_key(self) -> tuple[str, str]:
        """The store table holding the objects: `key`, or that of the resource named by `stored_as`.

        One stored version per table; the versions of a CRD share their (group, plural) table.
        """
        return (self.stored_as[0], self.stored_as[2]) if self.stored_as is not None else self.key

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind_name(self) -> str:
        return self.list_kind or f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def is_custom(self) -> bool:
        return self.crd_name is not None

    @property
    def subresources(self) -> tuple[str, ...]:
        subs: list[str] = []
        if self.has_status:
            subs.append("status")
        if self.scale is not None:
            subs.append("scale")
        subs.extend(self.extra_subresources)
        return tuple(subs)


def _r(group: str, version: str, plural: str, kind: str, namespaced: bool = True, **kw: Any) -> ResourceInfo:
    return ResourceInfo(group=group, version=version, plural=plural, kind=kind, namespaced=namespaced, **kw)


_STS_SCALE = ScaleSpec(label_selector_path=".spec.selector")
"""Deployments', ReplicaSets' and StatefulSets' Scale: kube-apiserver renders status.selector from spec.selector."""
_EVENT_VERBS = ALL_VERBS

BUILTINS: tuple[ResourceInfo, ...] = (
    _r("", "v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",), has_status=True,
       extra_subresources=("finalize",)),
    _r("", "v1", "pods", "Pod", short_names=("po",), categories=("all",), has_status=True,
       extra_subresources=("log", "binding", "proxy", "eviction", "exec", "attach", "portforward"),
       tracks_generation=True),
    _r("", "v1", "services", "Service", short_names=("svc",), categories=("all",), has_status=True,
       extra_subresources=("proxy",)),
    _r("", "v1", "endpoints", "Endpoints", short_names=("ep",), list_kind="EndpointsList"),
    _r("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _r("", "v1", "secrets", "Secret"),
    _r("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
    _r("", "v1", "events", "Event", short_names=("ev",)),
    _r("", "v1", "nodes", "Node", namespaced=False, short_names=("no",), has_status=True,
       extra_subresources=("proxy",)),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",), has_status=True),
    _r("apps", "v1", "statefulsets", "StatefulSet", short_names=("sts",), categories=("all",),
       has_status=True, scale=_STS_SCALE, tracks_generation=True),
    _r("apps", "v1", "controllerrevisions", "ControllerRevision"),
    _r("apps", "v1", "deployments", "Deployment", short_names=("deploy",), categories=("all",),
       has_status=True, scale=_STS_SCALE, tracks_generation=True),
    # written by the sim's Deployment controller, run by its ReplicaSet controller (controllers/replicaset.py)
    _r("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=("all",),
       has_status=True, scale=_STS_SCALE, tracks_generation=True),
    _r("batch", "v1", "jobs", "Job", categories=("all",), has_status=True, tracks_generation=True),
    _r("batch", "v1", "cronjobs", "CronJob", short_names=("cj",), categories=("all",), has_status=True,
       tracks_generation=True),
    _r("apps", "v1", "daemonsets", "DaemonSet", short_names=("ds",), categories=("all",), has_status=True,
       tracks_generation=True),
    # generation 1 on create, +1 when endpoints, ports or addressType change
    # (pkg/registry/discovery/endpointslice/strategy.go; lwsconf fidelity controllers/ctl-endpointslices)
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", tracks_generation=True),
    _r("coordination.k8s.io", "v1", "leases", "Lease"),
    # PDBs: status written by the sim's disruption controller, read by pods/eviction (subresources._evict)
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",), has_status=True,
       tracks_generation=True),
    # create-only reviews, answered and never stored (pkg/registry/authorization/*/rest.go; `reviews`)
    _r("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False,
       verbs=("create",)),
    _r("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", namespaced=False,
       verbs=("create",)),
    _r("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False,
       verbs=("create",)),
    # what a kubelet with webhook authn/authz asks about its callers (`reviews`, lwsconf.sim.nodes.streams.kubeletauth)
    _r("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False, verbs=("create",)),
    _r("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False,
       verbs=("create",)),
    _r("events.k8s.io", "v1", "events", "Event", short_names=("ev",), stored_as=("", "v1", "events")),
    _r("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       namespaced=False, short_names=("crd", "crds"), has_status=True, tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
       namespaced=False, categories=("api-extensions",), has_status=True, tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
       "ValidatingAdmissionPolicyBinding", namespaced=False, categories=("api-extensions",), tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy",
       namespaced=False, categories=("api-extensions",), tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings",
       "MutatingAdmissionPolicyBinding", namespaced=False, categories=("api-extensions",), tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
       namespaced=False, categories=("api-extensions",), tracks_generation=True),
    _r("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
       namespaced=False, categories=("api-extensions",), tracks_generation=True),
)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Registry:
    """The live set of served resource types, indexed by (group, version, plural)."""

    def __init__(self, builtins: tuple[ResourceInfo, ...] = BUILTINS) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
        for info in builtins:
            self.add(info)

    def add(self, info: ResourceInfo) -> None:
        self._by_gvr[(info.group, info.version, info.plural)] = info

    def remove_crd(self, crd_name: str) -> list[ResourceInfo]:
        gone = [i for i in self._by_gvr.values() if i.crd_name == crd_name]
        for info in gone:
            del self._by_gvr[(info.group, info.version, info.plural)]
        return gone

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceInfo]:
        return list(self._by_gvr.values())

    def group_versions(self) -> dict[str, list[str]]:
        """Non-core groups and their served versions, in registration order."""
        out: dict[str, list[str]] = {}
        for info in self._by_gvr.values():
            if info.group:
                versions = out.setdefault(info.group, [])
                if info.version not in versions:
                    versions.append(info.version)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [i for i in self._by_gvr.values() if i.group == group and i.version == version]

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        for info in self._by_gvr.values():
            if info.api_version == api_version and info.kind == kind:
                return info
        return None
