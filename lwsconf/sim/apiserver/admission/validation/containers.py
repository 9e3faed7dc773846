"""Container validation inside a pod spec: names, images, ports, env, mounts, resources, probes.

Split out of `pods` to keep modules small. The rules and messages follow
`validateContainers`/`validateInitContainers` in kube-apiserver's core validation; env var names use
the relaxed rule that is GA since 1.34 (`RELAXED_ENV_NAMES`). No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, names, quantity
from lwsconf.sim.apiserver.apimachinery import fields as f

RELAXED_ENV_NAMES = True
"""RelaxedEnvironmentVariableValidation is GA (locked on) since Kubernetes 1.34, so a 1.37 apiserver
accepts any printable-ASCII name without '='. Set False for the classic `[-._a-zA-Z][-._a-zA-Z0-9]*`."""

PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")


def validate_all(spec: dict[str, Any], path: str, *, template: bool, volumes: frozenset[str]) -> list[errors.Cause]:
    """Containers and init containers of one pod spec, with names unique across both lists."""
    causes: list[errors.Cause] = []
    if not f.as_list(spec.get("containers")):
        causes.append(f.required(f.child(path, "containers")))
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, ctr in f.dicts(spec.get(field)):
            at = f.index(f.child(path, field), i)
            causes += _name(ctr.get("name"), f.child(at, "name"), seen)
            causes += validate_container(ctr, at, template=template, volumes=volumes, init=field == "initContainers")
    return causes


def _name(name: Any, path: str, seen: set[str]) -> list[errors.Cause]:
    if not isinstance(name, str) or not name:
        return [f.required(path)]
    causes = f.invalid_each(path, name, names.dns1123_label(name))
    if name in seen:
        causes.append(f.duplicate(path, name))
    seen.add(name)
    return causes


def validate_container(ctr: dict[str, Any], path: str, *, template: bool, volumes: frozenset[str],
                       init: bool) -> list[errors.Cause]:
    """One container, except its name (checked with the others for uniqueness)."""
    causes = f.string_field(f.child(path, "image"), ctr.get("image"), optional=template)
    causes += f.enum(f.child(path, "imagePullPolicy"), ctr.get("imagePullPolicy"), PULL_POLICIES, optional=True)
    causes += f.enum(f.child(path, "terminationMessagePolicy"), ctr.get("terminationMessagePolicy"),
                     TERMINATION_MESSAGE_POLICIES, optional=True)
    causes += validate_ports(ctr.get("ports"), f.child(path, "ports"))
    causes += validate_env(ctr.get("env"), f.child(path, "env"))
    causes += _mounts(ctr.get("volumeMounts"), f.child(path, "volumeMounts"), volumes)
    causes += validate_resources(ctr.get("resources"), f.child(path, "resources"))
    sidecar = init and ctr.get("restartPolicy") == "Always"
    for probe in _PROBES:
        if ctr.get(probe) is None:
            continue
        if init and not sidecar:
            causes.append(f.forbidden(f.child(path, probe),
                                      "may not be set for init containers without restartPolicy=Always"))
        else:
            causes += _probe(f.as_dict(ctr.get(probe)), f.child(path, probe),
                             must_succeed_once=probe != "readinessProbe")
    return causes


def validate_ports(ports: Any, path: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    seen: set[str] = set()
    for i, port in f.dicts(ports):
        at = f.index(path, i)
        name = port.get("name")
        if name not in (None, ""):
            problems = names.port_name(f.as_str(name)) if isinstance(name, str) else ["must be a string"]
            causes += f.invalid_each(f.child(at, "name"), name, problems)
            if not problems and name in seen:
                causes.append(f.duplicate(f.child(at, "name"), name))
            seen.add(f.as_str(name))
        causes += _port_number(port.get("containerPort"), f.child(at, "containerPort"), required=True)
        if port.get("hostPort") not in (None, 0):
            causes += _port_number(port.get("hostPort"), f.child(at, "hostPort"), required=True)
        causes += f.enum(f.child(at, "protocol"), port.get("protocol"), PORT_PROTOCOLS, optional=True)
    return causes


def _port_number(value: Any, path: str, *, required: bool) -> list[errors.Cause]:
    if value is None or value == 0:
        return [f.required(path)] if required else []
    if not f.is_int(value):
        return [f.invalid(path, value, "must be an integer")]
    return f.invalid_each(path, value, names.port_number(value))


def _port_or_name(value: Any, path: str) -> list[errors.Cause]:
    """An IntOrString port of a probe or handler: a port number or an IANA service name."""
    if isinstance(value, str) and value and not value.isdigit():
        return f.invalid_each(path, value, names.port_name(value))
    if isinstance(value, str) and value.isdigit():
        return _port_number(int(value), path, required=True)
    return _port_number(value, path, required=True)


def validate_env(env: Any, path: str) -> list[errors.Cause]:
    """`ValidateEnv`: names, string values, and exactly one well-formed `valueFrom` source."""
    causes: list[errors.Cause] = []
    for i, var in f.dicts(env):
        at = f.index(path, i)
        name = var.get("name")
        if not isinstance(name, str) or not name:
            causes.append(f.required(f.child(at, "name")))
        else:
            rule = names.relaxed_env_var_name if RELAXED_ENV_NAMES else names.env_var_name
            causes += f.invalid_each(f.child(at, "name"), name, rule(name))
        causes += f.string_field(f.child(at, "value"), var.get("value"))
        if var.get("valueFrom") is not None:
            causes += _value_from(f.as_dict(var.get("valueFrom")), f.child(at, "valueFrom"), bool(var.get("value")))
    return causes


def _value_from(src: dict[str, Any], path: str, has_value: bool) -> list[errors.Cause]:
    present = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
               if src.get(k) is not None]
    causes: list[errors.Cause] = []
    if not present:
        causes.append(f.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                "`configMapKeyRef` or `secretKeyRef`"))
    elif has_value:
        causes.append(f.invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(present) > 1:
        causes.append(f.invalid(path, "", "may not have more than one field specified at a time"))
    if "fieldRef" in present:
        causes += _field_ref(f.as_dict(src["fieldRef"]), f.child(path, "fieldRef"))
    for ref in ("configMapKeyRef", "secretKeyRef"):
        if ref in present:
            causes += _key_ref(f.as_dict(src[ref]), f.child(path, ref))
    if "resourceFieldRef" in present and not f.as_str(f.as_dict(src["resourceFieldRef"]).get("resource")):
        causes.append(f.required(f.child(path, "resourceFieldRef", "resource")))
    return causes


def _field_ref(ref: dict[str, Any], path: str) -> list[errors.Cause]:
    field_path = f.as_str(ref.get("fieldPath"))
    if not field_path:
        return [f.required(f.child(path, "fieldPath"))]
    if field_path.endswith("']") and "['" in field_path:
        base, subscript = field_path[:-2].split("['", 1)
        if base == "metadata.labels":
            return f.invalid_each(path, subscript, names.qualified_name(subscript))
        if base == "metadata.annotations":
            return f.invalid_each(path, subscript.lower(), names.qualified_name(subscript.lower()))
        return [f.invalid(path, base, "does not support subscript")]
    if field_path not in ENV_FIELD_PATHS:
        return [f.not_supported(f.child(path, "fieldPath"), field_path, ENV_FIELD_PATHS)]
    return []


def _key_ref(ref: dict[str, Any], path: str) -> list[errors.Cause]:
    name, key = f.as_str(ref.get("name")), f.as_str(ref.get("key"))
    causes = f.invalid_each(f.child(path, "name"), name, names.dns1123_subdomain(name))
    if not key:
        return causes + [f.required(f.child(path, "key"))]
    return causes + f.invalid_each(f.child(path, "key"), key, names.config_map_key(key))


def _mounts(mounts: Any, path: str, volumes: frozenset[str]) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    for i, mnt in f.dicts(mounts):
        at = f.index(path, i)
        name = f.as_str(mnt.get("name"))
        if not name:
            causes.append(f.required(f.child(at, "name")))
        elif name not in volumes:
            causes.append(f.not_found(f.child(at, "name"), name))
        if not f.as_str(mnt.get("mountPath")):
            causes.append(f.required(f.child(at, "mountPath")))
    return causes


def _overcommit_allowed(resource: str) -> bool:
    """Native resources (no domain, or kubernetes.io/) other than hugepages may have requests < limits."""
    native = "/" not in resource or resource.startswith("kubernetes.io/")
    return native and not resource.startswith("hugepages-")


def validate_resources(res: Any, path: str) -> list[errors.Cause]:
    """`ValidateResourceRequirements`: quantities well formed and non-negative, requests within limits."""
    res = f.as_dict(res)
    causes: list[errors.Cause] = []
    parsed: dict[str, dict[str, Any]] = {}
    for part in ("limits", "requests"):
        parsed[part] = {}
        for name, value in f.as_dict(res.get(part)).items():
            at = f.key(f.child(path, part), name)
            amount = quantity.parse(value)
            if amount is None:
                causes.append(f.invalid(at, value, quantity.QUANTITY_ERROR))
            elif amount < 0:
                causes.append(f.invalid(at, value, f.NEGATIVE))
            else:
                parsed[part][name] = (amount, value)
    return causes + _requests_within_limits(parsed["requests"], parsed["limits"], path)


def _requests_within_limits(requests: dict[str, Any], limits: dict[str, Any], path: str) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    for name, (amount, raw) in requests.items():
        if name not in limits:
            if not _overcommit_allowed(name):
                causes.append(f.required(f.child(path, "limits"), "Limit must be set for non overcommitable resources"))
            continue
        limit, limit_raw = limits[name]
        if amount != limit and not _overcommit_allowed(name):
            causes.append(f.invalid(f.child(path, "requests"), raw, f"must be equal to {name} limit of {limit_raw}"))
        elif amount > limit:
            causes.append(f.invalid(f.child(path, "requests"), raw,
                                    f"must be less than or equal to {name} limit of {limit_raw}"))
    return causes


def _probe(probe: dict[str, Any], path: str, *, must_succeed_once: bool) -> list[errors.Cause]:
    causes = _handler(probe, path)
    for field in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        causes += f.nonnegative(f.child(path, field), probe.get(field))
    if must_succeed_once and probe.get("successThreshold") not in (None, 1):
        causes.append(f.invalid(f.child(path, "successThreshold"), probe.get("successThreshold"), "must be 1"))
    return causes


def _handler(handler: dict[str, Any], path: str) -> list[errors.Cause]:
    present = [h for h in _HANDLERS if handler.get(h) is not None]
    if not present:
        return [f.required(path, "must specify a handler type")]
    if len(present) > 1:
        return [f.forbidden(f.child(path, present[1]), "may not specify more than 1 handler type")]
    kind = present[0]
    if kind == "grpc":
        return _port_number(f.as_dict(handler[kind]).get("port"), f.child(path, kind, "port"), required=True)
    if kind in ("httpGet", "tcpSocket"):
        return _port_or_name(f.as_dict(handler[kind]).get("port"), f.child(path, kind, "port"))
    return []
