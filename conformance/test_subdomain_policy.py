"""networkConfig.subdomainPolicy (docs/lws-contract.md sections 2.4, 4.9): per-group Services and addresses.

With UniquePerReplica every group gets its own headless Service `N-i`, owned by its leader pod, and
pods use it as their subdomain, so LWS_LEADER_ADDRESS is `N-i.N-i.ns` and resolves. Switching the
policy is a rolling update: the environment changes as pods are replaced, and the Shared Service is
left behind when switching away from it (T20). A surge group is a group like the others: its leader gets
a Service too, which goes with that leader when the surge ends (upstream e2e "headless services scale up
during MaxSurge").
"""

from __future__ import annotations

from conformance.harness import NAME, LWSHarness, annotations_of, assert_fields, controller_of, labels
from conformance.rollouts import change_template, leader_revision
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeouts import TimeoutName

UNIQUE = {"subdomainPolicy": "UniquePerReplica"}


def _reaches_leader(lws: LWSHarness, pod: str, leader: str, address: str) -> None:
    seen = lws.probe_json(pod)["lws"]["LWS_LEADER_ADDRESS"]
    assert seen == address, f"{pod}: LWS_LEADER_ADDRESS {seen}, want {address}"
    reply = lws.probe_json(pod, "/peer", host=address, port=str(workloads.PROBE_PORT))
    answer = reply.get("answer") or {}
    assert answer.get("pod") == leader, f"{pod} -> {address}: {reply}, want an answer from {leader}"


@conformance(short_name="UniquePerReplicaServicesAndAddresses", features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="UniquePerReplica: Services N-i owned by leader pods, no Service N, workers under N-i, "
                         "LWS_LEADER_ADDRESS N-i.N-i.ns (2.4, 4.9).")
def test_unique_per_replica_services_and_addresses(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("upr", replicas=2, size=2, network=UNIQUE))
    lws.ready("upr", replicas=2, size=2)
    svcs = lws.services()  # the namespace holds only this LWS's objects: a Service without its label counts too
    assert sorted(svcs) == ["upr-0", "upr-1"], f"Services {sorted(svcs)}, want upr-0 and upr-1 only"
    pods = lws.pods("upr")
    for i in (0, 1):
        svc, leader = f"upr-{i}", pods[f"upr-{i}"]
        assert_fields(f"Service {svc} metadata.labels", {NAME: "upr"}, labels(svcs[svc]), why={NAME: "2.4"})
        spec = svcs[svc]["spec"]
        headless = {"clusterIP": spec.get("clusterIP"),
                    "publishNotReadyAddresses": spec.get("publishNotReadyAddresses")}
        assert headless == {"clusterIP": "None", "publishNotReadyAddresses": True}, \
            f"Service {svc} spec {headless}, want clusterIP 'None' and publishNotReadyAddresses True (headless, 2.4)"
        selector = {NAME: "upr", lwsapi.GROUP_INDEX: str(i)}
        assert spec.get("selector") == selector, \
            f"Service {svc} spec.selector is {spec.get('selector')}, want exactly {selector} (group {i}'s pods " \
            "only, 2.4)"
        owner = controller_of(svcs[svc]) or {}
        assert (owner.get("kind"), owner.get("uid")) == ("Pod", leader["metadata"]["uid"]), \
            f"Service {svc} controller owner is {owner or None}, want Pod {svc} uid {leader['metadata']['uid']} (2.4)"
        subdomain = pods[f"{svc}-1"]["spec"].get("subdomain")
        assert subdomain == svc, f"pod {svc}-1 spec.subdomain is {subdomain!r}, want {svc!r} (4.9)"
        service_name = lws.statefulsets()[svc]["spec"].get("serviceName")
        assert service_name == svc, f"worker StatefulSet {svc} spec.serviceName is {service_name!r}, want {svc!r} (4.9)"
        for pod in (svc, f"{svc}-1"):
            seen, want = lws.probe_json(pod)["lws"]["LWS_LEADER_ADDRESS"], f"{svc}.{svc}.{lws.namespace}"
            assert seen == want, f"{pod}: LWS_LEADER_ADDRESS is {seen!r}, want {want!r} (N-i.N-i.ns, 4.9)"


@conformance(short_name="UniquePerReplicaLeaderAddressResolves", features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="UniquePerReplica leaders have subdomain N-i and annotation subdomainPolicy, so N-i.N-i.ns "
                         "reaches the leader (2.6, 3.4, 4.9).")
def test_unique_per_replica_leader_address_resolves(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("uprdns", replicas=1, size=2, network=UNIQUE))
    lws.ready("uprdns", replicas=1, size=2)
    leader = lws.pod("uprdns-0")
    assert annotations_of(leader).get(lwsapi.SUBDOMAIN_POLICY) == lwsapi.SUBDOMAIN_UNIQUE_PER_REPLICA
    _reaches_leader(lws, "uprdns-0-1", "uprdns-0", f"uprdns-0.uprdns-0.{lws.namespace}")
    assert leader["spec"].get("subdomain") == "uprdns-0", f"leader subdomain {leader['spec'].get('subdomain')}"


@conformance(short_name="SubdomainPolicySwitchRollsGroups", slow=True, features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="Switching Shared -> UniquePerReplica -> Shared rolls the groups and moves addresses; "
                         "Service N stays (4.9, T20).")
def test_subdomain_policy_switch_rolls_groups(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("sw", replicas=1, size=2))
    lws.ready("sw", replicas=1, size=2)
    shared = leader_revision(lws, "sw")
    lws.patch("sw", {"spec": {"networkConfig": UNIQUE}})
    unique = lws.rollout_must_complete("sw", old=shared, replicas=1, size=2)
    ns = lws.namespace
    _reaches_leader(lws, "sw-0-1", "sw-0", f"sw-0.sw-0.{ns}")
    assert {"sw", "sw-0"} <= set(lws.services()), f"Services {sorted(lws.services())}, want sw kept and sw-0 added"
    lws.patch("sw", {"spec": {"networkConfig": {"subdomainPolicy": "Shared"}}})
    lws.rollout_must_complete("sw", old=unique, replicas=1, size=2)
    _reaches_leader(lws, "sw-0-1", "sw-0", f"sw-0.sw.{ns}")

    def per_group_service_gone() -> None:
        assert "sw-0" not in lws.services(), "Service sw-0 outlived the leader pod that owned it"
    lws.wait(per_group_service_gone, what="Service sw-0 to go with its old leader", within="delete", name="sw")


def _group_services_are(lws: LWSHarness, name: str, groups: int) -> None:
    """Exactly Services N-0..N-(groups-1), each selecting its group and owned by that group's live leader."""
    svcs = lws.services()  # the namespace holds only LWS `name`: a Service without its label counts too
    want = [f"{name}-{i}" for i in range(groups)]
    assert sorted(svcs) == want, \
        f"Services {sorted(svcs)}, want {want}: one per leader pod, surge groups included (2.4)"
    pods = lws.pods(name)
    for i, svc in enumerate(want):
        assert_fields(f"Service {svc} metadata.labels", {NAME: name}, labels(svcs[svc]), why={NAME: "2.4"})
        index = (svcs[svc]["spec"].get("selector") or {}).get(lwsapi.GROUP_INDEX)
        assert index == str(i), f"Service {svc} selects group-index {index!r}, want {str(i)!r} (2.4)"
        assert svc in pods, f"Service {svc} exists but its leader pod {svc} does not (live pods {sorted(pods)})"
        owner, uid = (controller_of(svcs[svc]) or {}).get("uid"), pods[svc]["metadata"]["uid"]
        assert owner == uid, f"Service {svc} owned by uid {owner}, want the live leader pod {svc} uid {uid} (2.4)"


def _group_services_must_be(lws: LWSHarness, name: str, groups: int, *, what: str,
                            within: TimeoutName = "lws_available") -> None:
    """Wait (`within`, lws_available unless given) until `_group_services_are(lws, name, groups)` holds."""
    def group_services() -> None:
        _group_services_are(lws, name, groups)
    lws.wait(group_services, what=what, within=within, name=name)


@conformance(short_name="UniquePerReplicaServicesFollowSurge", slow=True,
             features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA, Feature.ROLLING_UPDATE_MAX_SURGE},
             description="UniquePerReplica with maxSurge: Services number R at rest, R+surge while the surge group "
                         "lives (one for its leader), R again after, and the LWS is Available (2.4, 4.4.3).")
def test_unique_per_replica_services_follow_surge(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("usurge", replicas=2, size=2, network=UNIQUE,
                                   rollout={"rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}})
    lws.create(manifest)
    lws.ready("usurge", replicas=2, size=2)
    _group_services_are(lws, "usurge", 2)
    old = leader_revision(lws, "usurge")
    # The new revision never turns Ready, so with maxUnavailable 0 the rollout stops with the surge group
    # 2 alive and groups 0 and 1 untouched: the R+surge state is held, not raced.
    change_template(lws, "usurge", manifest, "stuck", unready=True)
    _group_services_must_be(lws, "usurge", 3, what="Services usurge-0..2 while the surge group 2 is up (R + maxSurge)")
    stuck = leader_revision(lws, "usurge")
    change_template(lws, "usurge", manifest, "fixed")
    lws.rollout_must_complete("usurge", old={old, stuck}, replicas=2, size=2)
    _group_services_must_be(lws, "usurge", 2, within="delete",
                            what="Services back to usurge-0 and usurge-1 once the surge group is gone")
    lws.lws_must_be_available("usurge")


@conformance(short_name="UniquePerReplicaSizeOneHasGroupServices", features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA},
             description="UniquePerReplica with size 1: each leader still gets its Service N-i, selecting its group "
                         "and owned by it, no Service N, and its own address N-i.N-i.ns reaches it (4.1 step 1, 4.9).")
def test_unique_per_replica_size_one_has_group_services(lws: LWSHarness) -> None:
    # Size 1 has no worker StatefulSet (2.1), but the per-group Service comes before that check (4.1 step 1):
    # an implementation that stops at "no workers" leaves the leader's subdomain without a Service, so its
    # LWS_LEADER_ADDRESS does not resolve on a real cluster.
    lws.create(workloads.probe_lws("uone", replicas=2, size=1, network=UNIQUE))
    lws.ready("uone", replicas=2, size=1)
    _group_services_must_be(lws, "uone", 2, what="Services uone-0 and uone-1 for the two size-1 groups (4.1 step 1)")
    for i in (0, 1):
        leader = f"uone-{i}"
        _reaches_leader(lws, leader, leader, f"{leader}.{leader}.{lws.namespace}")


HOLD = "lwsconf.test/hold-deletion"
"""A finalizer of the test's own: it keeps a deleted leader pod in deletion (deletionTimestamp set) until removed."""


@conformance(short_name="NoGroupServiceForDeletingLeader",
             features={Feature.SUBDOMAIN_UNIQUE_PER_REPLICA, Feature.RESTART_POLICY_NONE},
             description="UniquePerReplica: while a leader pod is being deleted its per-group Service N-i is not "
                         "created again (deleted here, then the leader touched); the next leader gets one (2.4, 4.9; "
                         "upstream #947).")
def test_no_group_service_for_deleting_leader(lws: LWSHarness) -> None:
    # restartPolicy None: under the recreating policies upstream's pod reconciler returns on a deleting leader before
    # it reaches the Service (pod_controller.go:91-97 and 254-257 in v0.9.0), so only None shows #947.
    lws.create(workloads.probe_lws("udel", replicas=2, size=2, network=UNIQUE, restart_policy="None"))
    lws.ready("udel", replicas=2, size=2)
    _group_services_are(lws, "udel", 2)
    uid = lws.pod("udel-0")["metadata"]["uid"]
    lws.core.patch_namespaced_pod("udel-0", lws.namespace, {"metadata": {"finalizers": [HOLD]}})
    try:
        _held_in_deletion(lws, uid)
    finally:
        lws.core.patch_namespaced_pod("udel-0", lws.namespace, {"metadata": {"finalizers": None}})
    _group_services_must_be(lws, "udel", 2, within="group_recreated",
                            what="Service udel-0 for the next leader udel-0 once the old one is gone (2.4)")
    lws.groups_must_be_ready("udel", replicas=2, size=2, within="group_recreated")


def _held_in_deletion(lws: LWSHarness, uid: str) -> None:
    """Delete leader udel-0 (kept by HOLD) and its Service; touch the leader; the Service must stay away."""
    lws.delete_pod("udel-0")

    def leader_deleting() -> None:
        meta = lws.pod("udel-0")["metadata"]
        assert meta["uid"] == uid and meta.get("deletionTimestamp"), f"leader udel-0 {meta.get('uid')} not deleting"
    lws.wait(leader_deleting, what="leader udel-0 to be in deletion (held by a finalizer)", within="delete",
             name="udel")
    lws.core.delete_namespaced_service("udel-0", lws.namespace)

    def service_deleted() -> None:
        assert "udel-0" not in lws.services(), "Service udel-0 still exists"
    lws.wait(service_deleted, what="Service udel-0 to be deleted", within="delete", name="udel")
    # An update of the leader pod reaches the implementation's pod reconciler as an event on that pod.
    lws.core.patch_namespaced_pod("udel-0", lws.namespace, {"metadata": {"annotations": {"lwsconf.test/touched": "1"}}})

    def no_service_for_deleting_leader() -> None:
        meta = lws.pod("udel-0")["metadata"]
        assert meta["uid"] == uid and meta.get("deletionTimestamp"), "leader udel-0 left deletion early"
        svcs = lws.services()
        assert "udel-0" not in svcs, \
            f"Service udel-0 was created again for leader udel-0 while it is being deleted (deletionTimestamp " \
            f"{meta.get('deletionTimestamp')}): no per-group Service for a deleting leader (4.9; upstream #947)"
        assert "udel-1" in svcs, "Service udel-1 of the live leader udel-1 is gone"
    lws.hold(no_service_for_deleting_leader, what="no Service udel-0 while its leader is being deleted", name="udel")
