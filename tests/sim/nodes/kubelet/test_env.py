"""Kubernetes' container-environment rules, one table row per rule, each with its source.

Sources (kubernetes/kubernetes unless stated):
[KP]  pkg/kubelet/kubelet_pods.go: makeEnvironmentVariables, podFieldSelectorRuntimeValue,
      containerResourceRuntimeValue.
[EX]  third_party/forked/golang/expansion/expand.go (and expand_test.go).
[DOC-DEP] https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/
[DOC-CMD] https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/
[DOC-DAPI] https://kubernetes.io/docs/concepts/workloads/pods/downward-api/
[RES] pkg/api/v1/resource/helpers.go: convertResourceCPUToString / convertResourceMemoryToString
      (value / divisor, rounded up; CPU in millicores; divisor defaults to 1).
[ENVV] pkg/kubelet/envvars/envvars.go: FromServices, makeLinkVariables.
[RELAX] KEP-4369 / kubernetes#123385 (relaxed env var names, GA 1.34) and kubernetes#130099
      (envFrom no longer skips keys that are not C identifiers).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from lwsconf.sim.nodes.kubelet import env

Obj = dict[str, Any]


def pod(containers: list[Obj] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"name": "web-0", "namespace": "team", "uid": "uid-123",
                         "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "hi \"there\""}},
            "spec": {"nodeName": "node-1", "serviceAccountName": "builder",
                     "containers": containers or [{"name": "main"}], **spec}}


def cm(name: str, data: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "namespace": "team"}, "data": data}


def secret(name: str, data: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "namespace": "team"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def resolve(container: Obj, *, configmaps: dict[str, Obj] | None = None, secrets: dict[str, Obj] | None = None,
            the_pod: Obj | None = None, **kwargs: Any) -> dict[str, str]:
    return env.resolve_env(the_pod or pod([container]), container, node_name="node-1", host_ip="127.9.0.2",
                           pod_ip="127.9.1.7", configmaps=configmaps or {}, secrets=secrets or {}, **kwargs)


# --- $(VAR) expansion [EX] ------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    ("$(A)", "a"),                       # a defined reference is replaced
    ("x$(A)y$(B)z", "xaybz"),            # several references, text kept around them
    ("$(MISSING)", "$(MISSING)"),        # unknown references are left verbatim
    ("$$(A)", "$(A)"),                   # $$ escapes: the reference is not expanded
    ("$$$(A)", "$a"),                    # an escaped $ then a reference
    ("$$", "$"),                         # $$ alone is one $
    ("$A", "$A"),                        # $ not followed by ( or $ is copied
    ("50$", "50$"),                      # a trailing $ is copied
    ("$(A", "$(A"),                      # an unterminated reference is copied
    ("$()", "$()"),                      # the empty name is unknown, so left verbatim
    ("$(A)$(A)", "aa"),
], ids=lambda v: repr(v))
def test_expansion_follows_the_forked_go_expand_rules(value: str, expected: str) -> None:
    assert env.expand(value, {"A": "a", "B": "b"}) == expected


def test_expansion_looks_contexts_up_in_order() -> None:
    # [KP] MappingFuncFor(tmpEnv, serviceEnv): container vars win over service vars.
    assert env.expand("$(X)", {"X": "container"}, {"X": "service"}) == "container"
    assert env.expand("$(Y)", {"X": "container"}, {"Y": "service"}) == "service"


def test_dependent_variables_follow_declaration_order_as_in_the_docs() -> None:
    # [DOC-DEP]: the example of the page, with its documented outcome.
    container = {"name": "main", "env": [
        {"name": "SERVICE_PORT", "value": "80"},
        {"name": "SERVICE_IP", "value": "172.17.0.1"},
        {"name": "UNCHANGED_REFERENCE", "value": "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"},
        {"name": "PROTOCOL", "value": "https"},
        {"name": "SERVICE_ADDRESS", "value": "$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"},
        {"name": "ESCAPED_REFERENCE", "value": "$$(PROTOCOL)://$(SERVICE_IP):$(SERVICE_PORT)"},
    ]}
    got = resolve(container)
    assert got["UNCHANGED_REFERENCE"] == "$(PROTOCOL)://172.17.0.1:80"
    assert got["SERVICE_ADDRESS"] == "https://172.17.0.1:80"
    assert got["ESCAPED_REFERENCE"] == "$(PROTOCOL)://172.17.0.1:80"


def test_values_from_sources_are_not_expanded_but_can_be_referenced() -> None:
    # [KP] only `envVar.Value != ""` goes through expansion.Expand; valueFrom results are used raw.
    container = {"name": "main", "env": [
        {"name": "A", "value": "a"},
        {"name": "RAW", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "tpl"}}},
        {"name": "USES_RAW", "value": "[$(RAW)]"},
    ]}
    got = resolve(container, configmaps={"cfg": cm("cfg", {"tpl": "$(A)"})})
    assert got["RAW"] == "$(A)"
    assert got["USES_RAW"] == "[$(A)]"


def test_empty_literal_is_set_to_the_empty_string() -> None:
    # [KP] a var with neither value nor valueFrom is still defined, as "".
    assert resolve({"name": "main", "env": [{"name": "EMPTY"}]})["EMPTY"] == ""


# --- envFrom [KP] ---------------------------------------------------------------------------------

def test_env_from_applies_sources_in_order_with_prefixes_and_env_overrides_them() -> None:
    container = {"name": "main",
                 "envFrom": [{"configMapRef": {"name": "one"}},
                             {"prefix": "S_", "secretRef": {"name": "sec"}},
                             {"configMapRef": {"name": "two"}}],
                 "env": [{"name": "SHARED", "value": "from-env $(S_TOKEN)"}]}
    got = resolve(container, configmaps={"one": cm("one", {"K": "1", "SHARED": "one", "ONLY_ONE": "x"}),
                                         "two": cm("two", {"K": "2"})},
                  secrets={"sec": secret("sec", {"TOKEN": "t0k"})})
    assert got["K"] == "2"                       # the later source wins
    assert got["S_TOKEN"] == "t0k"               # prefix prepended, secret base64-decoded
    assert got["ONLY_ONE"] == "x"
    assert got["SHARED"] == "from-env t0k"       # env overrides envFrom and may reference it


def test_env_from_keys_that_are_no_c_identifier_are_kept_but_unrepresentable_ones_are_dropped() -> None:
    # [RELAX]: dotted/dashed keys reach the container on current Kubernetes; a key with '='
    # cannot be an environment variable at all and is dropped.
    container = {"name": "main", "envFrom": [{"configMapRef": {"name": "cfg"}}]}
    got = resolve(container, configmaps={"cfg": cm("cfg", {"app.mode": "x", "1-leading": "y", "a=b": "z"})})
    assert got == {"app.mode": "x", "1-leading": "y"}


@pytest.mark.parametrize("ref_kind", ["configMapRef", "secretRef"])
def test_env_from_missing_source_fails_unless_optional(ref_kind: str) -> None:
    required = {"name": "main", "envFrom": [{ref_kind: {"name": "absent"}}]}
    with pytest.raises(env.EnvError, match="absent not found"):
        resolve(required)
    optional = {"name": "main", "envFrom": [{ref_kind: {"name": "absent", "optional": True}}]}
    assert resolve(optional) == {}


# --- configMapKeyRef / secretKeyRef [KP] ----------------------------------------------------------

@pytest.mark.parametrize(("field", "store"), [("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")])
@pytest.mark.parametrize(("objects", "optional", "outcome"), [
    ({"obj": {"key": "v"}}, False, "v"),          # present: the value (secrets decoded)
    ({}, True, None),                              # object missing, optional: variable skipped
    ({}, False, "error"),                          # object missing, required: cannot start
    ({"obj": {"other": "v"}}, True, None),         # key missing, optional: skipped
    ({"obj": {"other": "v"}}, False, "error"),     # key missing, required: cannot start
])
def test_key_refs_honour_optional(field: str, store: str, objects: dict[str, dict[str, str]], optional: bool,
                                  outcome: str | None) -> None:
    make = cm if store == "configmaps" else secret
    stores: dict[str, dict[str, Obj]] = {store: {name: make(name, data) for name, data in objects.items()}}
    container = {"name": "main", "env": [{"name": "V", "valueFrom": {field: {"name": "obj", "key": "key",
                                                                           "optional": optional}}}]}
    if outcome == "error":
        with pytest.raises(env.EnvError):
            resolve(container, **stores)  # type: ignore[arg-type]
        return
    got = resolve(container, **stores)  # type: ignore[arg-type]
    assert got.get("V") == outcome


# --- fieldRef [KP] [DOC-DAPI] ---------------------------------------------------------------------

@pytest.mark.parametrize(("path", "expected"), [
    ("metadata.name", "web-0"),
    ("metadata.namespace", "team"),
    ("metadata.uid", "uid-123"),
    ("metadata.labels['app']", "web"),
    ("metadata.labels['absent']", ""),
    ("metadata.annotations['note']", 'hi "there"'),
    ("spec.nodeName", "node-1"),
    ("spec.serviceAccountName", "builder"),
    ("status.hostIP", "127.9.0.2"),
    ("status.hostIPs", "127.9.0.2"),
    ("status.podIP", "127.9.1.7"),
    ("status.podIPs", "127.9.1.7"),
    ("metadata.labels", 'app="web"\ntier="front"'),    # fieldpath.FormatMap: sorted key="value" lines
])
def test_field_refs_give_pod_facts(path: str, expected: str) -> None:
    container = {"name": "main", "env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": path}}}]}
    assert resolve(container)["F"] == expected


def test_unsupported_field_path_is_an_error_naming_the_supported_ones() -> None:
    container = {"name": "main", "env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}}]}
    with pytest.raises(env.EnvError, match="metadata.name"):
        resolve(container)


# --- resourceFieldRef [RES] [KP] ------------------------------------------------------------------

RESOURCES = {"limits": {"cpu": "250m", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "1000",
                                                                      "ephemeral-storage": "2Gi"}}


@pytest.mark.parametrize(("resource", "divisor", "expected"), [
    ("limits.cpu", None, "1"),           # 250m / 1 core, rounded up
    ("limits.cpu", "1m", "250"),
    ("requests.cpu", "1m", "100"),
    ("requests.cpu", "30m", "4"),        # 100/30 = 3.33 -> 4
    ("limits.memory", None, "1073741824"),
    ("limits.memory", "1Mi", "1024"),
    ("requests.memory", "1Ki", "1"),     # 1000 bytes / 1024 -> 0.98 -> 1
    ("requests.ephemeral-storage", "1Gi", "2"),
])
def test_resource_field_refs_divide_and_round_up(resource: str, divisor: str | None, expected: str) -> None:
    ref: Obj = {"resource": resource}
    if divisor:
        ref["divisor"] = divisor
    container = {"name": "main", "resources": RESOURCES,
                 "env": [{"name": "R", "valueFrom": {"resourceFieldRef": ref}}]}
    assert resolve(container)["R"] == expected


def test_unset_limits_default_to_node_allocatable() -> None:
    # [KP] defaultPodLimitsForDownwardAPI merges node allocatable into unset limits.
    container = {"name": "main", "env": [
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Gi"}}}]}
    got = resolve(container, node_allocatable={"cpu": "32", "memory": "256Gi"})
    assert (got["CPU"], got["MEM"]) == ("32", "256")


def test_resource_field_ref_can_name_another_container() -> None:
    sidecar = {"name": "side", "resources": {"limits": {"cpu": "2"}}}
    main = {"name": "main", "env": [{"name": "R", "valueFrom": {"resourceFieldRef": {
        "containerName": "side", "resource": "limits.cpu", "divisor": "1m"}}}]}
    assert resolve(main, the_pod=pod([main, sidecar]))["R"] == "2000"


# --- service links [ENVV] [KP] --------------------------------------------------------------------

SERVICES = [
    {"metadata": {"name": "my-db", "namespace": "team"},
     "spec": {"clusterIP": "127.96.0.9", "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}},
    {"metadata": {"name": "headless", "namespace": "team"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
    {"metadata": {"name": "elsewhere", "namespace": "other"},
     "spec": {"clusterIP": "127.96.0.8", "ports": [{"port": 2}]}},
    {"metadata": {"name": "kubernetes", "namespace": "default"},
     "spec": {"clusterIP": "127.96.0.1", "ports": [{"name": "https", "port": 443}]}},
]


def test_service_links_of_the_namespace_and_the_api_service_are_defined() -> None:
    container = {"name": "main", "env": [{"name": "DB", "value": "$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)"}]}
    got = resolve(container, services=SERVICES)
    assert got["DB"] == "127.96.0.9:5432"
    assert got["MY_DB_SERVICE_PORT_PG"] == "5432"
    assert got["MY_DB_PORT"] == "tcp://127.96.0.9:5432"
    assert got["MY_DB_PORT_5432_TCP_ADDR"] == "127.96.0.9"
    assert got["KUBERNETES_SERVICE_HOST"] == "127.96.0.1"
    assert not any(k.startswith(("HEADLESS_", "ELSEWHERE_")) for k in got)


def test_disabled_service_links_keep_only_the_api_service() -> None:
    got = resolve({"name": "main"}, services=SERVICES, the_pod=pod(enableServiceLinks=False))
    assert "KUBERNETES_SERVICE_HOST" in got and "MY_DB_SERVICE_HOST" not in got


def test_container_env_overrides_service_links() -> None:
    got = resolve({"name": "main", "env": [{"name": "MY_DB_SERVICE_HOST", "value": "mine"}]}, services=SERVICES)
    assert got["MY_DB_SERVICE_HOST"] == "mine"


# --- extra (device plugin envs) -------------------------------------------------------------------

def test_device_plugin_envs_are_applied_last() -> None:
    container = {"name": "main", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
    got = resolve(container, extra={"NVIDIA_VISIBLE_DEVICES": "GPU-1,GPU-2", "MOCK_X": "1"})
    assert got["NVIDIA_VISIBLE_DEVICES"] == "GPU-1,GPU-2" and got["MOCK_X"] == "1"


# --- command / args [DOC-CMD] ---------------------------------------------------------------------

def test_command_and_args_expand_against_the_final_environment() -> None:
    container = {"command": ["python3", "-c", "$(CODE)"],
                 "args": ["--msg=$(MESSAGE)", "$$(MESSAGE)", "$(UNKNOWN)", "cost: 5$"]}
    argv = env.expand_argv(container, {"CODE": "print(1)", "MESSAGE": "hello world"})
    assert argv == ["python3", "-c", "print(1)", "--msg=hello world", "$(MESSAGE)", "$(UNKNOWN)", "cost: 5$"]


def test_argv_without_command_is_just_the_args() -> None:
    assert env.expand_argv({"args": ["$(A)"]}, {"A": "x"}) == ["x"]
    assert env.expand_argv({}, {}) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("250m", "0.250"), ("2", "2"), ("1Gi", str(2**30)), ("1e3", "1000"), ("1.5k", "1500.0"), ("100n", "1.00E-7"),
])
def test_quantities_parse_exactly(text: str, expected: str) -> None:
    from decimal import Decimal
    assert env.parse_quantity(text) == Decimal(expected)


def test_a_bad_quantity_names_the_expected_form() -> None:
    with pytest.raises(env.EnvError, match="quantity"):
        env.parse_quantity("lots")
