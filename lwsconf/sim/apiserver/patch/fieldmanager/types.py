"""What the schema says about each field, as structured-merge-diff reads it, and the empty object of a kind.

structured-merge-diff (sigs.k8s.io/structured-merge-diff `schema`) knows three shapes: scalars; maps, which
are granular (each key a field of its own: structs and `map[string]T`) unless marked atomic
(`+structType=atomic`, `+mapType=atomic`, `x-kubernetes-map-type: atomic`); and lists, which are
associative (`+listType=map` with `+listMapKey`s: an element is `k:{"name":"a"}`), sets of scalars
(`+listType=set`: `v:"a"`) or atomic (replaced and owned as a whole, the default for a list without
markers). For built-in kinds the struct tags `merge_patches.STRUCTS` already holds give the keyed lists and
sets (kube-openapi turns `patchMergeKey` into `x-kubernetes-list-map-keys` when a type has no list marker);
`_OVERLAY` adds what those tags cannot say: lists keyed by more than one field (container ports by
containerPort and protocol, as `x-kubernetes-list-map-keys` in k8s.io/api core/v1), key defaults (protocol
"TCP", which structured-merge-diff takes from the schema when an element omits it) and atomic structs and
maps (LabelSelector, OwnerReference, LocalObjectReference, ObjectReference, Service and node selectors, the
env var sources). Custom resources read their CRD's structural schema (`x-kubernetes-list-type`,
`x-kubernetes-list-map-keys`, `x-kubernetes-map-type`); their `metadata` is ObjectMeta, as in
apiextensions-apiserver. A field nothing describes is deduced from its value: maps granular, lists atomic
(structured-merge-diff's `deduced` type).

`empty_object` is what `scope.Creater.New(kind)` decodes to in unstructured form: a create is compared with
it, so a struct Go always serialises (`spec`, `spec.template`, `spec.strategy`) is not reported as added
(no "." member in FieldsV1) while a map or list the create brings (`metadata.labels`, `spec.volumes`) is. No
I/O here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.apiserver.patch import merge_patches

Path = tuple[str, ...]
"""A field path in FieldsV1 elements, e.g. ("f:spec", "f:containers", 'k:{"name":"a"}', "f:image")."""


@dataclass(frozen=True)
class _Facts:
    """Facts about one field of a built-in struct that `merge_patches.STRUCTS` does not hold."""

    struct: str | None = None
    keys: tuple[str, ...] = ()
    atomic: bool = False
    item_atomic: bool = False
    as_set: bool = False


_ATOMIC = _Facts(atomic=True)
_OVERLAY: dict[tuple[str, str], _Facts] = {
    # core/v1 Container.ports: +listType=map +listMapKey=containerPort +listMapKey=protocol
    ("Container", "ports"): _Facts(keys=("containerPort", "protocol")),
    ("Container", "env"): _Facts(struct="EnvVar", keys=("name",)),
    ("EnvVar", "valueFrom"): _Facts(struct="EnvVarSource"),
    ("EnvVarSource", "fieldRef"): _ATOMIC, ("EnvVarSource", "resourceFieldRef"): _ATOMIC,
    ("EnvVarSource", "configMapKeyRef"): _ATOMIC, ("EnvVarSource", "secretKeyRef"): _ATOMIC,
    # core/v1 ServiceSpec.ports: +listType=map +listMapKey=port +listMapKey=protocol; selector +mapType=atomic
    ("ServiceSpec", "ports"): _Facts(keys=("port", "protocol")),
    ("ServiceSpec", "selector"): _ATOMIC,
    ("PodSpec", "nodeSelector"): _ATOMIC,
    ("PodSpec", "imagePullSecrets"): _Facts(keys=("name",), item_atomic=True),  # LocalObjectReference is atomic
    ("PodSpec", "topologySpreadConstraints"): _Facts(keys=("topologyKey", "whenUnsatisfiable")),
    # metav1 LabelSelector and OwnerReference are +structType=atomic
    ("WorkloadSpec", "selector"): _ATOMIC,
    ("ObjectMeta", "ownerReferences"): _Facts(keys=("uid",), item_atomic=True),
    ("Event", "involvedObject"): _ATOMIC,  # core/v1 ObjectReference is +structType=atomic
    ("Event", "regarding"): _ATOMIC, ("Event", "related"): _ATOMIC,  # events.k8s.io/v1, the same type
    # admissionregistration/v1: webhooks +listType=map by name; LabelSelector, MatchResources, ParamKind and
    # ParamRef are +structType=atomic; matchConditions +listType=map by name; validationActions +listType=set
    ("MutatingWebhookConfiguration", "webhooks"): _Facts(struct="Webhook", keys=("name",)),
    ("ValidatingWebhookConfiguration", "webhooks"): _Facts(struct="Webhook", keys=("name",)),
    ("Webhook", "namespaceSelector"): _ATOMIC, ("Webhook", "objectSelector"): _ATOMIC,
    ("Webhook", "matchConditions"): _Facts(keys=("name",)),
    ("AdmissionPolicy", "spec"): _Facts(struct="AdmissionPolicySpec"),
    ("AdmissionPolicySpec", "matchConstraints"): _ATOMIC, ("AdmissionPolicySpec", "paramKind"): _ATOMIC,
    ("AdmissionPolicySpec", "matchConditions"): _Facts(keys=("name",)),
    ("AdmissionPolicyBinding", "spec"): _Facts(struct="AdmissionPolicyBindingSpec"),
    ("AdmissionPolicyBindingSpec", "matchResources"): _ATOMIC, ("AdmissionPolicyBindingSpec", "paramRef"): _ATOMIC,
    ("AdmissionPolicyBindingSpec", "validationActions"): _Facts(as_set=True),
    # batch/v1 JobStatus.conditions: +listType=atomic, though its patch strategy merges by type (kube-apiserver
    # 1.37.2 records `f:conditions: {}`: lwsconf fidelity batch/ctl-job/job-complete)
    ("Job", "status"): _Facts(struct="JobStatus"), ("JobStatus", "conditions"): _ATOMIC,
    # apiextensions/v1 CustomResourceDefinitionStatus.conditions: +listType=map +listMapKey=type
    ("CRD", "status"): _Facts(struct="Conditions"),
    # policy/v1 PodDisruptionBudget: spec.selector is a metav1 LabelSelector (+structType=atomic); status.conditions
    # +listType=map +listMapKey=type
    ("PDB", "spec"): _Facts(struct="PDBSpec"), ("PDBSpec", "selector"): _ATOMIC,
    ("PDB", "status"): _Facts(struct="Conditions"),
    # apps/v1 ControllerRevision.data is a runtime.RawExtension, which structured-merge-diff keeps whole
    # (kube-apiserver 1.37.2 records `f:data: {}`: the held-out corpus, the reference's revisions)
    ("ControllerRevision", "data"): _ATOMIC,
}
_ROOTS = {"ValidatingAdmissionPolicy": "AdmissionPolicy", "MutatingAdmissionPolicy": "AdmissionPolicy",
          "ValidatingAdmissionPolicyBinding": "AdmissionPolicyBinding",
          "MutatingAdmissionPolicyBinding": "AdmissionPolicyBinding", "CustomResourceDefinition": "CRD",
          "Event": "Event", "PodDisruptionBudget": "PDB", "ControllerRevision": "ControllerRevision"}
"""Kinds whose facts live only in `_OVERLAY`, under a struct name of their own."""
_KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}
"""Key fields with a schema default (core/v1 `protocol` of container and Service ports)."""


@dataclass(frozen=True)
class FieldType:
    """The type of one field (or of the root object), enough to compare and to list owned fields.

    A built-in field names its `struct` (the `merge_patches.STRUCTS` key of its value, of each element for
    a list); a custom resource's field carries its structural `schema` node; neither means deduced.
    """

    struct: str | None = None
    schema: Mapping[str, Any] | None = None
    atomic: bool = False
    keys: tuple[str, ...] = ()
    as_set: bool = False
    item_atomic: bool = False
    key_defaults: Mapping[str, Any] = field(default_factory=dict)
    root: bool = False

    def child(self, name: str) -> FieldType:
        """The type of field `name` of this map or struct."""
        if self.root and name == "metadata":
            return FieldType(struct="ObjectMeta")
        if self.schema is not None:
            return _schema_child(self.schema, name)
        key = (self.struct, name)
        known = _BUILTIN_CHILDREN.get(key)
        if known is None:
            known = _BUILTIN_CHILDREN[key] = self._builtin_child(name)
        return known

    def _builtin_child(self, name: str) -> FieldType:
        overlay = _OVERLAY.get((self.struct or "", name))
        facts = merge_patches.field_of(self.struct, name)
        if overlay is None:
            return FieldType(struct=facts.struct, keys=(facts.key,) if facts.key else (), as_set=facts.as_set,
                             key_defaults=_KEY_DEFAULTS)
        return FieldType(struct=overlay.struct or facts.struct, atomic=overlay.atomic,
                         keys=overlay.keys or ((facts.key,) if facts.key else ()),
                         as_set=overlay.as_set or facts.as_set,
                         item_atomic=overlay.item_atomic, key_defaults=_KEY_DEFAULTS)

    def item(self) -> FieldType:
        """The type of an element of this list."""
        if self.schema is not None:
            items = self.schema.get("items")
            return _from_schema(items) if isinstance(items, Mapping) else FieldType()
        return FieldType(struct=self.struct, atomic=self.item_atomic)

    @property
    def granular_list(self) -> bool:
        """An associative list or a set: its elements are fields of their own."""
        return bool(self.keys) or self.as_set


_BUILTIN_CHILDREN: dict[tuple[str | None, str], FieldType] = {}
"""Built-in field types by (struct, field name): the facts are static, so each is worked out once."""


def of_kind(kind: str, *, custom_schema: Mapping[str, Any] | None = None, builtin: bool = True) -> FieldType:
    """The root type of an object of `kind` (a custom resource: its CRD version's schema, if any)."""
    if not builtin:
        return FieldType(schema=custom_schema or {}, root=True)
    return FieldType(struct=_ROOTS.get(kind) or merge_patches.root_struct(kind), root=True)


def _schema_child(schema: Mapping[str, Any], name: str) -> FieldType:
    props = schema.get("properties")
    if isinstance(props, Mapping) and isinstance(props.get(name), Mapping):
        return _from_schema(props[name])
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return _from_schema(extra)
    return FieldType(schema={})


def _from_schema(node: Mapping[str, Any]) -> FieldType:
    if node.get("type") == "array" or "items" in node:
        list_type = node.get("x-kubernetes-list-type", "atomic")
        keys = tuple(str(k) for k in node.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else ()
        items = node.get("items")
        props = items.get("properties") if isinstance(items, Mapping) else None
        defaults = {k: props[k]["default"] for k in keys
                    if isinstance(props, Mapping) and isinstance(props.get(k), Mapping) and "default" in props[k]}
        return FieldType(schema=node, atomic=list_type == "atomic", keys=keys, as_set=list_type == "set",
                         key_defaults=defaults)
    return FieldType(schema=node, atomic=node.get("x-kubernetes-map-type") == "atomic")


# --- what an endpoint may own -------------------------------------------------------------------------

def endpoint_owns(path: Path, subresource: str | None, status_reset: bool,
                  status_keeps: tuple[str, ...] | None = None) -> bool:
    """Whether a write through this endpoint can own `path`: the strategies' reset fields (`GetResetFields`)
    are the field manager's ignored fields, everything but `status` through `/status` (for the built-in kinds of
    `status_keeps`, everything but `spec` and the metadata fields named there), `status` through the main
    resource of a kind with a status subresource."""
    in_status = bool(path) and path[0] == "f:status"
    if subresource == "status" and status_keeps is not None:
        return in_status or (path[0] == "f:metadata" and (len(path) < 2 or path[1] not in
                                                           {f"f:{field}" for field in status_keeps}))
    if subresource == "status":
        return in_status
    return not (subresource is None and status_reset and in_status)


# --- fields set after the field manager ran -----------------------------------------------------------

SET_AFTER_DECODING: dict[str, tuple[Path, ...]] = {
    # Admission plugins (Priority, ServiceAccount, DefaultTolerationSeconds) fill these in after the handler's
    # field manager ran, so kube-apiserver records them only when the client sent them; the sim's defaulting
    # sets them earlier. Same for the Service REST storage's IP families and cluster IPs and the namespace
    # strategy's `kubernetes` finalizer (PrepareForCreate). "*" stands for every element of a list.
    "Pod": (("spec", "preemptionPolicy"), ("spec", "priority"), ("spec", "serviceAccount"),
            ("spec", "serviceAccountName"), ("spec", "tolerations"), ("spec", "volumes"),
            ("spec", "containers", "*", "volumeMounts"), ("spec", "initContainers", "*", "volumeMounts")),
    "Service": (("spec", "ipFamilies"), ("spec", "ipFamilyPolicy"), ("spec", "clusterIP"), ("spec", "clusterIPs")),
    "Namespace": (("spec", "finalizers"),),
    # events.k8s.io/v1: the Go zero values the sim writes out while defaulting (`defaults._events_v1_event`),
    # which kube-apiserver's field manager never sees as set (kube-scheduler's events own none of them)
    "Event": (("deprecatedSource",), ("deprecatedFirstTimestamp",), ("deprecatedLastTimestamp",)),
}
"""Per kind, JSON paths the sim sets while defaulting that kube-apiserver sets after its field manager."""


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
"""apps/v1 shows the internal DaemonSetSpec.TemplateGeneration as this annotation (pkg/apis/apps/v1/conversion.go,
unconditionally), so the field manager, which compares apps/v1 objects converted from the decoded internal one,
always sees it: the client's value, "0" when it sent none (the strategy sets the real one later)."""


def as_decoded(kind: str, obj: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """`obj` (defaulted by the sim) as kube-apiserver's field manager sees it: the `SET_AFTER_DECODING`
    fields the client did not send (`sent`, the object before defaulting) left out, and a DaemonSet's
    template generation annotation as conversion shows it."""
    late = SET_AFTER_DECODING.get(kind)
    if not late and kind != "DaemonSet":
        return obj
    out = copy.deepcopy(obj)
    for path in late or ():
        _drop_unsent(out, sent, path)
    if kind == "DaemonSet" and isinstance(out.get("metadata"), dict):
        annotations = out["metadata"].get("annotations")
        annotations = dict(annotations) if isinstance(annotations, dict) else {}
        annotations.setdefault(TEMPLATE_GENERATION, "0")
        out["metadata"]["annotations"] = annotations
    return out


def _drop_unsent(obj: Any, sent: Any, path: Path) -> None:
    if not path or not isinstance(obj, (dict, list)):
        return
    head, rest = path[0], path[1:]
    if head == "*":
        if isinstance(obj, list):
            sent_items = sent if isinstance(sent, list) else []
            for i, item in enumerate(obj):
                _drop_unsent(item, sent_items[i] if i < len(sent_items) else None, rest)
        return
    if not isinstance(obj, dict) or head not in obj:
        return
    sent_value = sent.get(head) if isinstance(sent, dict) else None
    if not rest:
        if sent_value is None:
            del obj[head]
        return
    _drop_unsent(obj[head], sent_value, rest)


# --- the empty object of a kind ---------------------------------------------------------------------

_META: dict[str, Any] = {"creationTimestamp": None}
_TEMPLATE: dict[str, Any] = {"metadata": _META, "spec": {"containers": None}}
_WORKLOAD: dict[str, Any] = {"selector": None, "template": _TEMPLATE}

_EMPTY: dict[str, dict[str, Any]] = {
    # Go structs serialised without omitempty (or structs, which omitempty never drops) and nil slices
    # without omitempty (null): k8s.io/api core/v1, apps/v1, batch/v1, apiextensions/v1 types.go.
    "Pod": {"spec": {"containers": None}, "status": {}},
    "PodTemplate": {"template": _TEMPLATE},
    "Deployment": {"spec": {**_WORKLOAD, "strategy": {}}, "status": {}},
    "StatefulSet": {"spec": {**_WORKLOAD, "updateStrategy": {}}, "status": {"replicas": 0, "availableReplicas": 0}},
    "DaemonSet": {"spec": {**_WORKLOAD, "updateStrategy": {}},
                  "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                             "numberReady": 0}},
    "ReplicaSet": {"spec": {"selector": None, "template": _TEMPLATE}, "status": {"replicas": 0}},
    "ReplicationController": {"spec": {"template": None}, "status": {"replicas": 0}},
    "Job": {"spec": {"template": _TEMPLATE}, "status": {}},
    "CronJob": {"spec": {"schedule": "", "jobTemplate": {"metadata": _META, "spec": {"template": _TEMPLATE}}},
                "status": {}},
    "Service": {"spec": {}, "status": {"loadBalancer": {}}},
    "Namespace": {"spec": {}, "status": {}},
    "Node": {"spec": {}, "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": {}}},
    "PersistentVolumeClaim": {"spec": {"resources": {}}, "status": {}},
    "Event": {"involvedObject": {}, "source": {}, "firstTimestamp": None, "lastTimestamp": None,
              "eventTime": None, "reportingComponent": "", "reportingInstance": ""},
    "Lease": {"spec": {}},
    "SelfSubjectAccessReview": {"spec": {}},
    "PodDisruptionBudget": {"spec": {}, "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                                 "expectedPods": 0}},
    "ValidatingAdmissionPolicy": {"spec": {}, "status": {}},
    "ValidatingAdmissionPolicyBinding": {"spec": {}},
    "MutatingAdmissionPolicy": {"spec": {}},
    "MutatingAdmissionPolicyBinding": {"spec": {}},
    "CustomResourceDefinition": {
        "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": None},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None}},
}


def empty_object(kind: str, *, builtin: bool) -> dict[str, Any]:
    """The object a create is compared with: Go's zero value of `kind` as JSON (nothing for a custom
    resource, whose empty object is unstructured)."""
    if not builtin:
        return {}
    return {"metadata": dict(_META), **copy.deepcopy(_EMPTY.get(kind, {}))}
