"""The reference DisaggregatedSet controller end to end on the sim, beside the reference LWS controller: real
(simulated) pods, readiness and Services, through the Kubernetes API only. Upstream's e2e cases it mirrors are
named per test (docs/disaggregatedset-contract.md section 6)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from fixtures.implementations import bundled
from lwsconf import disaggapi, workloads
from lwsconf.reconciler import run
from lwsconf.waits import core, observe
from tests import sim_e2e

CRD_DIR = Path(__file__).resolve().parents[3] / "manifests" / "crd"


@pytest.fixture(scope="module")
def sim() -> Iterator[sim_e2e.Sim]:
    with sim_e2e.running_cluster() as running:
        bundled.install_crd(running.api, running.t)
        ext = client.ApiextensionsV1Api(running.api)
        for name in ("disaggregatedsets.yaml", "disaggregatedsetrolescalers.yaml"):
            ext.create_custom_resource_definition(yaml.safe_load((CRD_DIR / name).read_text()))
        with run.RunningReconciler(running.kubeconfig, disaggregated=True):
            yield running


@pytest.fixture
def ns(sim: sim_e2e.Sim, request: pytest.FixtureRequest) -> Iterator[str]:
    with sim_e2e.fresh_namespace(sim, request.node.name, wait_for_pods_gone=True) as name:
        yield name


def _role(name: str, replicas: int, tag: str = "v1") -> dict[str, Any]:
    template = workloads.probe_pod_template(labels={"tag": tag})
    return {"name": name, "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 1,
                                                                                  "workerTemplate": template}}}


def _lws_counts(sim: sim_e2e.Sim, ns: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(role, tag) -> (spec.replicas, status.readyReplicas) over the set's LWS."""
    items = client.CustomObjectsApi(sim.api).list_namespaced_custom_object(
        workloads.GROUP, workloads.VERSION, ns, workloads.PLURAL, label_selector=disaggapi.NAME)["items"]
    out = {}
    for lws in items:
        tag = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]["tag"]
        out[(lws["metadata"]["labels"][disaggapi.ROLE], tag)] = (lws["spec"]["replicas"],
                                                                  (lws.get("status") or {}).get("readyReplicas", 0))
    return out


def test_a_set_comes_up_rolls_to_a_new_template_and_keeps_its_roles_together(sim: sim_e2e.Sim, ns: str) -> None:
    """E3 (one LWS per role), E7 (role Services once ready), E4 (both roles roll together, no role orphaned),
    and the set's Available condition (main's status)."""
    api = client.CustomObjectsApi(sim.api)
    body = {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND, "metadata": {"name": "pd"},
            "spec": {"roles": [_role("prefill", 2), _role("decode", 2)]}}
    api.create_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, ns, disaggapi.PLURAL, body)

    def available() -> dict[str, Any]:
        ds = api.get_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, ns, disaggapi.PLURAL, "pd")
        conds = {c["type"]: c["status"] for c in (ds.get("status") or {}).get("conditions") or []}
        if conds.get("Available") != "True":
            raise core.NotYet(f"conditions {conds}, LWS {_lws_counts(sim, ns)}")
        return ds
    ds = core.wait_until(available, what="the set to be Available", timeout=sim.t.lws_available,
                         poll=sim.t.poll_interval, describe=lambda: observe.describe_namespace(sim.api, ns, None))
    assert _lws_counts(sim, ns) == {("prefill", "v1"): (2, 2), ("decode", "v1"): (2, 2)}
    services = client.CoreV1Api(sim.api).list_namespaced_service(ns, label_selector=disaggapi.NAME).items
    assert sorted(s.metadata.name.rsplit("-", 2)[-2] for s in services) == ["decode", "prefill"]
    assert all(s.spec.cluster_ip == "None" and not s.spec.ports for s in services)

    updated = copy.deepcopy(ds["spec"])
    updated["roles"] = [_role("prefill", 2, "v2"), _role("decode", 2, "v2")]
    api.patch_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, ns, disaggapi.PLURAL, "pd",
                                       {"spec": updated})
    seen: list[dict[tuple[str, str], tuple[int, int]]] = []

    def rolled() -> None:
        now = _lws_counts(sim, ns)
        if not seen or seen[-1] != now:
            seen.append(now)
        old = [now.get(("prefill", "v1"), (0, 0))[0], now.get(("decode", "v1"), (0, 0))[0]]
        assert all(old) or not any(old), f"the old revision served with one role gone: {now}"  # E4
        if now != {("prefill", "v2"): (2, 2), ("decode", "v2"): (2, 2)}:
            raise core.NotYet(f"LWS {now}")
    core.wait_until(rolled, what="the rollout to v2 to finish and the old LWS to go", timeout=sim.t.rollout_complete,
                    poll=sim.t.poll_interval, describe=lambda: str(seen))
    assert len(seen) > 2, f"the rollout went in steps: {seen}"
