"""The emulator's LWS manifest (`workloads.emulator_lws`): the shape every serving scenario deploys.

Fast and clusterless: what the pods are told (env from the downward API, ports, the leader-only
readiness probe) is what makes the emulator form its group on any cluster, so a slip here would show
only as a group that never gets Ready. tests/serving/test_emulator_on_sim.py runs it for real.
"""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf import emulator, workloads
from lwsconf.sim.nodes.runtime import runtime

Obj = dict[str, Any]


def containers(lws: Obj) -> dict[str, Obj]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return {role: lwt[f"{role}Template"]["spec"]["containers"][0] for role in ("leader", "worker")}


def env_of(container: Obj) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_configmap_carries_the_emulator_program_under_the_mounted_name() -> None:
    cm = workloads.emulator_configmap()
    assert (cm["kind"], cm["metadata"]["name"]) == ("ConfigMap", workloads.EMULATOR_CONFIGMAP)
    assert cm["data"] == {"emulator.py": emulator.source()}
    container = containers(workloads.emulator_lws("x"))["leader"]
    assert container["command"][1] == f"{workloads.EMULATOR_MOUNT}/emulator.py"


def test_lws_shape_groups_size_and_a_volume_from_the_configmap_in_both_templates() -> None:
    lws = workloads.emulator_lws("serve", replicas=2, size=3)
    assert (lws["apiVersion"], lws["kind"], lws["metadata"]["name"]) == (workloads.API_VERSION, "LeaderWorkerSet",
                                                                        "serve")
    assert lws["spec"]["replicas"] == 2 and lws["spec"]["leaderWorkerTemplate"]["size"] == 3
    assert "rolloutStrategy" not in lws["spec"] and "restartPolicy" not in lws["spec"]["leaderWorkerTemplate"]
    for role in ("leader", "worker"):
        pod_spec = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]["spec"]
        assert pod_spec["volumes"] == [{"name": "lwsconf-emulator",
                                        "configMap": {"name": workloads.EMULATOR_CONFIGMAP}}]
        assert pod_spec["terminationGracePeriodSeconds"] == 10


def test_env_names_revision_label_pod_ip_and_ports_and_leaves_lws_variables_to_the_implementation() -> None:
    for role, c in containers(workloads.emulator_lws("x", env={"LWSCONF_MODEL": "m"})).items():
        env = env_of(c)
        assert env["LWSCONF_REVISION"] == {"fieldRef": {"fieldPath":
                                           "metadata.labels['leaderworkerset.sigs.k8s.io/template-revision-hash']"}}
        assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
        assert (env["LWSCONF_PORT"], env["LWSCONF_RENDEZVOUS_PORT"]) == ("8080", "29500")
        assert env["LWSCONF_MODEL"] == "m", role
        assert not [name for name in env if name.startswith("LWS_")], f"{role}: LWS_* is the implementation's job"


def test_only_the_leader_is_probed_on_health_and_only_it_exposes_the_rendezvous_port() -> None:
    leader, worker = containers(workloads.emulator_lws("x")).values()
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert "readinessProbe" not in worker
    assert {p["name"]: p["containerPort"] for p in leader["ports"]} == {"http": 8080, "rendezvous": 29500}
    assert worker["ports"] == [{"name": "http", "containerPort": 8080}]
    for c in (leader, worker):
        assert "lifecycle" not in c, "preStop is left to the tests that want one"


def test_a_prestop_sleep_goes_on_the_leader_only() -> None:
    """Only leaders are behind the Service; workers are deleted after their leader pod is gone."""
    leader, worker = containers(workloads.emulator_lws("x", prestop_seconds=3, grace_seconds=20)).values()
    assert leader["lifecycle"] == {"preStop": {"sleep": {"seconds": 3}}}
    assert "lifecycle" not in worker


def test_drain_finishes_inside_the_grace_period() -> None:
    lws = workloads.emulator_lws("x", grace_seconds=7)
    for c in containers(lws).values():
        assert env_of(c)["LWSCONF_DRAIN_TIMEOUT"] == "6"
    with pytest.raises(ValueError, match="grace_seconds=1"):
        workloads.emulator_lws("x", grace_seconds=1)


def test_the_sim_runs_both_containers_as_real_processes() -> None:
    """The sim only runs python programs from a mounted volume; anything else it would merely emulate."""
    for role, c in containers(workloads.emulator_lws("x")).items():
        assert runtime.runnable(c), role
