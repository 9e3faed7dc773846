"""The shipped MutatingAdmissionPolicies (`manifests/crd/mutating-admission-policy.yaml`) on the sim API server.

The first replaces the one step of upstream's pod webhook that templates cannot express (contract 3.4 step 2):
a UniquePerReplica leader pod gets `spec.subdomain = <its name>` at CREATE. The second does the rewrites of
upstream's LWS webhook that CRD defaults cannot (contract 1.3 step 2): `restartPolicy: Default` stored as
`None`, explicit empty `restartPolicy` and `rolloutStrategy.type` defaulted, on CREATE and UPDATE, as upstream
v0.9.0 does at admission (checked on kube-apiserver 1.37.2, conformance/README.md). Pods are built from the
reference's own leader template (`desired.leader_statefulset`) as the StatefulSet controller stamps them
(name `N-i`, subdomain = serviceName `N`), so the test also pins the labels and annotation the policy
keys on. Installed through the harness (`fixtures.implementations.bundled.install_mutating_policy`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.implementations import bundled
from lwsconf.features import Feature
from lwsconf.reconciler import desired
from lwsconf.sim.apiserver.storage import resources
from tests.conftest import SimAPI, start_sim_api
from tests.reconciler.lws_api import LwsAPI, describe, edit, lws

PODS = "/api/v1/namespaces/default/pods"
MAPS = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimAPI]:
    api, loop = start_sim_api(tmp_path)
    yield api
    api.api.close()
    loop.run(api.server.stop())
    loop.stop()


@pytest.fixture
def installed(sim: SimAPI) -> SimAPI:
    assert bundled.install_mutating_policy(sim.api) == {}
    return sim


def leader_template(policy: str) -> dict[str, Any]:
    """The reference's leader pod template for an LWS `lead` with this subdomainPolicy."""
    obj = lws("lead")
    obj["metadata"]["namespace"] = "default"
    obj["spec"]["networkConfig"] = {"subdomainPolicy": policy}
    sts = desired.leader_statefulset(obj, revision_key="rev", partition=0, replicas=1)
    assert sts["spec"]["serviceName"] == "lead"
    template: dict[str, Any] = sts["spec"]["template"]
    return template


def stamped(template: dict[str, Any], name: str, **labels: str) -> dict[str, Any]:
    """A pod as the StatefulSet controller creates it from `template` (subdomain = serviceName)."""
    meta = {**template["metadata"], "name": name}
    meta["labels"] = {**meta["labels"], **labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {**template["spec"], "hostname": name, "subdomain": "lead"}}


def create(sim: SimAPI, pod: dict[str, Any]) -> dict[str, Any]:
    reply = sim.request("POST", PODS, json=pod)
    assert reply.status_code == 201, describe(reply)
    created: dict[str, Any] = reply.json()
    return created


def test_manifest_holds_three_policies_each_with_its_binding() -> None:
    """The pod policies act on CREATE only (a pod's subdomain and env are immutable); the LWS one on CREATE and
    UPDATE, as upstream's LWS webhook, and never on subresources (status and scale writes are the controller's).
    The TPU env policy is tested in test_tpu.py."""
    docs = list(yaml.safe_load_all(bundled.MAP_FILE.read_text()))
    policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "MutatingAdmissionPolicy"}
    bound = {d["spec"]["policyName"] for d in docs if d["kind"] == "MutatingAdmissionPolicyBinding"}
    assert bound == set(policies), (bound, set(policies))
    rules = {name: [(r["resources"], r["operations"]) for r in p["spec"]["matchConstraints"]["resourceRules"]]
             for name, p in policies.items()}
    assert rules == {"leaderworkerset-unique-leader-subdomain": [(["pods"], ["CREATE"])],
                     "leaderworkerset-defaults": [(["leaderworkersets"], ["CREATE", "UPDATE"])],
                     "leaderworkerset-tpu-env": [(["pods"], ["CREATE"])]}, rules


def test_unique_per_replica_leader_gets_its_own_name_as_subdomain(installed: SimAPI) -> None:
    pod = create(installed, stamped(leader_template("UniquePerReplica"), "lead-1"))
    assert pod["spec"]["subdomain"] == "lead-1", pod["spec"]
    assert installed.request("GET", f"{PODS}/lead-1").json()["spec"]["subdomain"] == "lead-1"


@pytest.mark.parametrize("policy, name, labels", [
    ("Shared", "lead-0", {}),
    ("UniquePerReplica", "lead-0-1", {WORKER_INDEX: "1"}),
], ids=["shared-leader", "worker-with-the-annotation"])
def test_other_pods_keep_their_subdomain(installed: SimAPI, policy: str, name: str, labels: dict[str, str]) -> None:
    pod = create(installed, stamped(leader_template(policy), name, **labels))
    assert pod["spec"]["subdomain"] == "lead", pod["spec"]


def test_pod_without_the_lws_name_label_is_untouched(installed: SimAPI) -> None:
    pod = stamped(leader_template("UniquePerReplica"), "stray-0")
    del pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/name"]
    assert create(installed, pod)["spec"]["subdomain"] == "lead"


def test_installing_again_replaces_the_policy(installed: SimAPI) -> None:
    path = f"{MAPS}/leaderworkerset-unique-leader-subdomain"
    edited = installed.request("PATCH", path, data='{"spec": {"failurePolicy": "Ignore"}}',
                               headers={"Content-Type": "application/merge-patch+json"})
    assert edited.status_code == 200, describe(edited)
    assert bundled.install_mutating_policy(installed.api) == {}  # 409 on create -> read, replace
    assert installed.request("GET", path).json()["spec"]["failurePolicy"] == "Fail"


def test_a_cluster_without_the_api_withdraws_the_unique_subdomain_feature(sim: SimAPI) -> None:
    older = tuple(i for i in resources.BUILTINS if not i.plural.startswith("mutatingadmissionpolic"))
    sim.server.ctx.registry = resources.Registry(older)  # as a Kubernetes 1.35 API server
    cannot = bundled.install_mutating_policy(sim.api)
    assert list(cannot) == [Feature.SUBDOMAIN_UNIQUE_PER_REPLICA, Feature.TPU_ENV_INJECTION], cannot
    assert "does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy" in cannot[
        Feature.SUBDOMAIN_UNIQUE_PER_REPLICA], cannot


@pytest.fixture
def lws_api(installed: SimAPI) -> LwsAPI:
    """The sim with the CRD and the policies installed."""
    wrapped = LwsAPI(installed)
    reply = wrapped.install_crd()
    assert reply.status_code == 201, describe(reply)
    return wrapped


RESTART = "spec.leaderWorkerTemplate.restartPolicy"
ROLLOUT_TYPE = "spec.rolloutStrategy.type"


@pytest.mark.parametrize("sent, stored", [
    ({RESTART: "Default"}, {RESTART: "None"}),
    ({RESTART: ""}, {RESTART: "RecreateGroupOnPodRestart"}),
    ({"spec.rolloutStrategy": {"type": ""}}, {ROLLOUT_TYPE: "RollingUpdate"}),
    ({RESTART: "None", "spec.rolloutStrategy": {"type": "RollingUpdate"}},
     {RESTART: "None", ROLLOUT_TYPE: "RollingUpdate"}),
], ids=["default-to-none", "empty-restart-policy", "empty-rollout-type", "explicit-values-untouched"])
def test_lws_create_is_defaulted_as_upstreams_webhook_does(lws_api: LwsAPI, sent: dict[str, Any],
                                                          stored: dict[str, Any]) -> None:
    reply = lws_api.create(edit(lws("made"), sent))
    assert reply.status_code == 201, describe(reply)
    got = lws_api.get("made")
    for path, want in stored.items():
        node: Any = got
        for key in path.split("."):
            node = node[key]
        assert node == want, (path, node, got["spec"])
    assert got["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "maxUnavailable": 1, "maxSurge": 0, "partition": 0}, got["spec"]


@pytest.mark.parametrize("sent, stored", [
    ({RESTART: "Default"}, "None"),
    ({RESTART: ""}, "RecreateGroupOnPodRestart"),
], ids=["default-to-none", "empty-restart-policy"])
def test_lws_update_is_defaulted_too(lws_api: LwsAPI, sent: dict[str, Any], stored: str) -> None:
    assert lws_api.create(lws("kept")).status_code == 201
    reply = lws_api.update("kept", sent)
    assert reply.status_code == 200, describe(reply)
    assert lws_api.get("kept")["spec"]["leaderWorkerTemplate"]["restartPolicy"] == stored


def test_lws_enums_still_refuse_other_values(lws_api: LwsAPI) -> None:
    """The policy defaults only what upstream's webhook does; `startupPolicy: ""` stays refused (trap T15)."""
    for sent in ({RESTART: "Always"}, {"spec.startupPolicy": ""}, {"spec.rolloutStrategy": {"type": "Recreate"}}):
        reply = lws_api.create(edit(lws("refused"), sent))
        assert reply.status_code == 422, (sent, describe(reply))
