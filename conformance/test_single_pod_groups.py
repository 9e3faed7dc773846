"""Groups of one pod (`size: 1`: a leader and no worker StatefulSet) through a rolling update
(docs/lws-contract.md section 4.4).

Written to kill mutants of the reference that `make mutate` found surviving (docs/mutation-testing.md): every
other rolling-update test uses groups with workers, so a reconciler that judges a group "updated" by its worker
StatefulSet even when the group has none passed them all (its size-1 rollouts never finish).
"""

from __future__ import annotations

from conformance.harness import LWSHarness
from conformance.rollouts import assert_at_most_down, roll_template
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
