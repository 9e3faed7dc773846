"""Scaling (docs/lws-contract.md section 4.3): groups are added at the top and removed from the top.

Scaling is what an autoscaler does to a serving fleet, so the groups that stay must not notice: their
pod UIDs are unchanged. Covered through `spec.replicas` and through the scale subresource (what
`kubectl scale` and the HPA use), to 0 and back, and `status.hpaPodSelector`, which must select the
leader pods only, so HPA metrics are averaged over leaders (T25). Each scaling test records the groups'
timeline while it scales (`lws.timeline`) for the report's picture.
"""

from __future__ import annotations

from conformance.harness import NAME, WORKER_INDEX, LWSHarness
from lwsconf import lwsapi, workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import observe


def _same_uids(lws: LWSHarness, name: str, before: dict[int, set[str]]) -> None:
    now = lws.groups(name)
    for index, uids in before.items():
        assert index in now and now[index].uids == uids, \
            f"group {index} was replaced while scaling: {lws.describe(name)}"


def _worker_sets(lws: LWSHarness, name: str) -> list[str]:
    return sorted(s for s in lws.statefulsets() if s != name)


@conformance(short_name="ScaleUpAddsGroupsAtTheTop", features={Feature.SCALING},
             description="Raising spec.replicas adds groups R..R'-1 and leaves the existing groups untouched (4.3).")
def test_scale_up_adds_groups_at_the_top(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("up", replicas=1, size=2))
    before = {i: g.uids for i, g in lws.ready("up", replicas=1, size=2).items()}
    with lws.timeline("up"):
        lws.patch("up", {"spec": {"replicas": 3}})
        lws.ready("up", replicas=3, size=2)
    _same_uids(lws, "up", before)
    assert _worker_sets(lws, "up") == ["up-0", "up-1", "up-2"]
    assert lws.statefulsets()["up"]["spec"]["replicas"] == 3


@conformance(short_name="ScaleDownRemovesHighestGroups", features={Feature.SCALING},
             description="Lowering spec.replicas removes the highest groups with their worker StatefulSets; the rest "
                         "stay (4.3).")
def test_scale_down_removes_highest_groups(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("down", replicas=3, size=2))
    before = {i: g.uids for i, g in lws.ready("down", replicas=3, size=2).items()}

    def top_worker_set_gone() -> None:
        assert _worker_sets(lws, "down") == ["down-0", "down-1"], f"worker StatefulSets {_worker_sets(lws, 'down')}"
    with lws.timeline("down"):
        lws.patch("down", {"spec": {"replicas": 2}})
        lws.pods_must_be_gone(f"{lwsapi.GROUP_INDEX}=2", name="down")
        lws.wait(top_worker_set_gone, what="worker StatefulSet down-2 to be gone", name="down")
        lws.ready("down", replicas=2, size=2)
    _same_uids(lws, "down", {0: before[0], 1: before[1]})


@conformance(short_name="ScaleToZeroAndBack", features={Feature.SCALING},
             description="replicas 0 removes every pod but keeps the leader StatefulSet and Service; scaling back "
                         "recreates groups (4.3, 2.1).")
def test_scale_to_zero_and_back(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("zero", replicas=2, size=2))
    lws.ready("zero", replicas=2, size=2)
    with lws.timeline("zero"):
        lws.patch("zero", {"spec": {"replicas": 0}})
        lws.pods_must_be_gone(f"{NAME}=zero", name="zero", within="scale_complete")
        lws.ready("zero", replicas=0, size=2)
        sets = lws.statefulsets()
        assert sorted(sets) == ["zero"] and sets["zero"]["spec"]["replicas"] == 0, f"StatefulSets: {sorted(sets)}"
        assert "zero" in lws.services(), "the headless Service must stay while replicas is 0"
        lws.patch("zero", {"spec": {"replicas": 2}})
        lws.ready("zero", replicas=2, size=2)


@conformance(short_name="ScaleSubresource", features={Feature.SCALE_SUBRESOURCE},
             description="/scale reads spec and status replicas and the selector, and a scale write changes "
                         "spec.replicas (4.3).")
def test_scale_subresource(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("scl", replicas=2, size=2))
    lws.ready("scl", replicas=2, size=2)
    scale = lws.get_scale("scl")
    assert scale["spec"].get("replicas") == 2 and scale["status"].get("replicas") == 2, f"scale: {scale}"
    selector = lws.get("scl")["status"].get("hpaPodSelector")
    assert selector, f"LeaderWorkerSet scl status.hpaPodSelector is {selector!r}, want the leaders' selector (1.4)"
    assert scale["status"].get("selector") == selector, \
        f"/scale status.selector is {scale['status'].get('selector')!r}, want status.hpaPodSelector {selector!r} (4.3)"

    def status_replicas_3() -> None:
        scale = lws.get_scale("scl")
        assert scale["status"].get("replicas") == 3, f"scale {scale}"
    with lws.timeline("scl"):
        lws.scale("scl", 3)
        assert lws.get("scl")["spec"]["replicas"] == 3
        lws.ready("scl", replicas=3, size=2)
        lws.wait(status_replicas_3, what="scale status.replicas to reach 3", name="scl")
        lws.scale("scl", 1)
        lws.ready("scl", replicas=1, size=2)


@conformance(short_name="HPASelectorSelectsLeadersOnly", features={Feature.SCALE_SUBRESOURCE},
             description="status.hpaPodSelector is {name: N, worker-index: 0}: listing pods with it gives exactly "
                         "the leaders (1.4, T25).")
def test_hpa_selector_selects_leaders_only(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("hpa", replicas=2, size=3))
    lws.ready("hpa", replicas=2, size=3)
    selector = str(lws.get("hpa")["status"].get("hpaPodSelector") or "")
    want = {f"{NAME}=hpa", f"{WORKER_INDEX}=0"}
    terms = set(selector.split(","))
    assert terms == want, (f"LeaderWorkerSet hpa status.hpaPodSelector is {selector!r}, want the terms {sorted(want)} "
                           f"(1.4: leader pods only); missing {sorted(want - terms)}, extra {sorted(terms - want)}")
    selected = {p["metadata"]["name"] for p in observe.pods(lws.api, lws.namespace, selector)}
    assert selected == {"hpa-0", "hpa-1"}, \
        f"status.hpaPodSelector {selector!r} selects pods {sorted(selected)}, want the leaders ['hpa-0', 'hpa-1']"
