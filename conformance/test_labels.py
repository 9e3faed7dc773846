"""Labels and annotations (docs/lws-contract.md section 3.1/3.2) on every object an LWS creates.

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
    Obj,
    annotations_of,
    assert_fields,
    labels,
    sha1,
)
from lwsconf import workloads
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.waits import lws as lws_waits


def _leader_statefulset_keys(sts: Obj) -> str:
    """Check the leader StatefulSet `lbl` (metadata, template, selector); returns its revision key."""
    rev = labels(sts).get(REVISION)
    assert rev, f"leader StatefulSet lbl metadata.labels has no {REVISION}: {labels(sts)}"
    assert_fields("leader StatefulSet lbl metadata.labels", {NAME: "lbl"}, labels(sts))
    assert_fields("leader StatefulSet lbl metadata.annotations", {REPLICAS: "2"}, annotations_of(sts),
                  why={REPLICAS: "spec.replicas"})
    tmpl = sts["spec"]["template"]["metadata"]
    assert_fields("leader StatefulSet lbl spec.template.metadata.labels",
                  {NAME: "lbl", WORKER_INDEX: "0", REVISION: rev}, tmpl.get("labels"),
                  why={REVISION: "the StatefulSet's own key"})
    assert_fields("leader StatefulSet lbl spec.template.metadata.annotations", {SIZE: "2"}, tmpl.get("annotations"))
    assert_fields("leader StatefulSet lbl spec.selector.matchLabels", {NAME: "lbl", WORKER_INDEX: "0"},
                  sts["spec"]["selector"].get("matchLabels"), exact=True)
    return rev


def _group_keys(sets: dict[str, Obj], pods: dict[str, Obj], ns: str, i: int, rev: str) -> None:
    """Check group i's worker StatefulSet (metadata, template, selector), leader pod and worker pod."""
    leader = f"lbl-{i}"
    want = {NAME: "lbl", GROUP_INDEX: str(i), GROUP_KEY: sha1(f"{ns}/{leader}"), REVISION: rev}
    why = {GROUP_KEY: f"sha1('{ns}/{leader}')", REVISION: "the leader StatefulSet's key"}
    sts = sets[leader]
    assert_fields(f"worker StatefulSet {leader} metadata.labels", want, labels(sts), why=why)
    assert_fields(f"worker StatefulSet {leader} spec.template.metadata.labels", want,
                  sts["spec"]["template"]["metadata"].get("labels"), why=why)
    assert_fields(f"worker StatefulSet {leader} spec.selector.matchLabels",
                  {k: want[k] for k in (NAME, GROUP_INDEX, GROUP_KEY)}, sts["spec"]["selector"].get("matchLabels"),
                  exact=True, why=why)
    assert_fields(f"leader pod {leader} labels", {**want, WORKER_INDEX: "0", "role": "leader"}, labels(pods[leader]),
                  why=why)
    assert_fields(f"leader pod {leader} annotations", {SIZE: "2"}, annotations_of(pods[leader]))
    worker = pods[f"{leader}-1"]
    assert_fields(f"worker pod {leader}-1 labels", {**want, WORKER_INDEX: "1"}, labels(worker), why=why)
    assert_fields(f"worker pod {leader}-1 annotations", {SIZE: "2", LEADER_NAME: leader}, annotations_of(worker))


@conformance(short_name="LabelsAndAnnotationsOnEveryObject", features={Feature.LABELS},
             description="StatefulSets, their templates, pods, Services and revisions carry the section 3 keys and "
                         "values.")
def test_labels_and_annotations_on_every_object(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("lbl", replicas=2, size=2, leader_labels={"role": "leader"}))
    lws.ready("lbl", replicas=2, size=2)
    sets, pods = lws.statefulsets(), lws.pods("lbl")
    rev = _leader_statefulset_keys(sets["lbl"])
    for i in (0, 1):
        _group_keys(sets, pods, lws.namespace, i, rev)
    assert_fields("Service lbl metadata.labels", {NAME: "lbl"}, labels(lws.services()["lbl"]))
    revs = [labels(r).get(REVISION) for r in lws.revisions("lbl")]
    assert revs == [rev], \
        f"ControllerRevisions of lbl carry {REVISION} {revs}, want exactly [{rev!r}] (the leader StatefulSet's)"


def _group_key_on_every_pod(when: str, group: lws_waits.Group, ns: str) -> None:
    names = sorted(p["metadata"]["name"] for p in group.pods.values())
    assert names == ["gkey-0", "gkey-0-1"], f"{when}: group 0 has pods {names}, want ['gkey-0', 'gkey-0-1']"
    for pod in group.pods.values():
        assert_fields(f"{when}: pod {pod['metadata']['name']} labels", {GROUP_KEY: sha1(f"{ns}/gkey-0")}, labels(pod),
                      why={GROUP_KEY: f"sha1('{ns}/gkey-0')"})


@conformance(short_name="GroupKeyIsPortableAndStable", features={Feature.LABELS},
             description="group-key is sha1('<ns>/<leader pod>') and survives the recreation of its group (3.1).")
def test_group_key_is_portable_and_stable(lws: LWSHarness) -> None:
    lws.create(workloads.probe_lws("gkey", replicas=1, size=2))
    before = lws.ready("gkey", replicas=1, size=2)[0]
    _group_key_on_every_pod("before recreation", before, lws.namespace)
    lws.core.delete_namespaced_pod("gkey-0", lws.namespace)
    after = lws.group_must_be_recreated("gkey", 0, before.uids, size=2)
    _group_key_on_every_pod("after deleting leader gkey-0 recreated the group", after, lws.namespace)


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
             description="One revision key on every object; it changes with the template, not with replicas or "
                         "strategy (2.5, T6, T18).")
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
    lws.wait(rolled, what="every object of rev on one new revision key", within="rollout_complete", name="rev")
    lws.ready("rev", replicas=2, size=2)


@conformance(short_name="LWSMetadataOnStatefulSets", features={Feature.LABELS},
             description="The LWS's own labels and annotations are copied onto its StatefulSets, not onto pods (2.2, "
                         "2.3).")
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
