"""Groups of one pod (`size: 1`: a leader and no worker StatefulSet) through a rolling update
(docs/lws-contract.md section 4.4).

Written to kill mutants of the reference that `make mutate` found surviving (docs/mutation-testing.md): every
other rolling-update test uses groups with workers, so a reconciler that judges a group "updated" by its worker
StatefulSet even when the group has none passed them all (its size-1 rollouts never finish). The surge case is
upstream's e2e "Can create/update a lws with size=1" (R=4, maxSurge 1: leader StatefulSet 5, then 4) and "Can
perform a rolling update even if old lws not ready" (size 1, maxUnavailable 0, maxSurge 1).
"""

from __future__ import annotations

from conformance.harness import LWSHarness
from conformance.rollouts import assert_at_most_down, change_template, roll_template, rolling_update
from conformance.rollouts import leader_revision as revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import analysis


@conformance(short_name="RollingUpdateOfSingletonGroups", slow=True, features={Feature.ROLLING_UPDATE},
             description="With size 1 (no worker StatefulSets) a template change still replaces every group, highest "
                         "index first, one at a time (4.4.2, 4.4.4).")
def test_rolling_update_of_singleton_groups(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("single", replicas=3, size=1)
    lws.create(manifest)
    before = lws.ready("single", replicas=3, size=1)
    timeline, old, new = roll_template(lws, "single", manifest, replicas=3, size=1)
    assert new != old
    assert analysis.replacement_order(timeline, old, 3) == [2, 1, 0], \
        f"replacement order:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(3), 1, "maxUnavailable defaults to 1 (4.4.3)")
    after = lws.groups("single")
    assert all(not (after[i].uids & before[i].uids) for i in range(3)), "a group kept its old leader pod"


@conformance(short_name="SingletonGroupsSurgeRollout", slow=True,
             features={Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE,
                       Feature.ROLLING_UPDATE_MAX_UNAVAILABLE},
             description="Size 1, R=3, maxUnavailable 0, maxSurge 1: the leader StatefulSet goes to 4 replicas, the "
                         "partition steps 3, 2, 1, 0 (each once the group above is ready), groups replaced highest "
                         "index first with never more than one of the 4 down, back to 3 replicas, and no worker "
                         "StatefulSet at any point (4.4.2, 4.4.4, 4.4.7).")
def test_singleton_groups_surge_rollout(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("ssurge", replicas=3, size=1,
                                   rollout=rolling_update(maxUnavailable=0, maxSurge=1))
    lws.create(manifest)
    before = lws.ready("ssurge", replicas=3, size=1)
    old = revision(lws, "ssurge")
    with lws.timeline("ssurge") as timeline:
        change_template(lws, "ssurge", manifest, "2")
        _leader_statefulset_must_surge(lws, "ssurge", 4)
        new = lws.rollout_must_complete("ssurge", old=old, replicas=3, size=1)
    assert analysis.partitions(timeline, new) == [3, 2, 1, 0], (
        f"partitions on the new revision {analysis.partitions(timeline, new)}, want [3, 2, 1, 0]: with "
        f"maxUnavailable 0 each step waits for the group above to be ready (4.4.4 step 6)\n"
        f"{analysis.describe(timeline)}")
    assert analysis.peak_leader_replicas(timeline) == 4, \
        f"peak leader replicas, want R + maxSurge = 4:\n{analysis.describe(timeline)}"
    assert analysis.replacement_order(timeline, old, 3) == [2, 1, 0], \
        f"replacement order:\n{analysis.describe(timeline)}"
    assert_at_most_down(timeline, range(4), 1, "maxUnavailable 0 + maxSurge 1 (4.4.4)")
    sets = sorted(lws.statefulsets())
    assert sets == ["ssurge"], f"StatefulSets {sets}, want only the leader StatefulSet (size 1 has no workers, 2.1)"
    assert lws.statefulsets()["ssurge"]["spec"]["replicas"] == 3, "the surge group was not released (4.4.7)"
    after = lws.groups("ssurge")
    assert all(not (after[i].uids & before[i].uids) for i in range(3)), "a group kept its old leader pod"


def _leader_statefulset_must_surge(lws: LWSHarness, name: str, replicas: int) -> None:
    """Wait (create) until the leader StatefulSet has `replicas` (R + maxSurge) and no worker StatefulSet exists:
    the surge arrives with the update's first write (4.4.4 step 2), so a controller without it fails here in
    seconds rather than at the end of the rollout wait."""
    def surged() -> None:
        sets = lws.statefulsets()
        seen = sets[name]["spec"]["replicas"]
        assert seen == replicas, f"leader StatefulSet {name} replicas {seen}, want {replicas} (R + maxSurge, 4.4.4)"
        assert sorted(sets) == [name], f"StatefulSets {sorted(sets)}, want only {name} (size 1, 2.1)"
    lws.wait(surged, what=f"leader StatefulSet {name} to surge to {replicas} replicas", within="create", name=name)
