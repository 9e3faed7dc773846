"""TPU environment injection (docs/lws-contract.md section 3.5), observed inside the running containers.

Pods of an LWS whose containers request `google.com/tpu` get TPU_WORKER_HOSTNAMES, TPU_WORKER_ID, TPU_NAME,
TPU_PROCESS_ADDRESSES and TPU_PROCESS_PORT in their TPU containers (upstream `pkg/utils/accelerators/tpu.go`,
called from `pkg/webhooks/pod_webhook.go:167-171`). The probe serves its environment at /env, so each test
reads what the process sees, pod by pod. The cases are those of upstream's pod webhook integration tests
(test/integration/webhooks/pod_test.go) and e2e tests (test/e2e/e2e_test.go:204-361) that a running cluster
can show: a leader that requests TPUs or not, with and without subgroups, several TPU containers beside a
non-TPU one, UniquePerReplica host names, user entries, and no variables for pods without TPUs or outside an
LWS. The sim's and local's CPU nodes carry fake `google.com/tpu` devices (lwsconf/sim/nodes/layout.py).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.harness import LWSHarness, P, assert_fields, labels
from conformance.rollouts import leader_revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import proxy

Obj = dict[str, Any]
TPU_VARS = ("TPU_WORKER_HOSTNAMES", "TPU_WORKER_ID", "TPU_NAME", "TPU_PROCESS_ADDRESSES", "TPU_PROCESS_PORT")
ONE_TPU = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"google.com/tpu": "1"}}
WHY = {"TPU_WORKER_HOSTNAMES": "the group's TPU hosts <pod>.<subdomain> in worker order (3.5)",
       "TPU_WORKER_ID": "this container's place in that list (3.5)", "TPU_NAME": "the leader pod's name (3.5)",
       "TPU_PROCESS_ADDRESSES": "each host with :<port> (3.5)", "TPU_PROCESS_PORT": "8476 + TPU container index (3.5)"}
SECOND_PORT, PLAIN_PORT = workloads.SIDECAR_PORT, workloads.SIDECAR_PORT + 1


def _tpu_lws(name: str, *, size: int, leader_tpus: bool = True, replicas: int = 1, subgroup: int | None = None,
             network: Obj | None = None) -> Obj:
    """A probe LWS whose workers (and, with `leader_tpus`, leader) request one google.com/tpu."""
    out = workloads.probe_lws(name, replicas=replicas, size=size, network=network,
                              subgroup={"subGroupSize": subgroup} if subgroup else None)
    lwt = out["spec"]["leaderWorkerTemplate"]
    for key in ("leaderTemplate", "workerTemplate") if leader_tpus else ("workerTemplate",):
        lwt[key]["spec"]["containers"][0]["resources"] = copy.deepcopy(ONE_TPU)
    return out


def _seen(lws: LWSHarness, pod: str, port: int = workloads.PROBE_PORT) -> dict[str, str]:
    """The TPU variables the probe listening on `port` in `pod` has in its environment."""
    def _probe_must_serve_env() -> Obj:
        got: Obj = proxy.pod_get(lws.api, lws.namespace, pod, port, "/env", timeout=lws.t.request_timeout).json()
        return got
    env = lws.wait(_probe_must_serve_env, what=f"the probe on port {port} of pod {pod} to serve /env",
                   within="pods_running")
    return {k: v for k, v in env.items() if k in TPU_VARS}


def _want(hosts: list[str], worker_id: int, name: str, port: int = 8476) -> dict[str, str]:
    return {"TPU_WORKER_HOSTNAMES": ",".join(hosts), "TPU_WORKER_ID": str(worker_id), "TPU_NAME": name,
            "TPU_PROCESS_ADDRESSES": ",".join(f"{h}:{port}" for h in hosts), "TPU_PROCESS_PORT": str(port)}


def _check(lws: LWSHarness, pod: str, want: dict[str, str], port: int = workloads.PROBE_PORT,
           container: str = "its TPU container") -> None:
    assert_fields(f"pod {pod} {container}'s TPU environment", want, _seen(lws, pod, port), exact=True, why=WHY)


def _check_pods(lws: LWSHarness, cases: list[tuple[str, dict[str, str]]]) -> None:
    """`_check` for every (pod, want), all reported together: one wrong pod does not hide the others."""
    wrong = []
    for pod, want in cases:
        try:
            _check(lws, pod, want)
        except AssertionError as exc:
            wrong.append(str(exc))
    assert not wrong, "\n".join(wrong)


def _subgroup_labels_must_be(lws: LWSHarness, name: str, want: dict[str, str]) -> None:
    """Each pod's `subgroup-index` label is `want[pod]` (4.8: a TPU leader does not change the formula, T23)."""
    def subgroup_indexes_as_in_4_8() -> None:
        pods = lws.pods(name)
        got = {pod: labels(pods[pod]).get(P + "subgroup-index") for pod in want}
        assert got == want, f"subgroup-index labels {got}, want {want} (4.8, T23)"
    lws.wait(subgroup_indexes_as_in_4_8, what=f"LWS {name}'s subgroup-index labels", within="pods_running", name=name)


def _check_none(lws: LWSHarness, pod: str, why: str, port: int = workloads.PROBE_PORT) -> None:
    seen = _seen(lws, pod, port)
    assert not seen, f"pod {pod} (port {port}) sees {seen}, want no TPU variables: {why} (3.5)"


@conformance(short_name="TPUEnvWhenLeaderRequestsTPUs", features={Feature.TPU_ENV_INJECTION},
             description="Leader and workers requesting google.com/tpu: every pod lists N-i.N, N-i-1.N ... in order, "
                         "its id is its worker index, TPU_NAME is its leader, and every listed host answers as that "
                         "pod (3.5).")
def test_tpu_env_when_leader_requests_tpus(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("tpu", replicas=2, size=3))
    lws.ready("tpu", replicas=2, size=3)
    for group in (0, 1):
        leader = f"tpu-{group}"
        hosts = [f"{leader}.tpu", f"{leader}-1.tpu", f"{leader}-2.tpu"]
        pods = [leader, f"{leader}-1", f"{leader}-2"]
        _check_pods(lws, [(pod, _want(hosts, w, leader)) for w, pod in enumerate(pods)])
        for host in hosts:  # the list names the group's pods, leader first, by names that resolve
            answer = lws.probe_json(leader, "/peer", host=host, port=str(workloads.PROBE_PORT))
            got = (answer.get("answer") or {}).get("pod")
            assert got == host.split(".")[0], f"{leader} -> TPU host {host} answered as {got!r}: {answer}"


@conformance(short_name="TPUEnvWhenOnlyWorkersRequestTPUs", features={Feature.TPU_ENV_INJECTION},
             description="A leader without TPUs gets no TPU variables; its workers list only N-i-1.N ... and number "
                         "themselves from 0 (worker index - 1) (3.5).")
def test_tpu_env_when_only_workers_request_tpus(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("wtpu", size=4, leader_tpus=False))
    lws.ready("wtpu", replicas=1, size=4)
    _check_none(lws, "wtpu-0", "the leader requests no TPUs")
    hosts = ["wtpu-0-1.wtpu", "wtpu-0-2.wtpu", "wtpu-0-3.wtpu"]
    _check_pods(lws, [(f"wtpu-0-{w}", _want(hosts, w - 1, "wtpu-0")) for w in (1, 2, 3)])


@conformance(short_name="TPUEnvPerSubgroupWithTPULeader", features={Feature.TPU_ENV_INJECTION, Feature.SUBGROUPS},
             description="Size 4, subGroupSize 2, leader with TPUs: L and L-1 list L.N,L-1.N; L-2 and L-3 list "
                         "L-2.N,L-3.N; ids are the place in the subgroup, 0 on the leader; subgroup-index 0,0,1,1 "
                         "(3.5, 4.8).")
def test_tpu_env_per_subgroup_with_tpu_leader(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("sgt", size=4, subgroup=2))
    lws.ready("sgt", replicas=1, size=4)
    _subgroup_labels_must_be(lws, "sgt", {"sgt-0": "0", "sgt-0-1": "0", "sgt-0-2": "1", "sgt-0-3": "1"})
    first, second = ["sgt-0.sgt", "sgt-0-1.sgt"], ["sgt-0-2.sgt", "sgt-0-3.sgt"]
    _check_pods(lws, [(pod, _want(hosts, worker_id, "sgt-0")) for pod, hosts, worker_id in (
        ("sgt-0", first, 0), ("sgt-0-1", first, 1), ("sgt-0-2", second, 0), ("sgt-0-3", second, 1))])


@conformance(short_name="TPUEnvPerSubgroupWithoutTPULeader", features={Feature.TPU_ENV_INJECTION, Feature.SUBGROUPS},
             description="Size 5, subGroupSize 2, leader without TPUs: L-1 and L-2 list L-1.N,L-2.N; L-3 and L-4 "
                         "list L-3.N,L-4.N; ids are (worker index - 1) mod 2; the leader gets none; subgroup-index "
                         "0,0,0,1,1 (3.5, 4.8).")
def test_tpu_env_per_subgroup_without_tpu_leader(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("sgw", size=5, subgroup=2, leader_tpus=False))
    lws.ready("sgw", replicas=1, size=5)
    _check_none(lws, "sgw-0", "the leader requests no TPUs")
    first, second = ["sgw-0-1.sgw", "sgw-0-2.sgw"], ["sgw-0-3.sgw", "sgw-0-4.sgw"]
    _check_pods(lws, [(f"sgw-0-{w}", _want(hosts, (w - 1) % 2, "sgw-0"))
                      for w, hosts in ((1, first), (2, first), (3, second), (4, second))])
    _subgroup_labels_must_be(lws, "sgw", {"sgw-0": "0", "sgw-0-1": "0", "sgw-0-2": "0", "sgw-0-3": "1", "sgw-0-4": "1"})


def _probe_on(name: str, port: int, *, tpus: bool) -> Obj:
    container = workloads.probe_container(name)
    container["command"] = ["python", f"{workloads.PROBE_MOUNT}/probe.py", "--port", str(port)]
    container["ports"] = [{"name": f"p{port}", "containerPort": port}]
    container["readinessProbe"]["httpGet"]["port"] = port
    if tpus:
        container["resources"] = copy.deepcopy(ONE_TPU)
    return container


@conformance(short_name="TPUEnvInASizeOneGroup", features={Feature.TPU_ENV_INJECTION},
             description="A TPU group of one pod: its leader lists only itself, N-i.N, with id 0 (3.5).")
def test_tpu_env_in_a_size_one_group(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("one", replicas=2, size=1))
    lws.ready("one", replicas=2, size=1)
    _check_pods(lws, [(f"one-{i}", _want([f"one-{i}.one"], 0, f"one-{i}")) for i in (0, 1)])


@conformance(short_name="TPUEnvOnlyInTPUContainers", features={Feature.TPU_ENV_INJECTION},
             description="With a TPU container, a TPU native sidecar and a container without TPUs in every pod: the "
                         "two TPU containers (regular first) get ids 2w and 2w+1, ports 8476 and 8477 and each host "
                         "twice; the third container gets nothing (3.5).")
def test_tpu_env_only_in_tpu_containers(lws: LWSHarness) -> None:
    def edit(template: Obj) -> None:
        spec = template["spec"]
        spec["containers"][0]["resources"] = copy.deepcopy(ONE_TPU)
        spec["containers"].append(_probe_on("plain", PLAIN_PORT, tpus=False))
        sidecar = workloads.probe_sidecar("tpu-sidecar", port=SECOND_PORT)
        sidecar["resources"] = copy.deepcopy(ONE_TPU)
        spec["initContainers"] = [sidecar]
    lws.create(workloads.edit_templates(workloads.probe_lws("multi", replicas=1, size=2), edit))
    lws.ready("multi", replicas=1, size=2)
    hosts = ["multi-0.multi", "multi-0.multi", "multi-0-1.multi", "multi-0-1.multi"]
    addresses = ",".join(f"{h}:{8476 + k % 2}" for k, h in enumerate(hosts))
    for w, pod in enumerate(["multi-0", "multi-0-1"]):
        for k, (port, where) in enumerate(((workloads.PROBE_PORT, "container probe"),
                                           (SECOND_PORT, "init container tpu-sidecar"))):
            want = {**_want(hosts, 2 * w + k, "multi-0", 8476 + k), "TPU_PROCESS_ADDRESSES": addresses}
            _check(lws, pod, want, port, where)
        _check_none(lws, pod, "container plain requests no TPUs", PLAIN_PORT)


@conformance(short_name="TPUEnvUniquePerReplicaHostnames",
             features={Feature.TPU_ENV_INJECTION, Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="Under subdomainPolicy UniquePerReplica the TPU host names use the group's own subdomain: "
                         "N-i.N-i, N-i-1.N-i (3.5, 4.9).")
def test_tpu_env_unique_per_replica_hostnames(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("utpu", size=2, network={"subdomainPolicy": "UniquePerReplica"}))
    lws.ready("utpu", replicas=1, size=2)
    hosts = ["utpu-0.utpu-0", "utpu-0-1.utpu-0"]
    for w, pod in enumerate(["utpu-0", "utpu-0-1"]):
        _check(lws, pod, _want(hosts, w, "utpu-0"))


@conformance(short_name="TPUEnvFollowsSubdomainPolicySwitch", slow=True,
             features={Feature.TPU_ENV_INJECTION, Feature.SUBDOMAIN_UNIQUE_PER_REPLICA, Feature.ROLLING_UPDATE},
             description="Switching subdomainPolicy Shared -> UniquePerReplica -> Shared rolls the group, and the new "
                         "pods list N-0.N-0,N-0-1.N-0, then N-0.N,N-0-1.N again (3.5, 4.9; upstream e2e).")
def test_tpu_env_follows_subdomain_policy_switch(lws: LWSHarness) -> None:
    lws.create(_tpu_lws("tsw", size=2))
    lws.ready("tsw", replicas=1, size=2)
    shared = leader_revision(lws, "tsw")
    lws.patch("tsw", {"spec": {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}}})
    unique = lws.rollout_must_complete("tsw", old=shared, replicas=1, size=2)
    hosts = ["tsw-0.tsw-0", "tsw-0-1.tsw-0"]
    _check_pods(lws, [(pod, _want(hosts, w, "tsw-0")) for w, pod in enumerate(["tsw-0", "tsw-0-1"])])
    lws.patch("tsw", {"spec": {"networkConfig": {"subdomainPolicy": "Shared"}}})
    lws.rollout_must_complete("tsw", old=unique, replicas=1, size=2)
    hosts = ["tsw-0.tsw", "tsw-0-1.tsw"]
    _check_pods(lws, [(pod, _want(hosts, w, "tsw-0")) for w, pod in enumerate(["tsw-0", "tsw-0-1"])])


@conformance(short_name="UserTPUEnvEntriesWin", features={Feature.TPU_ENV_INJECTION},
             description="A user TPU_PROCESS_PORT is used in the addresses and a user TPU_NAME kept; a container "
                         "that sets TPU_WORKER_ID gets no TPU variables at all (3.5).")
def test_user_tpu_env_entries_win(lws: LWSHarness) -> None:
    manifest = _tpu_lws("utv", size=2)
    lwt = manifest["spec"]["leaderWorkerTemplate"]
    lwt["leaderTemplate"]["spec"]["containers"][0]["env"] += [{"name": "TPU_PROCESS_PORT", "value": "9000"},
                                                              {"name": "TPU_NAME", "value": "mine"}]
    lwt["workerTemplate"]["spec"]["containers"][0]["env"].append({"name": "TPU_WORKER_ID", "value": "7"})
    lws.create(manifest)
    lws.ready("utv", replicas=1, size=2)
    _check(lws, "utv-0", {**_want(["utv-0.utv", "utv-0-1.utv"], 0, "mine", 9000)}, container="its TPU container "
           "(user TPU_PROCESS_PORT=9000, TPU_NAME=mine)")
    _check(lws, "utv-0-1", {"TPU_WORKER_ID": "7"}, container="its TPU container (user TPU_WORKER_ID=7)")


@conformance(short_name="NoTPUEnvWithoutTPUsOrOutsideAnLWS", features={Feature.TPU_ENV_INJECTION},
             description="Pods of an LWS that request no TPUs, and a pod requesting TPUs that belongs to no LWS, get "
                         "no TPU variables (3.5).")
def test_no_tpu_env_without_tpus_or_outside_an_lws(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("plain", replicas=1, size=2))
    template = workloads.probe_pod_template(resources=copy.deepcopy(ONE_TPU))
    stray: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray-0", "labels": {"app": "stray"}},
                  "spec": template["spec"]}
    lws.core.create_namespaced_pod(lws.namespace, stray)  # type: ignore[arg-type]
    lws.ready("plain", replicas=1, size=2)
    for pod in ("plain-0", "plain-0-1"):
        _check_none(lws, pod, "no container requests TPUs")
    _check_none(lws, "stray-0", "the pod belongs to no LWS")
