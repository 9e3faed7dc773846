"""Server-side apply: create by apply, re-apply, a second manager's conflict (409 with causes),
force, giving up a field, apply after an Update manager, and managedFields as read back."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import APPS, CORE, get, patch
from lwsconf.fidelity.model import APPLY, MERGE, Scenario, Step

CM = f"{CORE}/configmaps/applied"
DEP = f"{APPS}/deployments/web"


def _cm(data: str, labels: str = "") -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n{labels}data:\n{data}"


def _dep(image: str, replicas: int | None = None) -> str:
    lines = ["apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: web", "spec:"]
    if replicas is not None:
        lines.append(f"  replicas: {replicas}")
    lines += ["  selector:", "    matchLabels: {app: web}", "  template:", "    metadata:", "      labels: {app: web}",
              "    spec:", "      automountServiceAccountToken: false", "      containers:",
              f"      - name: main\n        image: {image}"]
    return "\n".join(lines) + "\n"


def _apply(name: str, path: str, body: str, manager: str, force: bool = False) -> Step:
    query = {"fieldManager": manager}
    if force:
        query["force"] = "true"
    return patch(name, path, body, APPLY, query=query)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("apply", "apply-configmap", (
        _apply("create-by-apply", CM, _cm("  a: '1'\n  b: '2'\n"), "alice"),
        _apply("reapply-same", CM, _cm("  a: '1'\n  b: '2'\n"), "alice"),
        _apply("other-manager-conflict", CM, _cm("  a: 'changed'\n"), "bob"),
        _apply("other-manager-same-value", CM, _cm("  a: '1'\n"), "bob"),
        _apply("other-manager-force", CM, _cm("  a: 'forced'\n"), "carol", force=True),
        _apply("drop-field", CM, _cm("  a: '1'\n"), "alice"),
        get("after-drop", CM),
        _apply("add-labels", CM, _cm("  a: '1'\n", "  labels:\n    team: x\n"), "alice"),
        patch("update-manager-merge", CM, {"data": {"u": "1"}}, MERGE, query={"fieldManager": "dave"}),
        _apply("apply-over-update-manager", CM, _cm("  u: '2'\n"), "erin"),
        get("managed-fields", CM),
        _apply("kind-mismatch", CM, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\n",
               "alice"),
        _apply("name-mismatch", CM, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
               "alice"),
        _apply("not-yaml", CM, "a: [unclosed\n", "alice"),
        _apply("force-without-conflict", CM, _cm("  a: '1'\n"), "alice", force=True),
    )),
    Scenario("apply", "apply-deployment", (
        _apply("create-by-apply", DEP, _dep("busybox:1.36", 2), "ci"),
        _apply("change-image", DEP, _dep("busybox:1.37", 2), "ci"),
        _apply("hpa-takes-replicas-conflict", DEP, _dep("busybox:1.37", 5), "hpa"),
        _apply("hpa-forces-replicas", DEP, _dep("busybox:1.37", 5), "hpa", force=True),
        _apply("ci-drops-replicas", DEP, _dep("busybox:1.37"), "ci"),
        get("read-back", DEP),
        _apply("invalid-apply", DEP, _dep("busybox:1.37", -1), "ci"),
        patch("dry-run-apply", DEP, _dep("busybox:1.38"), APPLY, query={"fieldManager": "ci", "dryRun": "All"}),
        get("unchanged-after-dry-run", DEP),
    )),
)
