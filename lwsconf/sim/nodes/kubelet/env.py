"""A container's environment, built exactly as the kubelet builds it. Pure: no I/O.

The simulated kubelet runs real processes for some containers, and LWS workloads read their
environment (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, downward-API names), so the rules must be
Kubernetes' own, taken from `pkg/kubelet/kubelet_pods.go` (`makeEnvironmentVariables`,
`podFieldSelectorRuntimeValue`, `containerResourceRuntimeValue`), `pkg/kubelet/envvars` and
`third_party/forked/golang/expansion`:

1. `envFrom` sources in order; later sources override earlier ones; a prefix is prepended to
   every key; a missing source is an error unless `optional`.
2. `env` entries in order, overriding `envFrom`. A literal value has its `$(VAR)` references
   expanded against everything defined so far (envFrom keys and earlier entries) and then the
   service variables; `$$` is an escaped `$`; an unknown reference is left verbatim. Values
   from `valueFrom` are never expanded.
3. Service-link variables (`<SVC>_SERVICE_HOST`...) for names not already defined.
4. `extra` (the device plugin's Allocate envs) on top, as this project's node contract asks.

`expand_argv` expands `command` and `args` against the final environment, the way
`kubecontainer.ExpandContainerCommandAndArgs` does.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

Obj = dict[str, Any]
Objects = Mapping[str, Obj]
"""ConfigMaps or Secrets of the pod's namespace by name (full API objects); absent = not found."""


class EnvError(ValueError):
    """The container cannot be given its environment (the kubelet's CreateContainerConfigError)."""


# --- $(VAR) expansion -----------------------------------------------------------------------------

def expand(value: str, *contexts: Mapping[str, str]) -> str:
    """Expand `$(NAME)` references in `value`, looking NAME up in each context in turn.

    The grammar of the forked `expansion.Expand`: `$$` gives `$`; `$(NAME)` gives NAME's value,
    or `$(NAME)` itself when no context defines it; a `$` followed by anything else, or a `$(`
    without a closing `)`, is copied as is.
    """
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        ch = value[i]
        if ch != "$" or i + 1 == n:
            out.append(ch)
            i += 1
            continue
        nxt = value[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = value.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            out.append(_lookup(value[i + 2:close], contexts))
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def _lookup(name: str, contexts: Sequence[Mapping[str, str]]) -> str:
    for context in contexts:
        if name in context:
            return context[name]
    return f"$({name})"


def expand_argv(container: Obj, env: Mapping[str, str]) -> list[str]:
    """`command` + `args` with `$(VAR)` expanded against the container's final environment.

    An empty `command` means the image's entrypoint; the caller decides what that is.
    """
    command = [expand(str(part), env) for part in container.get("command") or ()]
    args = [expand(str(part), env) for part in container.get("args") or ()]
    return command + args


# --- quantities -----------------------------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_SUFFIX: dict[str, int | Decimal] = {"": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20,
           "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def parse_quantity(text: str | int | float) -> Decimal:
    """A Kubernetes resource.Quantity ("250m", "1Gi", "2e3") as an exact Decimal.

    Raises:
        EnvError: not a quantity.
    """
    match = _QUANTITY.match(str(text).strip())
    if match is None:
        raise EnvError(f"{text!r} is not a Kubernetes quantity (e.g. 500m, 2, 1Gi, 1e3)")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        raise EnvError(f"{text!r} is not a Kubernetes quantity") from None
    if match.group(2):
        return number * Decimal(10) ** int(match.group(2)[1:])
    return number * Decimal(str(_SUFFIX[match.group(3) or ""]))


# --- downward API ---------------------------------------------------------------------------------

_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


def format_map(values: Mapping[str, str]) -> str:
    """`fieldpath.FormatMap`: sorted `key="value"` lines (Go %q quoting), no trailing newline."""
    return "\n".join(f"{key}={json.dumps(values[key], ensure_ascii=False)}" for key in sorted(values))


def field_value(pod: Obj, path: str, *, node_name: str = "", host_ip: str = "",
                pod_ips: Sequence[str] = ()) -> str:
    """The value of a downward-API `fieldRef.fieldPath` for `pod`.

    Raises:
        EnvError: a path Kubernetes does not support.
    """
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str((meta.get(subscript.group(1)) or {}).get(subscript.group(2), ""))
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName") or node_name,
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": host_ip, "status.hostIPs": host_ip,
        "status.podIP": pod_ips[0] if pod_ips else "", "status.podIPs": ",".join(pod_ips),
    }
    if path in simple:
        return str(simple[path] or "")
    if path in ("metadata.labels", "metadata.annotations"):
        return format_map(meta.get(path.split(".")[1]) or {})
    raise EnvError(f"unsupported fieldRef.fieldPath {path!r}: use metadata.name|namespace|uid, "
                   "metadata.labels['k'], metadata.annotations['k'], spec.nodeName, "
                   "spec.serviceAccountName, status.hostIP(s) or status.podIP(s)")


def resource_value(ref: Obj, pod: Obj, container: Obj,
                   node_allocatable: Mapping[str, str] | None = None) -> str:
    """The value of a `resourceFieldRef`: the quantity divided by `divisor`, rounded up.

    Limits the container does not set default to the node's allocatable amount, as in the
    kubelet's `defaultPodLimitsForDownwardAPI`. `containerName` picks another container.

    Raises:
        EnvError: unknown resource, container or a zero divisor.
    """
    target = container
    if ref.get("containerName"):
        target = _container_named(pod, ref["containerName"])
    kind, _, resource = str(ref.get("resource") or "").partition(".")
    if kind not in ("limits", "requests") or not (
            resource in ("cpu", "memory", "ephemeral-storage") or resource.startswith("hugepages-")):
        raise EnvError(f"unsupported resourceFieldRef.resource {ref.get('resource')!r}: use "
                       "limits|requests.cpu|memory|ephemeral-storage|hugepages-<size>")
    resources = target.get("resources") or {}
    amount = (resources.get(kind) or {}).get(resource)
    if amount is None and kind == "limits":
        amount = (node_allocatable or {}).get(resource)
    divisor = parse_quantity(ref.get("divisor") or "1")
    if divisor == 0:
        raise EnvError(f"resourceFieldRef divisor {ref.get('divisor')!r} must not be zero")
    value = parse_quantity(amount if amount is not None else "0")
    if resource == "cpu":  # convertResourceCPUToString works in millicores
        return str(math.ceil(math.ceil(value * 1000) / math.ceil(divisor * 1000)))
    return str(math.ceil(math.ceil(value) / math.ceil(divisor)))


def _container_named(pod: Obj, name: str) -> Obj:
    spec = pod.get("spec") or {}
    for group in ("containers", "initContainers"):
        for candidate in spec.get(group) or ():
            if candidate.get("name") == name:
                return dict(candidate)
    raise EnvError(f"resourceFieldRef names container {name!r}, which the pod does not have")


# --- ConfigMap / Secret data ----------------------------------------------------------------------

def configmap_data(configmap: Obj) -> dict[str, str]:
    """A ConfigMap's `data` (what env sees; `binaryData` is not used for env)."""
    return {str(k): str(v) for k, v in (configmap.get("data") or {}).items()}


def secret_data(secret: Obj) -> dict[str, bytes]:
    """A Secret's `data`, base64-decoded (plus `stringData`, should a raw object still carry it).

    Raises:
        EnvError: a value that is not base64.
    """
    out = {str(k): str(v).encode() for k, v in (secret.get("stringData") or {}).items()}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise EnvError(f"Secret key {key!r} is not valid base64") from None
    return out


def _source(objects: Objects, kind: str, ref: Obj, namespace: str) -> Obj | None:
    """The referenced object; None when missing and optional; EnvError when missing otherwise."""
    found = objects.get(str(ref.get("name") or ""))
    if found is None and not ref.get("optional"):
        raise EnvError(f"{kind} {namespace}/{ref.get('name')} not found: create it or mark the "
                       "reference optional")
    return found


# --- service links --------------------------------------------------------------------------------

def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def service_env(services: Sequence[Obj], namespace: str, enable_service_links: bool = True) -> dict[str, str]:
    """The kubelet's service-link variables (`envvars.FromServices` over `getServiceEnvVarMap`).

    Services of the pod's namespace (when links are enabled) and `default/kubernetes` always;
    headless and IP-less services are skipped.
    """
    chosen: dict[str, Obj] = {}
    for svc in services:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        if spec.get("clusterIP") in (None, "", "None") or not spec.get("ports"):
            continue
        name, ns = meta.get("name") or "", meta.get("namespace") or ""
        if ns == "default" and name == "kubernetes":
            chosen.setdefault(name, svc)
        elif ns == namespace and enable_service_links:
            chosen[name] = svc
    out: dict[str, str] = {}
    for name, svc in chosen.items():
        out.update(_service_vars(name, svc["spec"]))
    return out


def _service_vars(name: str, spec: Obj) -> dict[str, str]:
    prefix, ip, ports = _env_name(name), str(spec["clusterIP"]), spec["ports"]
    out = {f"{prefix}_SERVICE_HOST": ip, f"{prefix}_SERVICE_PORT": str(ports[0].get("port"))}
    for port in ports:
        if port.get("name"):
            out[f"{prefix}_SERVICE_PORT_{_env_name(port['name'])}"] = str(port.get("port"))
    for index, port in enumerate(ports):  # Docker link variables
        proto = str(port.get("protocol") or "TCP")
        url = f"{proto.lower()}://{ip}:{port.get('port')}"
        if index == 0:
            out[f"{prefix}_PORT"] = url
        base = f"{prefix}_PORT_{port.get('port')}_{proto.upper()}"
        out.update({base: url, f"{base}_PROTO": proto.lower(), f"{base}_PORT": str(port.get("port")),
                    f"{base}_ADDR": ip})
    return out


# --- the whole environment ------------------------------------------------------------------------

def valid_env_name(name: str) -> bool:
    """Kubernetes' relaxed rule (KEP-4369, GA in 1.34): printable ASCII except '='; not empty."""
    return bool(name) and all(" " <= ch <= "~" and ch != "=" for ch in name)


def _env_from(pod: Obj, container: Obj, configmaps: Objects, secrets: Objects) -> dict[str, str]:
    """envFrom in order, later sources winning.

    Current kubelets no longer skip keys that are not C identifiers (kubernetes#130099: since the
    relaxed validation the API server only admits keys that are valid names); a key that no
    environment can hold (containing '=' or a control character) is still dropped here.
    """
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = str(source.get("prefix") or "")
        items: dict[str, str] = {}
        if source.get("configMapRef") is not None:
            cm = _source(configmaps, "ConfigMap", source["configMapRef"], namespace)
            items = configmap_data(cm) if cm is not None else {}
        elif source.get("secretRef") is not None:
            secret = _source(secrets, "Secret", source["secretRef"], namespace)
            data = secret_data(secret) if secret is not None else {}
            items = {k: v.decode(errors="replace") for k, v in data.items()}
        for key, value in items.items():
            if valid_env_name(prefix + key):
                env[prefix + key] = value
    return env


def _value_from(source: Obj, pod: Obj, container: Obj, ctx: _Context) -> str | None:
    """One `valueFrom`; None means "skip this variable" (an optional reference that is missing)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    if source.get("fieldRef") is not None:
        return field_value(pod, str(source["fieldRef"].get("fieldPath") or ""), node_name=ctx.node_name,
                           host_ip=ctx.host_ip, pod_ips=ctx.pod_ips)
    if source.get("resourceFieldRef") is not None:
        return resource_value(source["resourceFieldRef"], pod, container, ctx.node_allocatable)
    for field, kind, objects in (("configMapKeyRef", "ConfigMap", ctx.configmaps),
                                 ("secretKeyRef", "Secret", ctx.secrets)):
        ref = source.get(field)
        if ref is None:
            continue
        obj = _source(objects, kind, ref, namespace)
        if obj is None:
            return None
        data: Mapping[str, str | bytes] = configmap_data(obj) if kind == "ConfigMap" else secret_data(obj)
        if ref.get("key") not in data:
            if ref.get("optional"):
                return None
            raise EnvError(f"couldn't find key {ref.get('key')} in {kind} {namespace}/{ref.get('name')}")
        value = data[ref["key"]]
        return value.decode(errors="replace") if isinstance(value, bytes) else value
    return ""


class _Context:
    def __init__(self, *, node_name: str, host_ip: str, pod_ips: Sequence[str], configmaps: Objects,
                 secrets: Objects, node_allocatable: Mapping[str, str] | None) -> None:
        self.node_name, self.host_ip, self.pod_ips = node_name, host_ip, list(pod_ips)
        self.configmaps, self.secrets, self.node_allocatable = configmaps, secrets, node_allocatable


def resolve_env(pod: Obj, container: Obj, *, node_name: str, host_ip: str, pod_ip: str,
                configmaps: Objects, secrets: Objects, extra: Mapping[str, str] | None = None,
                services: Sequence[Obj] = (), node_allocatable: Mapping[str, str] | None = None,
                pod_ips: Sequence[str] | None = None) -> dict[str, str]:
    """The container's environment as the kubelet computes it (see the module docstring).

    Args:
        configmaps, secrets: objects of the pod's namespace by name (missing = not found).
        extra: device-plugin Allocate envs, applied last.
        services: Services (any namespaces) for service-link variables; empty = none.
        node_allocatable: defaults for limits the container does not set (resourceFieldRef).
        pod_ips: all pod IPs (status.podIPs); defaults to [pod_ip].

    Raises:
        EnvError: a missing non-optional ConfigMap/Secret or key, or an unsupported reference.
    """
    ctx = _Context(node_name=node_name, host_ip=host_ip,
                   pod_ips=list(pod_ips) if pod_ips else ([pod_ip] if pod_ip else []),
                   configmaps=configmaps, secrets=secrets, node_allocatable=node_allocatable)
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    links = service_env(services, namespace, spec.get("enableServiceLinks", True) is not False)
    env = _env_from(pod, container, configmaps, secrets)
    for entry in container.get("env") or ():
        name, literal = str(entry.get("name") or ""), entry.get("value")
        if literal:  # only literal values are expanded (kubelet: `if runtimeVal != ""`)
            value: str | None = expand(str(literal), env, links)
        elif entry.get("valueFrom") is not None:
            value = _value_from(entry["valueFrom"], pod, container, ctx)
        else:
            value = ""
        if value is not None:
            env[name] = value
    for key, value in links.items():
        env.setdefault(key, value)
    env.update(extra or {})
    return env
