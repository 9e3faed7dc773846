"""core/v1 validation for the non-Pod kinds: Service, ConfigMap, Secret, Namespace, Node, PVC.

Mirrors `pkg/apis/core/validation` for these kinds, including their update rules: a Service's
cluster IP may not change once set, `immutable` ConfigMaps/Secrets keep their data, a Secret's `type`
never changes, a Node's podCIDRs/providerID are set once, and a PVC's spec is immutable except
`resources.requests` (bound claims), `volumeAttributesClassName` and a first `volumeName`.
No I/O here.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, meta, names, quantity
from lwsconf.sim.apiserver.apimachinery import fields as f

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_SECRET_SIZE = 1024 * 1024
"""`MaxSecretSize`: the data limit of one ConfigMap or Secret, in bytes."""

SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}
PVC_IMMUTABLE_MESSAGE = ("spec is immutable after creation except resources.requests and volumeAttributesClassName "
                         "for bound claims")


# --- Service --------------------------------------------------------------------------------------

def validate_service(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    spec = f.as_dict(obj.get("spec"))
    kind = spec.get("type") or "ClusterIP"
    causes = f.enum("spec.type", spec.get("type"), SERVICE_TYPES, optional=True)
    causes += f.enum("spec.sessionAffinity", spec.get("sessionAffinity"), ("ClientIP", "None"), optional=True)
    if kind == "ExternalName" and not f.as_str(spec.get("externalName")):
        causes.append(f.required("spec.externalName"))
    if not f.as_list(spec.get("ports")) and spec.get("clusterIP") != "None" and kind != "ExternalName":
        causes.append(f.required("spec.ports"))
    causes += _service_ports(f.as_list(spec.get("ports")), kind)
    causes += meta.validate_labels(spec.get("selector"), "spec.selector")
    if old is not None:
        causes += _cluster_ip_update(spec, f.as_dict(old.get("spec")))
    return causes


def _service_ports(ports: list[Any], kind: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    names_seen: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    for i, port in f.dicts(ports):
        at = f.index("spec.ports", i)
        causes += _service_port_name(port.get("name"), f.child(at, "name"), names_seen, required=len(ports) > 1)
        number = port.get("port", 0)
        causes += f.invalid_each(f.child(at, "port"), number, names.port_number(number) if f.is_int(number)
                                 else ["must be an integer"])
        causes += f.enum(f.child(at, "protocol"), port.get("protocol"), PORT_PROTOCOLS, optional=True)
        causes += _target_port(port.get("targetPort"), f.child(at, "targetPort"))
        if port.get("nodePort") and kind == "ClusterIP":
            causes.append(f.forbidden(f.child(at, "nodePort"), "may not be used when `type` is 'ClusterIP'"))
        pair = (f.fmt_value(number), f.fmt_value(port.get("protocol") or "TCP"))
        if pair in pairs:
            causes.append(f.duplicate(at, {"port": number, "protocol": port.get("protocol") or "TCP"}))
        pairs.add(pair)
    return causes


def _service_port_name(name: Any, path: str, seen: set[str], *, required: bool) -> list[errors.Cause]:
    if name in (None, ""):
        return [f.required(path)] if required else []
    if not isinstance(name, str):
        return [f.invalid(path, name, "must be a string")]
    causes = f.invalid_each(path, name, names.dns1123_label(name))
    if name in seen:
        causes.append(f.duplicate(path, name))
    seen.add(name)
    return causes


def _target_port(value: Any, path: str) -> list[errors.Cause]:
    if value is None:
        return []
    if isinstance(value, str):
        return f.invalid_each(path, value, names.port_name(value))
    if f.is_int(value):
        return f.invalid_each(path, value, names.port_number(value))
    return [f.invalid(path, value, "must be an integer or a port name")]


def _cluster_ips(spec: dict[str, Any]) -> list[Any]:
    ips = f.as_list(spec.get("clusterIPs"))
    return ips or ([spec["clusterIP"]] if spec.get("clusterIP") else [])


def _cluster_ip_update(new: dict[str, Any], old: dict[str, Any]) -> list[errors.Cause]:
    """`validateUpgradeDowngradeClusterIPs`: the primary cluster IP is fixed once allocated."""
    if "ExternalName" in (new.get("type"), old.get("type")):
        return []
    new_ips, old_ips = _cluster_ips(new), _cluster_ips(old)
    if not old_ips or (new_ips[:1] == ["None"] and old_ips[:1] == ["None"]):
        return []
    if not new_ips:
        return [f.invalid("spec.clusterIPs[0]", new_ips, "primary clusterIP can not be unset")]
    if new_ips[0] != old_ips[0]:
        return [f.invalid("spec.clusterIPs[0]", new_ips, "may not change once set")]
    return []


# --- ConfigMap and Secret -------------------------------------------------------------------------

def _data_keys(data: Any, path: str, other: Any, other_name: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    for k in f.as_dict(data):
        causes += f.invalid_each(f.key(path, k), k, names.config_map_key(k))
        if k in f.as_dict(other):
            causes.append(f.invalid(f.key(path, k), k, f"duplicate of key present in {other_name}"))
    return causes


def _immutable_data(obj: dict[str, Any], old: dict[str, Any] | None, fields: tuple[str, ...]) -> list[errors.Cause]:
    if old is None or old.get("immutable") is not True:
        return []
    msg = "field is immutable when `immutable` is set"
    causes = [] if obj.get("immutable") is True else [f.forbidden("immutable", msg)]
    return causes + [f.forbidden(field, msg) for field in fields if obj.get(field) != old.get(field)]


def _data_shapes(obj: dict[str, Any]) -> list[errors.Cause]:
    """data and binaryData are maps of strings (binaryData base64), immutable a boolean: a typed decoder
    refuses anything else before validation runs."""
    causes: list[errors.Cause] = []
    for name in ("data", "binaryData"):
        value = obj.get(name)
        if value is not None and not isinstance(value, dict):
            causes.append(f.invalid(name, value, "must be a map of string keys to string values"))
    for k, v in f.as_dict(obj.get("binaryData")).items():
        try:
            base64.b64decode(v if isinstance(v, str) else b"!", validate=True)
        except (ValueError, TypeError):
            causes.append(f.invalid(f.key("binaryData", k), v, "must be a base64-encoded string"))
    if obj.get("immutable") is not None and not isinstance(obj.get("immutable"), bool):
        causes.append(f.invalid("immutable", obj.get("immutable"), "must be a boolean"))
    return causes


def validate_configmap(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    causes = _data_shapes(obj)
    causes += _data_keys(obj.get("data"), "data", obj.get("binaryData"), "binaryData")
    causes += _data_keys(obj.get("binaryData"), "binaryData", obj.get("data"), "data")
    for k, v in f.as_dict(obj.get("data")).items():
        causes += f.string_field(f.key("data", k), v)
    size = sum(len(f.as_str(v).encode()) for v in f.as_dict(obj.get("data")).values())
    size += sum(len(f.as_str(v)) * 3 // 4 for v in f.as_dict(obj.get("binaryData")).values())
    if size > MAX_SECRET_SIZE:
        causes.append(f.too_long("", MAX_SECRET_SIZE))
    return causes + _immutable_data(obj, old, ("data", "binaryData"))


def _decode(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return None


def validate_secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """Keys, base64 values, the 1 MiB limit and each built-in type's required keys.

    A value that is not base64 makes the real server answer 400 at decoding; here it is a cause.
    """
    data = f.as_dict(obj.get("data"))
    causes = _data_keys(data, "data", None, "")
    size = 0
    for k, v in data.items():
        decoded = _decode(v)
        if decoded is None:
            causes.append(f.invalid(f.key("data", k), "<secret data>", "must be a base64-encoded string"))
        else:
            size += len(decoded)
    if size > MAX_SECRET_SIZE:
        causes.append(f.too_long("data", MAX_SECRET_SIZE))
    causes += _secret_type_keys(obj, data)
    if old is not None:
        causes += f.unchanged("type", obj.get("type"), old.get("type"))
    return causes + _immutable_data(obj, old, ("data",))


def _secret_type_keys(obj: dict[str, Any], data: dict[str, Any]) -> list[errors.Cause]:
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = f.as_dict(f.as_dict(obj.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            return [f.required("metadata.annotations[kubernetes.io/service-account.name]")]
    if kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        return [f.required("data[username]"), f.required("data[password]")]
    return [f.required(f.key("data", k)) for k in SECRET_REQUIRED_KEYS.get(f.as_str(kind), ()) if k not in data]


# --- Namespace and Node ---------------------------------------------------------------------------

def validate_namespace(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`spec.finalizers` are qualified names; unprefixed ones must be the standard `kubernetes`."""
    causes: list[errors.Cause] = []
    for item in f.as_list(f.as_dict(obj.get("spec")).get("finalizers")):
        value = f.as_str(item)
        causes += f.invalid_each("spec.finalizers", item, names.qualified_name(value))
        if "/" not in value and value != "kubernetes":
            causes.append(f.invalid("spec.finalizers", item,
                                    "name is neither a standard finalizer name nor is it fully qualified"))
    return causes


def validate_node(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    spec = f.as_dict(obj.get("spec"))
    causes: list[errors.Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in f.dicts(spec.get("taints")):
        at = f.index("spec.taints", i)
        causes += f.invalid_each(f.child(at, "key"), taint.get("key"), names.qualified_name(f.as_str(taint.get("key"))))
        value = taint.get("value")
        if value is not None:
            causes += f.invalid_each(f.child(at, "value"), value, names.label_value(f.as_str(value)))
        causes += f.enum(f.child(at, "effect"), taint.get("effect"), TAINT_EFFECTS)
        pair = (f.fmt_value(taint.get("key")), f.fmt_value(taint.get("effect")))
        if pair in seen:
            causes.append(errors.Cause(at, f"Duplicate value: {f.fmt_value(taint)}: taints must be unique by key "
                                           "and effect pair", f.DUPLICATE))
        seen.add(pair)
    if old is not None:
        causes += _set_once(spec, f.as_dict(old.get("spec")), "podCIDRs", "podCIDR")
        causes += _set_once(spec, f.as_dict(old.get("spec")), "providerID", "providerID")
    return causes


def _set_once(new: dict[str, Any], old: dict[str, Any], field: str, word: str) -> list[errors.Cause]:
    if not old.get(field) or new.get(field) == old.get(field):
        return []
    return [f.forbidden(f.child("spec", field), f'node updates may not change {word} except from "" to valid')]


# --- PersistentVolumeClaim ------------------------------------------------------------------------

def validate_pvc_spec(spec: Any, path: str) -> list[errors.Cause]:
    """`ValidatePersistentVolumeClaimSpec`: access modes, a positive storage request, the enums."""
    if not isinstance(spec, dict):
        return [f.required(path)]
    modes = f.as_list(spec.get("accessModes"))
    causes = [] if modes else [f.required(f.child(path, "accessModes"), "at least 1 access mode is required")]
    for mode in modes:
        causes += f.enum(f.child(path, "accessModes"), mode, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(f.forbidden(f.child(path, "accessModes"), "may not use ReadWriteOncePod with other access modes"))
    storage_path = f.key(f.child(path, "resources"), "storage")
    requests = f.as_dict(f.as_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        causes.append(f.required(storage_path))
    else:
        amount = quantity.parse(requests["storage"])
        if amount is None:
            causes.append(f.invalid(storage_path, requests["storage"], quantity.QUANTITY_ERROR))
        elif amount <= 0:
            causes.append(f.invalid(storage_path, requests["storage"], "must be greater than zero"))
    causes += f.enum(f.child(path, "volumeMode"), spec.get("volumeMode"), ("Block", "Filesystem"), optional=True)
    if spec.get("storageClassName"):
        cls = spec["storageClassName"]
        causes += f.invalid_each(f.child(path, "storageClassName"), cls, names.dns1123_subdomain(f.as_str(cls)))
    return causes


def validate_pvc(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    causes = validate_pvc_spec(obj.get("spec"), "spec")
    if old is None or causes:
        return causes
    new_spec, old_spec = copy.deepcopy(f.as_dict(obj.get("spec"))), f.as_dict(old.get("spec"))
    new_spec["volumeAttributesClassName"] = old_spec.get("volumeAttributesClassName")
    if not old_spec.get("volumeName"):
        new_spec["volumeName"] = old_spec.get("volumeName")
    if f.as_dict(old.get("status")).get("phase") == "Bound":
        f.as_dict(new_spec.get("resources"))["requests"] = f.as_dict(old_spec.get("resources")).get("requests")
    strip = {k: v for k, v in new_spec.items() if v is not None}
    if strip != {k: v for k, v in old_spec.items() if v is not None}:
        diff = json.dumps({"old": old_spec, "new": f.as_dict(obj.get("spec"))}, sort_keys=True)
        causes.append(f.forbidden("spec", f"{PVC_IMMUTABLE_MESSAGE}\n{diff}"))
    return causes
