"""A grammar of bad requests to the sim API server, as hypothesis strategies (used by test_fuzz and the bench).

Every strategy draws one `FuzzRequest`: the raw HTTP request (method, path exactly as sent, headers, body
bytes) plus what a correct server must answer. Families, one per kind of bad input the issue names:

    malformed_body    invalid JSON/YAML, invalid UTF-8, deep nesting, alias bombs, non-objects, NaN
    wrong_type        a LeaderWorkerSet with one schema field (walked from the CRD) of the wrong JSON type
    unknown_fields    unknown fields under fieldValidation=Strict (400) / Warn (201 + Warning) / Ignore
    selector          label/field selectors that do not parse or name unsupported fields
    resource_version  resourceVersions that are not decimal numbers, or stale, on list/get/watch/write
    content_type      unknown media types (protobuf, CBOR, XML...) with a valid body: 415
    bad_patch         JSON/merge/strategic/apply patches of the target objects with payloads that cannot apply
    huge_body         bodies over the 3 MiB limit: 413
    path_traversal    names with `..`, `/`, `%00`, over-long names; escapes towards the sentinel namespace
    bad_query         query parameters of the wrong type (limit, timeoutSeconds, dryRun, fieldManager...)
    subresource       /status and /scale writes with bodies of the wrong shape
    pod_subresource   pods/binding, pods/eviction, namespaces/finalize bodies of the wrong shape; pods/log

Requests name only the `fuzz` namespace (plus `..` escapes from it); the targets they write to
(`TARGET` LWS, ConfigMap and pod, and the namespace itself) only ever receive payloads that must be
refused, so both must read back unchanged, as must the sentinels in `SENTINEL_NS`, which no request
names except through traversal.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[4]
CRD = yaml.safe_load((ROOT / "manifests" / "crd" / "leaderworkersets.yaml").read_text())
GROUP_VERSION = "leaderworkerset.x-k8s.io/v1"
NS = "fuzz"
SENTINEL_NS = "sentinels"
TARGET = "target"
TARGET_RV = "__TARGET_RV__"
"""Replaced by the target's resourceVersion when sent (the targets never change, so it is fixed)."""

LWS = f"/apis/{GROUP_VERSION}/namespaces/{NS}/leaderworkersets"
CM = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"
STS = f"/apis/apps/v1/namespaces/{NS}/statefulsets"
COLLECTIONS = (LWS, CM, PODS, STS)
TARGETS = (f"{LWS}/{TARGET}", f"{CM}/{TARGET}")
POD_TARGET = f"{PODS}/{TARGET}"
"""An unbound pod: pods/binding, pods/eviction and pods/log are fuzzed on it, with payloads that must not apply."""

REJECT = "reject"
"""Must be a 4xx Status."""
WARN = "warn"
"""Must be 2xx with a Warning header naming each of `names`."""
ACCEPT = "accept"
"""Must be 2xx (the input is valid: unknown fields inside preserved pod specs, Ignore mode)."""
EITHER = "either"
"""Valid or not depending on what was drawn (random selector text): 2xx, or a 4xx Status."""


@dataclass(frozen=True)
class FuzzRequest:
    family: str
    method: str
    path: str
    body: bytes = b""
    content_type: str | None = "application/json"
    expect: str = REJECT
    names: tuple[str, ...] = ()
    """Substrings the Status message (or, for WARN, the Warning header) must contain."""
    extra_headers: tuple[tuple[str, str], ...] = field(default=())

    def describe(self) -> str:
        body = self.body[:300] + (b"..." if len(self.body) > 300 else b"")
        return (f"[{self.family}] {self.method} {self.path} Content-Type={self.content_type!r} "
                f"({len(self.body)} bytes) {body!r}")


def _template(container: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "fuzz"}, "annotations": {"note": "x"}, "finalizers": ["example.com/f"]},
            "spec": {"containers": [{"name": container, "image": "registry.example/worker:1"}]}}


def lws(name: str = "fuzzed", **meta: Any) -> dict[str, Any]:
    """A valid LeaderWorkerSet with every optional object of the schema set, so that a planted fault at any
    declared path is the only thing wrong with it."""
    return {"apiVersion": GROUP_VERSION, "kind": "LeaderWorkerSet", "metadata": {"name": name, **meta}, "spec": {
        "replicas": 1, "startupPolicy": "LeaderCreated", "networkConfig": {"subdomainPolicy": "Shared"},
        "rolloutStrategy": {"type": "RollingUpdate",
                            "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0}},
        "leaderWorkerTemplate": {
            "size": 2, "restartPolicy": "RecreateGroupOnPodRestart",
            "subGroupPolicy": {"subGroupPolicyType": "LeaderWorker", "subGroupSize": 1},
            "leaderTemplate": _template("leader"), "workerTemplate": _template("worker"),
            "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "metadata": {"name": "data", "labels": {"app": "fuzz"}},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}}}}


def configmap(name: str = "fuzzed", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


def dump(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# --- the LWS schema's typed fields, walked from the CRD -------------------------------------------

def _schema_fields(schema: dict[str, Any], path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    out: list[tuple[tuple[str | int, ...], str]] = []
    kind = "int-or-string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
    if kind == "object" and schema.get("x-kubernetes-preserve-unknown-fields"):
        kind = "preserved-object"
    if kind and path:
        out.append((path, kind))
    for name, sub in (schema.get("properties") or {}).items():
        out += _schema_fields(sub, (*path, name))
    if kind == "array" and isinstance(schema.get("items"), dict):
        out += _schema_fields(schema["items"], (*path, 0))
    return out


_ROOT_SCHEMA = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
LWS_FIELDS = [(p, t) for p, t in _schema_fields(_ROOT_SCHEMA, ()) if p[0] in ("spec", "metadata")]
"""Every typed field of the LWS schema below spec and metadata, as (path, type); status is written elsewhere."""
LWS_OBJECT_PATHS = [p for p, t in LWS_FIELDS if t == "object" and p[-1] not in ("labels", "annotations")]
"""Declared objects (not maps) where an unknown field is pruned and reported under Strict/Warn, the root
metadata included (a typed ObjectMeta there)."""
PRESERVED_PATHS = [p for p, t in LWS_FIELDS if t == "preserved-object"]
"""x-kubernetes-preserve-unknown-fields: unknown fields here are kept, so every mode accepts them."""

WRONG_VALUES: dict[str, list[Any]] = {
    "integer": ["3", True, {"a": 1}, [1], 1.5],
    "number": ["3", True, {"a": 1}, [1]],
    "string": [7, True, {"a": "b"}, ["x"], 1.5],
    "boolean": ["true", 1, {"a": True}, [True]],
    "object": ["x", 3, True, ["x"]],
    "preserved-object": ["x", 3, True, ["x"]],
    "array": ["x", 3, True, {"a": 1}],
    "int-or-string": [True, {"a": 1}, [1], 1.5],
}


def set_path(obj: Any, path: tuple[str | int, ...], value: Any) -> None:
    """Set `path` in `obj`, creating objects (and one-item lists) on the way."""
    node = obj
    for key, nxt in zip(path, path[1:], strict=False):
        if isinstance(key, int):
            while len(node) <= key:
                node.append({} if not isinstance(nxt, int) else [])
            node = node[key]
        else:
            if not isinstance(node.get(key), dict | list):
                node[key] = [] if isinstance(nxt, int) else {}
            node = node[key]
    last = path[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


# --- shared pieces ---------------------------------------------------------------------------------

names_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
collections = st.sampled_from(COLLECTIONS)
targets = st.sampled_from(TARGETS)
json_scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


def valid_body_for(path: str) -> dict[str, Any]:
    if path.startswith(LWS):
        return lws()
    if path.startswith(CM):
        return configmap()
    if path.startswith(PODS):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fuzzed"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "fuzzed"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "serviceName": "s",
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def target_body(path: str) -> dict[str, Any]:
    """A full replacement of a target, at its current resourceVersion (so only the planted fault refuses it)."""
    body = lws(TARGET) if path.startswith(LWS) else configmap(TARGET)
    body["metadata"]["namespace"] = NS
    body["metadata"]["resourceVersion"] = TARGET_RV
    return body


# --- families --------------------------------------------------------------------------------------

def alias_bomb(depth: int) -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, depth)]
    return ("\n".join(lines) + "\nmetadata: {name: bomb}\n").encode()


@st.composite
def malformed_body(draw: st.DrawFn) -> FuzzRequest:
    """Bodies that cannot decode into an object; POSTed to a collection or PUT over a target."""
    put = draw(st.booleans())
    path = draw(targets) if put else draw(collections)
    valid = dump(target_body(path) if put else valid_body_for(path))
    depth = draw(st.sampled_from([600, 5000, 100_000]))
    variant = draw(st.sampled_from(["truncated", "utf8", "nonobject", "deep_list", "deep_object", "nan",
                                    "empty", "bytes", "yaml_syntax", "yaml_bomb", "yaml_deep", "yaml_tags",
                                    "metadata_type", "yaml_keys"]))
    yaml_ct = "application/yaml"
    ct = "application/json"
    if variant == "truncated":
        body = valid[:draw(st.integers(0, len(valid) - 1))]
    elif variant == "utf8":
        cut = draw(st.integers(1, len(valid) - 2))
        body = valid[:cut] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"])) + valid[cut:]
        body = body.replace(b'"fuzzed"', b'"fu\xffzed"').replace(b'"target"', b'"tar\xffget"')
    elif variant == "nonobject":
        body = dump(draw(st.one_of(json_scalars, st.lists(json_values, max_size=3))))
    elif variant == "deep_list":
        body = b"[" * depth + b"]" * depth
    elif variant == "deep_object":
        body = b'{"metadata":{"name":"deep"},"data":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}"
    elif variant == "nan":
        body = valid[:-1] + b', "zz": ' + draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"])) + b"}"
    elif variant == "empty":
        body = draw(st.sampled_from([b"", b" ", b"\n\t "]))
    elif variant == "bytes":
        body, ct = b"\x00" + draw(st.binary(max_size=64)), draw(st.sampled_from([ct, yaml_ct]))
    elif variant == "yaml_syntax":
        body, ct = draw(st.sampled_from([b"metadata: {name: [", b"a: b: c", b"\tmetadata:\n\t\tname: x",
                                         b"- a\nb: c", b"metadata:\n  name: 'x\n", b"%YAML 9.9\n---\na: 1",
                                         b"a: 1\n---\nb: 2", b"? [a]\n: b"])), yaml_ct
    elif variant == "yaml_bomb":
        body, ct = alias_bomb(draw(st.integers(8, 10))), yaml_ct
    elif variant == "yaml_deep":
        body, ct = b"a: " + b"[" * depth + b"]" * depth, yaml_ct
    elif variant == "yaml_tags":  # plain YAML timestamps are strings (as sigs.k8s.io/yaml reads them): not here
        body, ct = draw(st.sampled_from([
            b"metadata: {name: x}\ndata: {k: !!binary aGk=}", b"metadata: {name: x}\ndata: !!set {a, b}",
            b"!!python/object:os.system {}", b"metadata: {name: x}\ndata: {k: .nan}",
            b"metadata: {name: x}\ndata: {k: -.inf}",
        ])), yaml_ct
    elif variant == "yaml_keys":  # scalar keys become strings (as sigs.k8s.io/yaml does); collections cannot
        body, ct = draw(st.sampled_from([b"metadata: {name: x, labels: {[a]: b}}",
                                         b"metadata: {name: x}\ndata: {{a: 1}: b}",
                                         b"? [a, b]\n: c\nmetadata: {name: x}"])), yaml_ct
    else:  # metadata_type
        obj = json.loads(valid)
        obj["metadata"] = draw(st.sampled_from(["x", 3, ["a"], True]))
        body = dump(obj)
    return FuzzRequest(f"malformed_body/{variant}", "PUT" if put else "POST", path, body, ct)


@st.composite
def wrong_type(draw: st.DrawFn) -> FuzzRequest:
    """A LeaderWorkerSet with one typed field of another JSON type: create it, or replace the target with it."""
    path, kind = draw(st.sampled_from(LWS_FIELDS))
    value = draw(st.sampled_from(WRONG_VALUES.get(kind, ["x"])))
    if path in (("metadata", "name"), ("metadata", "namespace")) or path[:2] == ("metadata", "resourceVersion"):
        value = draw(st.sampled_from([7, True, {"a": "b"}, ["x"]]))
    put = draw(st.booleans())
    body = target_body(LWS) if put else lws("wrongtype")
    set_path(body, path, copy.deepcopy(value))
    query = draw(st.sampled_from(["", "?fieldValidation=Strict", "?fieldValidation=Ignore", "?dryRun=All"]))
    leaf = next((str(k) for k in reversed(path) if isinstance(k, str)), "")
    return FuzzRequest(f"wrong_type/{kind}", "PUT" if put else "POST",
                       (f"{LWS}/{TARGET}" if put else LWS) + query, dump(body), names=(leaf,))


@st.composite
def unknown_fields(draw: st.DrawFn) -> FuzzRequest:
    """A valid LWS or ConfigMap plus an unknown field: Strict refuses (400), Warn answers 201 with a Warning,
    Ignore 201. In a ConfigMap (a built-in) only the top level and metadata: the sim has no typed schema of
    nested built-in fields (`builtin_fields`)."""
    mode = draw(st.sampled_from(["Strict", "Warn", "Ignore", None]))
    is_lws = draw(st.integers(0, 3)) > 0
    preserved = is_lws and draw(st.integers(0, 4)) == 0
    body = lws(generateName="uf-") if is_lws else configmap(generateName="uf-")
    del body["metadata"]["name"]
    where = draw(st.sampled_from(PRESERVED_PATHS if preserved else [(), *LWS_OBJECT_PATHS] if is_lws
                                 else [(), ("metadata",)]))
    unknown = "zz" + draw(names_text)
    set_path(body, (*where, unknown), draw(json_values))
    field_path = dotted((*where, unknown))
    query = f"?dryRun=All&fieldValidation={mode}" if mode else "?dryRun=All"
    collection = LWS if is_lws else CM
    if preserved or mode == "Ignore":
        return FuzzRequest("unknown_fields/accepted", "POST", collection + query, dump(body), expect=ACCEPT)
    if mode == "Strict":
        return FuzzRequest("unknown_fields/strict", "POST", collection + query, dump(body),
                           names=("strict decoding error", f'unknown field "{field_path}"'))
    return FuzzRequest("unknown_fields/warn", "POST", collection + query, dump(body), expect=WARN,
                       names=(f'unknown field \\"{field_path}\\"',))


# Not here: "a in ()", which apimachinery's labels parser reads as `a in ("")` (its grammar comment gives
# "z notin ()" as valid syntax), so kube-apiserver answers 200.
BAD_LABEL_SELECTORS = ["a in (", "a notin b", "(a)", "a=b c", "a==b==c", "!", "!!a", "a in (b,,c",
                       "=b", "a,,b", "a=(b)", "a in (b) c", "a >", "a < b", "-a=b", "a=b*", "x" * 64 + "=b",
                       "a=" + "v" * 64, "a/b/c=d", "a=b,", ",", "a in b)", "a=\u00e9"]
BAD_FIELD_SELECTORS = ["spec.bogus=1", "metadata.labels=x", "metadata.name in (a)", "metadata.name",
                       "metadata.name=a=b", "=x", "status.phase", "metadata.namespace!", "data.k=v", ",="]


@st.composite
def selector(draw: st.DrawFn) -> FuzzRequest:
    """Selectors that do not parse (400) on list, watch and deletecollection; random text on list only."""
    which = draw(st.sampled_from(["labelSelector", "fieldSelector"]))
    random_text = draw(st.integers(0, 3)) == 0
    if random_text:
        text = draw(st.text(alphabet="ab=!,() in-notexists/.*", max_size=20))
    else:
        text = draw(st.sampled_from(BAD_LABEL_SELECTORS if which == "labelSelector" else BAD_FIELD_SELECTORS))
    verb = "list" if random_text else draw(st.sampled_from(["list", "watch", "deletecollection"]))
    query = f"?{which}={quote(text, safe='')}" + ("&watch=true&timeoutSeconds=1" if verb == "watch" else "")
    path = draw(collections) + query
    if random_text:
        return FuzzRequest("selector/random", "GET", path, content_type=None, expect=EITHER)
    return FuzzRequest(f"selector/{verb}", "DELETE" if verb == "deletecollection" else "GET", path,
                       content_type=None, names=("selector|requirement|field label|expected",))


BAD_RVS = ["abc", "-1", "1.5", " 7", "0x10", "1e3", "99999999999999999999999", "\u0663", "7 ", "+7"]


@st.composite
def resource_version(draw: st.DrawFn) -> FuzzRequest:
    """resourceVersions that are not decimal numbers (reads) or not the current one (writes)."""
    rv = draw(st.sampled_from(BAD_RVS))
    q = quote(rv, safe="")
    where = draw(st.sampled_from(["list", "get", "watch", "match", "put", "patch", "delete"]))
    path = draw(targets)
    collection = path.rsplit("/", 1)[0]
    if where == "list":
        return FuzzRequest("resource_version/list", "GET", f"{collection}?resourceVersion={q}", content_type=None,
                           names=("resourceVersion",))
    if where == "get":
        return FuzzRequest("resource_version/get", "GET", f"{path}?resourceVersion={q}", content_type=None,
                           names=("resourceVersion",))
    if where == "watch":
        return FuzzRequest("resource_version/watch", "GET",
                           f"{collection}?watch=true&timeoutSeconds=1&resourceVersion={q}",
                           content_type=None, names=("resourceVersion",))
    if where == "match":
        match = draw(st.sampled_from(["Bogus", "exact", "Exact&continue=abc"]))
        return FuzzRequest("resource_version/match", "GET", f"{collection}?resourceVersionMatch={match}",
                           content_type=None, names=("resourceVersion",))
    rv_value = draw(st.sampled_from([rv, "1", "0", 7, ["1"]]))
    if where == "put":
        body = target_body(path)
        body["metadata"]["resourceVersion"] = rv_value
        if path.startswith(CM):
            body["data"] = {"changed": "yes"}
        else:
            body["spec"]["replicas"] = 3
        return FuzzRequest("resource_version/put", "PUT", path, dump(body))
    if where == "patch":
        body = {"metadata": {"resourceVersion": rv_value}, "data": {"changed": "yes"}} if path.startswith(CM) else \
            {"metadata": {"resourceVersion": rv_value}, "spec": {"replicas": 3}}
        return FuzzRequest("resource_version/patch", "PATCH", path, dump(body), "application/merge-patch+json")
    return FuzzRequest("resource_version/delete", "DELETE", path,
                       dump({"kind": "DeleteOptions", "apiVersion": "v1",
                             "preconditions": {"resourceVersion": rv_value}}))


BAD_MEDIA_TYPES = ["application/vnd.kubernetes.protobuf", "application/cbor", "application/xml", "text/plain",
                   "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/html", "???",
                   "application/", "application/jsonx", "image/png", "application/vnd.kubernetes.protobuf;stream=watch",
                   "application/json-seq"]



def _named_415(ct: str) -> tuple[str, ...]:
    """What a 415 for a POST/PUT body names: kube-apiserver's NegotiateInputSerializer lists the accepted types
    only (lwsconf fidelity requests/bad-requests/unsupported-media-type); the sim's own 415 for a protobuf
    custom resource (kube-apiserver drops that connection) also names the type sent."""
    return (ct.split(";")[0],) if ct.startswith("application/vnd.kubernetes.protobuf") else \
        ("accepted media types include",)

@st.composite
def content_type(draw: st.DrawFn) -> FuzzRequest:
    """A body the server could read, under a media type it does not serve: 415 naming the type.

    Protobuf is served for built-in kinds only, so a protobuf body is sent to the custom resource.
    """
    ct = draw(st.sampled_from(BAD_MEDIA_TYPES))
    method = draw(st.sampled_from(["POST", "PUT", "PATCH"]))
    protobuf = ct.startswith("application/vnd.kubernetes.protobuf")
    if method == "POST":
        path = LWS if protobuf else draw(collections)
        body = valid_body_for(path)
        if ct.startswith("application/vnd.kubernetes.protobuf"):
            body_bytes = b"k8s\x00\n\x0c\n\x02v1\x12\x06Status"  # the protobuf envelope's magic, then junk
        else:
            body_bytes = dump(body)
        return FuzzRequest("content_type/create", method, path + "?dryRun=All", body_bytes, ct, names=_named_415(ct))
    path = TARGETS[0] if protobuf else draw(targets)
    if method == "PUT":
        body = target_body(path)
        body.setdefault("data", {})["changed"] = "yes"
        return FuzzRequest("content_type/update", method, path, dump(body), ct, names=_named_415(ct))
    patch_ct = draw(st.sampled_from([ct, "application/json", "application/yaml", "application/json-patch+jsonx"]))
    # kube-apiserver's 415 for a PATCH names no type: "415: Unsupported Media Type" (go-restful, built-ins) or the
    # accepted ones (custom resources)
    return FuzzRequest("content_type/patch", method, path, dump({"metadata": {"labels": {"changed": "yes"}}}), patch_ct)


JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _bad_json_patch(draw: st.DrawFn, is_lws: bool) -> Any:
    replicas = "/spec/replicas" if is_lws else "/data/k"
    return draw(st.sampled_from([
        {"op": "add", "path": "/x"}, "ops", 3, None, [1, 2], [{}], [{"op": "frobnicate", "path": "/metadata"}],
        [{"op": "add", "value": 1}], [{"op": "add", "path": 5, "value": 1}],
        [{"op": "add", "path": "metadata", "value": 1}],
        [{"op": "move", "path": "/metadata/labels"}], [{"op": "copy", "from": "/nope", "path": "/metadata/labels"}],
        [{"op": "test", "path": "/metadata/name", "value": "other"}],
        [{"op": "remove", "path": "/spec/nope/deeper"}], [{"op": "replace", "path": "/nope/x", "value": 1}],
        [{"op": "add", "path": "/metadata/finalizers/99", "value": "a"}],
        [{"op": "add", "path": "/metadata/name/-", "value": "a"}],
        [{"op": "replace", "path": "", "value": [1]}], [{"op": "replace", "path": "", "value": "x"}],
        [{"op": "replace", "path": "/metadata", "value": 5}],
        [{"op": "replace", "path": "/metadata/name", "value": "other"}],
        [{"op": "replace", "path": replicas, "value": {"a": [1]}}], [{"op": "remove", "path": "/metadata/name"}],
        [{"op": "add", "path": "/metadata/resourceVersion", "value": "1"}],
        [{"op": "add", "path": "/metadata/uid", "value": "not-the-uid"}],
        [{"op": "add", "path": "/metadata/labels", "value": {"a": 5}}],
        [{"op": "add", "path": "/metadata/labels", "value": {"-bad-": "x"}}],
        *([[{"op": "remove", "path": "/spec"}],
           [{"op": "replace", "path": "/spec/leaderWorkerTemplate/size", "value": 0}],
           [{"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/-", "value": 5}]]
          if is_lws else [[{"op": "add", "path": "/data/bad key!", "value": "x"}],
                          [{"op": "add", "path": "/binaryData", "value": {"k": "@@"}}]]),
    ]))


def _bad_merge(draw: st.DrawFn, is_lws: bool) -> Any:
    if is_lws and draw(st.booleans()):
        path, kind = draw(st.sampled_from([f for f in LWS_FIELDS
                                           if 0 not in f[0] and f[0][:2] != ("metadata", "namespace")]))
        doc: dict[str, Any] = {}
        set_path(doc, path, draw(st.sampled_from(WRONG_VALUES.get(kind, ["x"]))))
        return doc
    return draw(st.sampled_from([
        [1], "x", 5, {"metadata": 5}, {"metadata": {"name": "other"}}, {"metadata": {"uid": "other"}},
        {"metadata": {"labels": {"a": {"b": 1}}}}, {"metadata": {"annotations": [1]}},
        {"metadata": {"namespace": "other"}},
        {"metadata": {"finalizers": "x"}}, {"apiVersion": "v2"}, {"kind": "Pod"}, {"metadata": {"name": None}},
        {"metadata": {"generateName": 5}}, {"metadata": {"ownerReferences": [{"apiVersion": "v1"}]}},
        {"metadata": {"resourceVersion": "1"}},
        *([{"spec": None}, {"spec": {"leaderWorkerTemplate": None}}, {"spec": {"replicas": -1}},
           {"spec": {"startupPolicy": "Whenever"}}, {"spec": {"leaderWorkerTemplate": {"size": 0}}},
           {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": None}}}}}] if is_lws else
          [{"data": 5}, {"data": {"k": 5}}, {"data": {"bad key!": "x"}}, {"binaryData": {"k": "not base64!"}},
           {"data": {"k": ["v"]}}, {"immutable": "yes"}]),
    ]))


def _bad_strategic(draw: st.DrawFn) -> Any:
    return draw(st.sampled_from([
        [1], "x", {"data": 5}, {"data": {"k": 5}}, {"$patch": "bogus"},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": 5}}, {"$setElementOrder/data": 5},
        {"metadata": {"$retainKeys": 5}}, {"metadata": {"name": "other"}},
        {"metadata": {"finalizers": [{"$patch": "delete"}]}}, {"metadata": {"labels": {"$patch": "merge", "a": 1}}},
    ]))


def _bad_apply(draw: st.DrawFn, path: str, is_lws: bool) -> tuple[bytes, str]:
    """(body, extra query) of an apply patch that must be refused."""
    good = lws(TARGET) if is_lws else configmap(TARGET)
    variant = draw(st.sampled_from(["no_manager", "yaml", "list", "no_kind", "other_kind", "other_name",
                                    "managed_fields", "wrong_type", "long_manager", "force_conflict_type",
                                    "nul"]))
    query = "?fieldManager=fuzz"
    body: Any = copy.deepcopy(good)
    if variant == "no_manager":
        query = ""
    elif variant == "yaml":
        return draw(st.sampled_from([b"kind: [", b"a: b: c", b"\t- x", b"metadata: {name: [}"])), query
    elif variant == "list":
        body = [good]
    elif variant == "no_kind":
        del body[draw(st.sampled_from(["kind", "apiVersion"]))]
    elif variant == "other_kind":
        body["kind"] = "Pod"
    elif variant == "other_name":
        body["metadata"]["name"] = "someone-else"
    elif variant == "managed_fields":
        body["metadata"]["managedFields"] = [{"manager": "x", "operation": "Apply"}]
    elif variant == "wrong_type":
        if is_lws:
            body["spec"]["replicas"] = "three"
        else:
            body["data"] = {"k": {"nested": 1}}
    elif variant == "long_manager":
        query = "?fieldManager=" + "m" * 200
        body["metadata"]["labels"] = {"changed": "yes"}
    elif variant == "force_conflict_type":
        query = "?fieldManager=fuzz&force=maybe"
        body["metadata"]["labels"] = {"changed": "yes"}
        body["spec" if is_lws else "data"] = 5
    else:
        return b"metadata: {name: \x00}", query
    return dump(body), query


@st.composite
def bad_patch(draw: st.DrawFn) -> FuzzRequest:
    """Every patch type against the targets, each payload one that must not apply."""
    path = draw(targets)
    is_lws = path.startswith(LWS)
    kind = draw(st.sampled_from(["json", "merge", "strategic", "apply"]))
    query = draw(st.sampled_from(["", "", "?fieldValidation=Strict", "?dryRun=Bogus", "?force=true"]))
    if kind == "json":
        body, ct = dump(_bad_json_patch(draw, is_lws)), JSON_PATCH
    elif kind == "merge":
        body, ct = dump(_bad_merge(draw, is_lws)), MERGE
    elif kind == "strategic":
        body, ct = dump(_bad_strategic(draw)), STRATEGIC
    else:
        body, query = _bad_apply(draw, path, is_lws)
        ct = APPLY
    return FuzzRequest(f"bad_patch/{kind}", "PATCH", path + query, body, ct)


@st.composite
def huge_body(draw: st.DrawFn) -> FuzzRequest:
    """Bodies over the 3 MiB request limit: 413 before anything is decoded."""
    size = draw(st.sampled_from([3 * 1024 * 1024 + 1, 4 * 1024 * 1024, 8 * 1024 * 1024]))
    method, path = draw(st.sampled_from([("POST", CM), ("POST", LWS), ("PUT", f"{CM}/{TARGET}"),
                                         ("PATCH", f"{LWS}/{TARGET}")]))
    head = b'{"metadata":{"name":"big"},"data":{"k":"'
    body = head + b"x" * (size - len(head) - 3) + b'"}}'
    ct = MERGE if method == "PATCH" else "application/json"
    return FuzzRequest("huge_body", method, path, body, ct, names=("limit",))


TRAVERSAL_NAMES = ["..", ".", "%2e%2e", "%2E%2e", "..%2F..%2F" + SENTINEL_NS + "%2Fconfigmaps%2Fkeep",
                   f"../../{SENTINEL_NS}/configmaps/keep", f"%2e%2e/%2e%2e/{SENTINEL_NS}/configmaps/keep",
                   "a%2Fb", "%00", "a%00b", "x" * 300, "Bad_Name", "%C3%A4", "%ff", "~", "a%20b", "%25", "a;b",
                   "keep%00", "keep/", "target/..", "target/../../" + SENTINEL_NS + "/configmaps/keep"]
TRAVERSAL_PREFIXES = [f"/api/v1/namespaces/{NS}/configmaps/", f"/api/v1/namespaces/{NS}/../{SENTINEL_NS}/configmaps/",
                      f"/api/v1/namespaces/%2e%2e/{SENTINEL_NS}/configmaps/", "/api/v1/namespaces/../namespaces/"
                      f"{SENTINEL_NS}/configmaps/", f"/apis/{GROUP_VERSION}/namespaces/{NS}/leaderworkersets/"]
"""Not here: `//` and `%2F` spellings of a path that names the sentinel namespace outright. The sim drops empty
path segments, so those are aliases of the plain path (a request that names its target), not escapes."""


@st.composite
def path_traversal(draw: st.DrawFn) -> FuzzRequest:
    """Names and paths that try to escape the fuzz namespace, or are not valid object names at all."""
    prefix = draw(st.sampled_from(TRAVERSAL_PREFIXES))
    name = draw(st.sampled_from(TRAVERSAL_NAMES))
    if "/.." in prefix or "%2e" in prefix:
        name = draw(st.sampled_from(["keep", *TRAVERSAL_NAMES]))
    method = draw(st.sampled_from(["GET", "PUT", "PATCH", "DELETE", "POST"]))
    overwrite = configmap("keep")
    overwrite["data"] = {"overwritten": "by a traversal"}
    body = dump(overwrite) if method in ("PUT", "POST") else (
        dump({"data": {"overwritten": "yes"}}) if method == "PATCH" else b"")
    ct = MERGE if method == "PATCH" else "application/json"
    path = prefix + name + draw(st.sampled_from(["", "/status", "/..", "/%2e%2e"]))
    return FuzzRequest("path_traversal", method, path, body, ct)


@st.composite
def bad_query(draw: st.DrawFn) -> FuzzRequest:
    """Query parameters of the wrong type or outside their enums."""
    param, value, verbs = draw(st.sampled_from([
        ("limit", "abc", ("list",)), ("limit", "1.5", ("list",)), ("limit", "99999999999999999999", ("list",)),
        ("limit", "-1", ("list-ok",)), ("timeoutSeconds", "abc", ("watch",)), ("timeoutSeconds", "inf", ("watch",)),
        ("timeoutSeconds", "nan", ("watch",)), ("timeoutSeconds", "1.5", ("watch",)),
        ("timeoutSeconds", "99999999999999999999", ("watch",)),
        ("gracePeriodSeconds", "abc", ("delete",)), ("gracePeriodSeconds", "1.5", ("delete",)),
        ("propagationPolicy", "Sideways", ("delete",)), ("dryRun", "all", ("create", "delete", "patch")),
        ("dryRun", "Bogus", ("create", "delete", "patch")), ("fieldValidation", "strict", ("create", "patch")),
        ("fieldValidation", "Bogus", ("create", "patch")), ("fieldManager", "m" * 129, ("create", "patch")),
        ("fieldManager", "bad\u0001manager", ("create", "patch")), ("continue", "%%%", ("list",)),
        ("continue", "eyJydiI6MX0", ("list",)), ("continue", "bnVsbA", ("list",)),
        ("sendInitialEvents", "true", ("list",)), ("allowWatchBookmarks", "true", ("list-ok",)),
        ("orphanDependents", "maybe", ("delete-ok",)),
    ]))
    q = f"?{param}={quote(value, safe='')}"
    # kube-apiserver passes strconv.ParseInt's error on without the parameter's name (its parameter codec)
    shown = f"{param}|strconv.ParseInt" if param in ("limit", "timeoutSeconds") else param
    verb = draw(st.sampled_from(verbs))
    path = draw(targets)
    collection = path.rsplit("/", 1)[0]
    if verb in ("list", "list-ok"):
        return FuzzRequest(f"bad_query/{param}", "GET", collection + q, content_type=None,
                           expect=ACCEPT if verb == "list-ok" else REJECT, names=() if verb == "list-ok" else (shown,))
    if verb == "watch":
        return FuzzRequest(f"bad_query/{param}", "GET", collection + q + "&watch=true", content_type=None,
                           names=(shown,))
    if verb == "create":
        body = valid_body_for(collection)
        body["metadata"]["name"] = "badquery"
        return FuzzRequest(f"bad_query/{param}", "POST", collection + q, dump(body), names=(shown,))
    if verb == "patch":
        return FuzzRequest(f"bad_query/{param}", "PATCH", path + q, dump({"metadata": {"labels": {"changed": "yes"}}}),
                           MERGE, names=(shown,))
    if verb == "delete-ok":  # a DELETE of the target would succeed: send it against a name that does not exist
        return FuzzRequest(f"bad_query/{param}", "DELETE", collection + "/absent" + q, content_type=None)
    return FuzzRequest(f"bad_query/{param}", "DELETE", path + q, content_type=None, names=(shown,))


@st.composite
def subresource(draw: st.DrawFn) -> FuzzRequest:
    """/status and /scale of the target LWS (and /scale of a ConfigMap, which has none) with bad bodies."""
    sub = draw(st.sampled_from(["scale", "status"]))
    method = draw(st.sampled_from(["PUT", "PATCH"]))
    path = f"{LWS}/{TARGET}/{sub}" if draw(st.integers(0, 5)) else f"{CM}/{TARGET}/{sub}"
    if sub == "scale":
        doc = draw(st.sampled_from([
            {"spec": 5}, {"spec": {"replicas": "3"}}, {"spec": {"replicas": -1}}, {"spec": {"replicas": 2**40}},
            {"spec": {"replicas": 1.5}}, {"spec": {"replicas": None}}, {"spec": []},
            {"metadata": 5, "spec": {"replicas": 2}},
            {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": TARGET, "resourceVersion": "1"},
             "spec": {"replicas": 2}}, [1], "x",
        ]))
    else:
        doc = draw(st.sampled_from([
            {"status": 5}, {"status": {"replicas": "x"}}, {"status": {"conditions": 5}},
            {"status": {"conditions": [{"type": 5}]}}, {"status": []}, {"metadata": 5}, [1], "x",
            {"status": {"readyReplicas": {"a": 1}}},
        ]))
    if method == "PUT" and isinstance(doc, dict):
        doc = {"apiVersion": GROUP_VERSION if sub == "status" else "autoscaling/v1",
               "kind": "LeaderWorkerSet" if sub == "status" else "Scale",
               "metadata": {"name": TARGET, "namespace": NS, "resourceVersion": TARGET_RV}, **doc}
    ct = draw(st.sampled_from([MERGE, JSON_PATCH])) if method == "PATCH" else "application/json"
    return FuzzRequest(f"subresource/{sub}", method, path, dump(doc), ct)


@st.composite
def pod_subresource(draw: st.DrawFn) -> FuzzRequest:
    """pods/binding, pods/eviction and namespaces/finalize with bodies of the wrong shape; pods/log of an
    unbound pod (no node to ask): each must be refused and leave the pod and the namespace as they were."""
    which = draw(st.sampled_from(["binding", "eviction", "finalize", "log"]))
    if which == "binding":
        doc = draw(st.sampled_from([{"target": 5}, {"target": {"name": 5}}, {"target": {}}, {"target": ["node"]},
                                    {"metadata": 5, "target": {"name": "node"}}, [1],
                                    {"metadata": {"uid": "not-the-uid"}, "target": {"name": "node"}}]))
        return FuzzRequest("pod_subresource/binding", "POST", f"{POD_TARGET}/binding", dump(doc))
    if which == "eviction":
        opts = draw(st.sampled_from([5, "x", [1], {"preconditions": 5}, {"preconditions": {"uid": "not-the-uid"}},
                                     {"dryRun": ["Bogus"]}, {"gracePeriodSeconds": "soon"},
                                     {"propagationPolicy": "Sideways"}]))
        return FuzzRequest("pod_subresource/eviction", "POST", f"{POD_TARGET}/eviction",
                           dump({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": TARGET},
                                 "deleteOptions": opts}))
    if which == "finalize":
        doc = draw(st.sampled_from([{"spec": 5}, {"spec": {"finalizers": 5}}, {"spec": {"finalizers": [5]}},
                                    {"spec": []}, {"metadata": 5}, "x"]))
        return FuzzRequest("pod_subresource/finalize", "PUT", f"/api/v1/namespaces/{NS}/finalize", dump(doc))
    query = draw(st.sampled_from(["", "?tailLines=abc", "?sinceSeconds=-1", "?limitBytes=x", "?container=nope",
                                  "?follow=true", "?previous=true"]))
    return FuzzRequest("pod_subresource/log", "GET", f"{POD_TARGET}/log{query}", content_type=None)


FAMILIES = {
    "malformed_body": malformed_body(), "wrong_type": wrong_type(), "unknown_fields": unknown_fields(),
    "selector": selector(), "resource_version": resource_version(), "content_type": content_type(),
    "bad_patch": bad_patch(), "huge_body": huge_body(), "path_traversal": path_traversal(),
    "bad_query": bad_query(), "subresource": subresource(), "pod_subresource": pod_subresource(),
}
any_request = st.one_of(*FAMILIES.values())
