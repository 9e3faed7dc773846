"""Labels and annotations (lws-contract.md section 3.1/3.2) on every object an LWS creates.

Tools select groups, leaders and revisions by these keys, so each must be on the objects the contract
lists, with the documented values. `group-key` is portable (SHA-1 of "<ns>/<leader pod>") and stays
the same when a group is recreated; `template-revision-hash` is not (trap T6): only its consistency
across objects is asserted, and that it changes exactly when the revision snapshot changes (T18).
"""

from __future__ import annotations

from conformance.harness import (
    GROUP_INDEX,
    GROUP_KEY,
    LEADER_NAME,
    NAME,
    REPLICAS,
    REVISION,
    SIZE,
    WORKER_INDEX,
    LWSHarness,
    annotations_of,
    labels,
    sha1,
)
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import lws as lws_waits


@conformance(short_name="LabelsAndAnnotationsOnEveryObject", features={Feature.LABELS},
             description="StatefulSets, their templates, pods, Services and revisions carry the section 3 keys and values.")
def test_labels_and_annotations_on_every_object(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("lbl", replicas=2, size=2, leader_labels={"role": "leader"}))
    lws.ready("lbl", replicas=2, size=2)
    sets, pods, ns = lws.statefulsets(), lws.pods("lbl"), lws.namespace
    leader_sts = sets["lbl"]
    rev = labels(leader_sts)[REVISION]
    assert labels(leader_sts)[NAME] == "lbl" and annotations_of(leader_sts).get(REPLICAS) == "2"
    tmpl = leader_sts["spec"]["template"]["metadata"]
    assert {NAME: "lbl", WORKER_INDEX: "0", REVISION: rev}.items() <= (tmpl.get("labels") or {}).items()
    assert (tmpl.get("annotations") or {}).get(SIZE) == "2"
    assert leader_sts["spec"]["selector"]["matchLabels"] == {NAME: "lbl", WORKER_INDEX: "0"}
    for i in (0, 1):
        key = sha1(f"{ns}/lbl-{i}")
        want = {NAME: "lbl", GROUP_INDEX: str(i), GROUP_KEY: key, REVISION: rev}
        worker_sts = sets[f"lbl-{i}"]
        assert want.items() <= labels(worker_sts).items(), f"worker StatefulSet lbl-{i} labels {labels(worker_sts)}"
        assert want.items() <= (worker_sts["spec"]["template"]["metadata"].get("labels") or {}).items()
        assert worker_sts["spec"]["selector"]["matchLabels"] == {NAME: "lbl", GROUP_INDEX: str(i), GROUP_KEY: key}
        leader, worker = pods[f"lbl-{i}"], pods[f"lbl-{i}-1"]
        assert {**want, WORKER_INDEX: "0", "role": "leader"}.items() <= labels(leader).items(), f"lbl-{i}: {labels(leader)}"
        assert annotations_of(leader).get(SIZE) == "2"
        assert {**want, WORKER_INDEX: "1"}.items() <= labels(worker).items(), f"lbl-{i}-1: {labels(worker)}"
        assert annotations_of(worker).get(SIZE) == "2" and annotations_of(worker).get(LEADER_NAME) == f"lbl-{i}"
    assert labels(lws.services()["lbl"]).get(NAME) == "lbl"
    assert [labels(r).get(REVISION) for r in lws.revisions("lbl")] == [rev]


@conformance(short_name="GroupKeyIsPortableAndStable", features={Feature.LABELS},
             description="group-key is sha1('<ns>/<leader pod>') and survives the recreation of its group (3.1).")
def test_group_key_is_portable_and_stable(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("gkey", replicas=1, size=2))
    before = lws.ready("gkey", replicas=1, size=2)[0]
    want = sha1(f"{lws.namespace}/gkey-0")
    assert {labels(p).get(GROUP_KEY) for p in before.pods.values()} == {want}
    lws.core.delete_namespaced_pod("gkey-0", lws.namespace)
    after = lws_waits.group_must_be_recreated(lws.api, lws.namespace, "gkey", 0, before.uids, size=2, t=lws.t)
    assert {labels(p).get(GROUP_KEY) for p in after.pods.values()} == {want}


def _revision_everywhere(lws: LWSHarness, name: str, groups: int) -> str:
    """The one revision key on the leader StatefulSet (+template), worker StatefulSets (+templates) and pods."""
    sets = lws.statefulsets()
    seen = {"leader sts": labels(sets[name]).get(REVISION),
            "leader sts template": (sets[name]["spec"]["template"]["metadata"].get("labels") or {}).get(REVISION)}
    for i in range(groups):
        seen[f"sts {name}-{i}"] = labels(sets[f"{name}-{i}"]).get(REVISION)
        seen[f"sts {name}-{i} template"] = (sets[f"{name}-{i}"]["spec"]["template"]["metadata"]
                                           .get("labels") or {}).get(REVISION)
    seen.update({f"pod {p}": labels(obj).get(REVISION) for p, obj in lws.pods(name).items()})
    assert len(set(seen.values())) == 1 and None not in seen.values(), f"revision keys differ: {seen}"
    key = str(next(iter(seen.values())))
    assert key in {labels(r).get(REVISION) for r in lws.revisions(name)}, f"no ControllerRevision labelled {key}"
    return key


@conformance(short_name="RevisionHashConsistency", slow=True, features={Feature.LABELS, Feature.ROLLING_UPDATE},
             description="One revision key on every object; it changes with the template, not with replicas or strategy (2.5, T6, T18).")
def test_revision_hash_consistency(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("rev", replicas=1, size=2)
    lws.create(manifest)
    lws.ready("rev", replicas=1, size=2)
    first = _revision_everywhere(lws, "rev", 1)
    lws.patch("rev", {"spec": {"replicas": 2, "startupPolicy": "LeaderReady",
                               "rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": 1}}}})
    lws.ready("rev", replicas=2, size=2)
    assert _revision_everywhere(lws, "rev", 2) == first, "replicas/startupPolicy/rolloutStrategy changed the revision"
    changed = workloads.with_worker_env(manifest, "LWSCONF_REVISION", "2")["spec"]["leaderWorkerTemplate"]
    lws.patch("rev", {"spec": {"leaderWorkerTemplate": changed}})

    def rolled() -> str:
        key = _revision_everywhere(lws, "rev", 2)
        assert key != first, f"still on revision {first}"
        return key
    lws.wait(rolled, what="every object of rev on one new revision key", timeout=lws.t.rollout_complete, name="rev")
    lws.ready("rev", replicas=2, size=2)


@conformance(short_name="LWSMetadataOnStatefulSets", features={Feature.LABELS},
             description="The LWS's own labels and annotations are copied onto its StatefulSets, not onto pods (2.2, 2.3).")
def test_lws_metadata_on_statefulsets(lws: LWSHarness) -> None:
    manifest = workloads.probe_lws("meta", replicas=1, size=2, annotations={"example.com/owner": "team-a"})
    manifest["metadata"]["labels"] = {"example.com/tier": "gold"}
    lws.create(manifest)
    lws.ready("meta", replicas=1, size=2)
    for name, sts in lws.statefulsets().items():
        assert labels(sts).get("example.com/tier") == "gold", f"StatefulSet {name} labels {labels(sts)}"
        assert annotations_of(sts).get("example.com/owner") == "team-a", f"StatefulSet {name}: {annotations_of(sts)}"
    for name, pod in lws.pods("meta").items():
        assert "example.com/tier" not in labels(pod), f"pod {name} got the LWS label: {labels(pod)}"
