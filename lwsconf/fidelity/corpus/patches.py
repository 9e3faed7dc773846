"""Every patch type: JSON merge patch, strategic merge patch (keyed lists, directives), JSON patch
(every op, failing `test`, bad paths), preconditions carried in a patch, and unsupported media types."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import APPS, CORE, configmap, create, deployment, get, patch
from lwsconf.fidelity.model import JSON, JSON_PATCH, MERGE, STRATEGIC, Scenario

CM = f"{CORE}/configmaps/cm"
DEP = f"{APPS}/deployments/web"

MERGE_PATCH = Scenario("patches", "patch-merge", (
    create("create", f"{CORE}/configmaps", configmap("cm", {"a": "1", "b": "2"}, {"x": "1"})),
    patch("add-key", CM, {"data": {"c": "3"}}, MERGE),
    patch("remove-key-null", CM, {"data": {"a": None}}, MERGE),
    patch("replace-labels", CM, {"metadata": {"labels": {"y": "2"}}}, MERGE),
    patch("empty-patch", CM, {}, MERGE),
    patch("not-an-object", CM, "[1,2]", MERGE),
    patch("malformed", CM, "{", MERGE),
    patch("change-name", CM, {"metadata": {"name": "other"}}, MERGE),
    patch("missing-object", f"{CORE}/configmaps/absent", {"data": {"a": "1"}}, MERGE),
    patch("stale-rv-precondition", CM, {"metadata": {"resourceVersion": "1"}, "data": {"z": "9"}}, MERGE),
    patch("wrong-type", CM, {"data": {"a": 5}}, MERGE),
    get("final", CM),
))

STRATEGIC_PATCH = Scenario("patches", "patch-strategic", (
    create("create", f"{APPS}/deployments", deployment("web")),
    patch("add-container", DEP, {"spec": {"template": {"spec": {"containers": [
        {"name": "side", "image": "busybox:1.36"}]}}}}, STRATEGIC),
    patch("update-container-by-name", DEP, {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "busybox:1.37"}]}}}}, STRATEGIC),
    patch("delete-container-directive", DEP, {"spec": {"template": {"spec": {"containers": [
        {"name": "side", "$patch": "delete"}]}}}}, STRATEGIC),
    patch("add-env-merge", DEP, {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "env": [{"name": "A", "value": "1"}]}]}}}}, STRATEGIC),
    patch("replace-directive", DEP, {"spec": {"template": {"metadata": {"labels": {
        "$patch": "replace", "app": "web"}}}}}, STRATEGIC),
    patch("retain-keys-strategy", DEP, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
          STRATEGIC),
    patch("invalid-replicas", DEP, {"spec": {"replicas": -3}}, STRATEGIC),
    patch("bad-directive", DEP, {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "$patch": "explode"}]}}}}, STRATEGIC),
    get("final", DEP),
    create("cm-for-strategic", f"{CORE}/configmaps", configmap("cm2")),
    patch("strategic-on-configmap", f"{CORE}/configmaps/cm2", {"data": {"b": "2"}}, STRATEGIC),
))

JSON_PATCHES = Scenario("patches", "patch-json", (
    create("create", f"{CORE}/configmaps", configmap("cm", {"a": "1"})),
    patch("add", CM, [{"op": "add", "path": "/data/b", "value": "2"}], JSON_PATCH),
    patch("replace", CM, [{"op": "replace", "path": "/data/a", "value": "10"}], JSON_PATCH),
    patch("copy", CM, [{"op": "copy", "from": "/data/a", "path": "/data/c"}], JSON_PATCH),
    patch("move", CM, [{"op": "move", "from": "/data/c", "path": "/data/d"}], JSON_PATCH),
    patch("remove", CM, [{"op": "remove", "path": "/data/d"}], JSON_PATCH),
    patch("test-passes", CM, [{"op": "test", "path": "/data/a", "value": "10"},
                              {"op": "add", "path": "/data/e", "value": "5"}], JSON_PATCH),
    patch("test-fails", CM, [{"op": "test", "path": "/data/a", "value": "999"},
                             {"op": "add", "path": "/data/f", "value": "6"}], JSON_PATCH),
    patch("remove-missing", CM, [{"op": "remove", "path": "/data/nope"}], JSON_PATCH),
    patch("replace-missing", CM, [{"op": "replace", "path": "/data/nope", "value": "x"}], JSON_PATCH),
    patch("add-label-escaped", CM, [{"op": "add", "path": "/metadata/labels", "value": {"a/b": "c"}}], JSON_PATCH),
    patch("add-label-tilde", CM, [{"op": "add", "path": "/metadata/labels/x~1y", "value": "z"}], JSON_PATCH),
    patch("bad-op", CM, [{"op": "frobnicate", "path": "/data/a"}], JSON_PATCH),
    patch("not-a-list", CM, {"op": "add", "path": "/data/a", "value": "1"}, JSON_PATCH),
    patch("rv-test-op", CM, [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}], JSON_PATCH),
    get("final", CM),
))

MEDIA = Scenario("patches", "patch-media", (
    create("create", f"{CORE}/configmaps", configmap("cm")),
    patch("plain-json-type", CM, {"data": {"a": "2"}}, JSON),
    patch("text-plain", CM, "data: {}", "text/plain"),
    patch("apply-without-manager", CM, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
          "application/apply-patch+yaml"),
))

SCENARIOS: tuple[Scenario, ...] = (MERGE_PATCH, STRATEGIC_PATCH, JSON_PATCHES, MEDIA)
