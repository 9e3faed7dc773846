"""A quantity rewritten in an equal form is not an update (docs/lws-contract.md section 4.4.1: the snapshot is
compared semantically, so serialization differences do not count).

Written to kill mutants of the reference that `make mutate` found surviving (docs/mutation-testing.md): no other
test writes a quantity in two forms, so a reconciler with a wrong suffix multiplier (`Gi`, `M`, `T`, `E`) passed
them all; it takes `1Gi` -> `1024Mi` for a new revision and restarts every group. The quantities are emptyDir
`sizeLimit`s, which take any suffix without bearing on scheduling.
"""

from __future__ import annotations

import copy

from conformance.harness import LWSHarness, Obj
from conformance.rollouts import leader_revision
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature

EQUAL_FORMS = {"gi": ("1Gi", "1024Mi"), "ti": ("1Ti", "1024Gi"), "mega": ("1M", "1000k"), "tera": ("2T", "2000G"),
               "exa": ("1E", "1000P"), "milli": ("1500m", "1.5")}
"""emptyDir name: (the sizeLimit at creation, the same quantity written another way)."""


def with_size_limits(manifest: Obj, form: int) -> Obj:
    """`manifest` with one emptyDir per EQUAL_FORMS entry in both pod templates, its sizeLimit in form 0 or 1."""
    out = copy.deepcopy(manifest)
    lwt = out["spec"]["leaderWorkerTemplate"]
    for template in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        # A new spec dict per template: the two templates may share one (a deep copy keeps the sharing).
        kept = [v for v in template["spec"].get("volumes", []) if not v["name"].startswith("scratch-")]
        scratch = [{"name": f"scratch-{name}", "emptyDir": {"sizeLimit": forms[form]}}
                   for name, forms in EQUAL_FORMS.items()]
        template["spec"] = {**template["spec"], "volumes": [*kept, *scratch]}
    return out


@conformance(short_name="EqualQuantityRewriteIsNotAnUpdate", features={Feature.ROLLING_UPDATE},
             description="Rewriting template quantities in equal forms (1Gi as 1024Mi, 1M as 1000k, 1E as 1000P, ...) "
                         "is no update: no new revision, no group replaced (4.4.1).")
def test_equal_quantity_rewrite_is_not_an_update(lws: LWSHarness) -> None:
    manifest = with_size_limits(workloads.probe_lws("qty", replicas=2, size=2), 0)
    lws.create(manifest)
    before = lws.ready("qty", replicas=2, size=2)
    key = leader_revision(lws, "qty")
    revisions = sorted(r["metadata"]["name"] for r in lws.revisions("qty"))
    rewritten = with_size_limits(manifest, 1)["spec"]["leaderWorkerTemplate"]
    lws.patch("qty", {"spec": {"leaderWorkerTemplate": rewritten}}, step="sizeLimits rewritten in equal forms")
    lws.lws_must_be_available("qty")  # the controller has seen the new generation

    def same_revision_and_pods() -> None:
        """The leader StatefulSet keeps its key, no revision is added, every group keeps its pods."""
        assert leader_revision(lws, "qty") == key, f"new revision {leader_revision(lws, 'qty')} (was {key})"
        now = sorted(r["metadata"]["name"] for r in lws.revisions("qty"))
        assert now == revisions, f"ControllerRevisions {now}, were {revisions}"
        groups = lws.groups("qty")
        for i in (0, 1):
            assert groups[i].uids == before[i].uids, f"group {i} has new pods: {groups[i].uids} (were {before[i].uids})"

    lws.hold(same_revision_and_pods, what="an equal rewrite of quantities to change nothing (4.4.1)", name="qty")
