"""Object model (docs/lws-contract.md §2): what an LWS of R groups of size S creates, named how, owned by whom.

Checks the inventory a user and their tooling rely on: the leader StatefulSet `N`, one worker
StatefulSet `N-i` per group with ordinals from 1, pods `N-i` / `N-i-j` with matching hostnames and the
Service as subdomain, the headless Service, the ownership chain that garbage collection follows
(worker StatefulSets belong to their leader *pod*, trap T4), no worker StatefulSet for size 1 (T3),
and the leader running the worker template when `leaderTemplate` is omitted (4.11).
"""

from __future__ import annotations

from conformance.harness import LWSHarness, Obj, controller_of
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature


@conformance(short_name="ObjectNamesAndOrdinals", features={Feature.OBJECT_MODEL},
             description="R groups of size S give StatefulSets N and N-i (ordinals from 1) and pods N-i, N-i-j "
                         "(2.1-2.3).")
def test_object_names_and_ordinals(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("names", replicas=2, size=3))
    lws.ready("names", replicas=2, size=3)
    sets = lws.statefulsets()
    assert sorted(sets) == ["names", "names-0", "names-1"], f"StatefulSets: {sorted(sets)}"
    leader = sets["names"]["spec"]
    assert leader["replicas"] == 2 and leader["serviceName"] == "names"
    assert leader["podManagementPolicy"] == "Parallel"
    for i in (0, 1):
        worker = sets[f"names-{i}"]["spec"]
        assert worker["replicas"] == 2, f"worker StatefulSet names-{i} replicas {worker['replicas']}, want S-1 = 2"
        assert (worker.get("ordinals") or {}).get("start") == 1, f"names-{i} ordinals: {worker.get('ordinals')}"
        assert worker["serviceName"] == "names" and worker["podManagementPolicy"] == "Parallel"
    want = {"names-0", "names-0-1", "names-0-2", "names-1", "names-1-1", "names-1-2"}
    assert set(lws.pods("names")) == want


@conformance(short_name="HostnamesAndSubdomains", features={Feature.OBJECT_MODEL},
             description="Every pod's hostname is its name and its subdomain the Service N; the probe sees that name "
                         "(2.6).")
def test_hostnames_and_subdomains(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("hosts", replicas=1, size=2))
    lws.ready("hosts", replicas=1, size=2)
    for name, pod in lws.pods("hosts").items():
        assert pod["spec"].get("hostname") == name, f"{name}: spec.hostname {pod['spec'].get('hostname')}"
        assert pod["spec"].get("subdomain") == "hosts", f"{name}: spec.subdomain {pod['spec'].get('subdomain')}"
        seen = lws.probe_json(name)
        assert seen["hostname"] == name, f"{name}: the container sees hostname {seen['hostname']}"
    answer = lws.probe_json("hosts-0-1", "/peer", host=f"hosts-0.hosts.{lws.namespace}", port="8080")
    assert (answer.get("answer") or {}).get("pod") == "hosts-0", f"hosts-0.hosts.<ns> from a worker: {answer}"


@conformance(short_name="HeadlessServiceShape", features={Feature.OBJECT_MODEL},
             description="Service N is headless, publishes not-ready addresses, selects {name: N} and is owned by "
                         "the LWS (2.4).")
def test_headless_service_shape(lws: LWSHarness) -> None:
    created = lws.create(workloads.probe_lws("svc", replicas=1, size=2))
    def service_exists() -> Obj:
        return lws.services()["svc"]
    svc = lws.wait(service_exists, what="Service svc to exist", within="create", name="svc")
    spec = svc["spec"]
    assert spec.get("clusterIP") == "None", f"clusterIP {spec.get('clusterIP')}, want None (headless)"
    assert spec.get("publishNotReadyAddresses") is True
    assert spec.get("selector") == {lwsapi.NAME: "svc"}, f"selector {spec.get('selector')}"
    owner = controller_of(svc)
    assert owner and owner["kind"] == "LeaderWorkerSet" and owner["uid"] == created["metadata"]["uid"]


@conformance(short_name="OwnershipChain", features={Feature.OBJECT_MODEL},
             description="LWS owns the leader StatefulSet, Service and revisions; each leader pod owns its worker "
                         "StatefulSet (2.7, T4).")
def test_ownership_chain(lws: LWSHarness) -> None:
    uid = lws.create(workloads.probe_lws("owners", replicas=2, size=2))["metadata"]["uid"]
    lws.ready("owners", replicas=2, size=2)
    sets, pods = lws.statefulsets(), lws.pods("owners")
    assert (controller_of(sets["owners"]) or {}).get("uid") == uid, "the leader StatefulSet is not owned by the LWS"
    assert (controller_of(lws.services()["owners"]) or {}).get("uid") == uid, "Service owners is not owned by the LWS"
    assert lws.revisions("owners"), "no ControllerRevision labelled with the LWS name"
    assert all((controller_of(r) or {}).get("uid") == uid for r in lws.revisions("owners"))
    for i in (0, 1):
        leader = pods[f"owners-{i}"]
        assert (controller_of(leader) or {}).get("uid") == sets["owners"]["metadata"]["uid"]
        owner = controller_of(sets[f"owners-{i}"]) or {}
        assert (owner.get("kind"), owner.get("uid")) == ("Pod", leader["metadata"]["uid"]), \
            f"worker StatefulSet owners-{i} owner {owner}, want its leader pod owners-{i}"
        assert owner.get("blockOwnerDeletion") is True
        worker = pods[f"owners-{i}-1"]
        assert (controller_of(worker) or {}).get("uid") == sets[f"owners-{i}"]["metadata"]["uid"]


@conformance(short_name="SizeOneHasNoWorkerStatefulSet", features={Feature.OBJECT_MODEL},
             description="With size 1 only the leader StatefulSet exists and each group is its leader pod (2.1, T3).")
def test_size_one_has_no_worker_statefulset(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("solo", replicas=2, size=1))
    lws.ready("solo", replicas=2, size=1)
    assert sorted(lws.pods("solo")) == ["solo-0", "solo-1"]

    def only_the_leader_statefulset() -> None:
        assert sorted(lws.statefulsets()) == ["solo"], f"StatefulSets: {sorted(lws.statefulsets())}"
    lws.hold(only_the_leader_statefulset, what="no worker StatefulSet for size 1", name="solo")


@conformance(short_name="LeaderTemplateOmitted", features={Feature.OBJECT_MODEL},
             description="Without leaderTemplate the leader runs the worker template's containers (4.11).")
def test_leader_template_omitted(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("single", replicas=1, size=2, separate_leader=False)
    lws.create(manifest)
    lws.ready("single", replicas=1, size=2)
    worker_spec = manifest["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    worker_containers = [c["name"] for c in worker_spec["containers"]]
    leader_sts = lws.statefulsets()["single"]["spec"]["template"]["spec"]
    assert [c["name"] for c in leader_sts["containers"]] == worker_containers
    leader = lws.pods("single")["single-0"]
    assert [c["name"] for c in leader["spec"]["containers"]] == worker_containers
    assert lws.probe_json("single-0")["lws"]["LWS_WORKER_INDEX"] == "0"


@conformance(short_name="DeletedChildrenAreRecreated", features={Feature.OBJECT_MODEL},
             description="A deleted worker StatefulSet or headless Service comes back, and the group is ready again "
                         "(4.1).")
def test_deleted_children_are_recreated(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("heal", replicas=1, size=2))
    lws.ready("heal", replicas=1, size=2)
    old = lws.statefulsets()["heal-0"]["metadata"]["uid"]
    lws.apps.delete_namespaced_stateful_set("heal-0", lws.namespace)
    lws.core.delete_namespaced_service("heal", lws.namespace)

    def back() -> None:
        sets, services = lws.statefulsets(), lws.services()
        assert "heal" in services, "Service heal not recreated yet"
        assert "heal-0" in sets and sets["heal-0"]["metadata"]["uid"] != old, "worker StatefulSet heal-0 not recreated"
    lws.wait(back, what="worker StatefulSet heal-0 and Service heal to be recreated", name="heal")
    lws.ready("heal", replicas=1, size=2)
