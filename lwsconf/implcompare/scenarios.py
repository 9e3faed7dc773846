"""The scenarios `lwsconf diff-impls` runs, as data: an LWS built the way conformance tests build theirs
(`lwsconf.workloads`), what steady state looks like, and the steps after it. No I/O here.

Each is small (a few groups of probe pods) so that the whole set runs in minutes on the sim; `CI` is
the representative subset `make diff-impls` runs.
"""

from __future__ import annotations

from lwsconf import lwsapi, workloads
from lwsconf.implcompare.model import DeletePod, Obj, PatchLWS, Scenario, Step

ZONE = "topology.kubernetes.io/zone"
"""The sim's default nodes span two zones (`lwsconf/sim/nodes/layout.py`): two exclusive domains."""


def _with_claims(lws: Obj) -> Obj:
    """Every pod gets a claim `data-<pod>` from one claim template, mounted at /data (section 4.10)."""
    lwt = lws["spec"]["leaderWorkerTemplate"]
    lwt["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}]
    lwt["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete", "whenScaled": "Delete"}

    def mount(template: Obj) -> None:
        template["spec"]["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/data"})
    return workloads.edit_templates(lws, mount)


def _env_patch(value: str, *, worker: bool = True) -> Obj:
    """A merge patch that changes the leader template, and the worker template unless `worker` is False (a new
    revision): one env entry on each container.

    A merge patch replaces lists whole, so the patch carries the templates' whole container lists."""
    lws = workloads.with_env(workloads.probe_lws("roll", replicas=2, size=2), {"LWSCONF_ROLL": value}, worker=worker)
    lwt = lws["spec"]["leaderWorkerTemplate"]
    templates = {"leaderTemplate": lwt["leaderTemplate"]}
    if worker:
        templates["workerTemplate"] = lwt["workerTemplate"]
    return {"spec": {"leaderWorkerTemplate": templates}}


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("basic", "2 groups of 3 at steady state (defaults everywhere else)",
             workloads.probe_lws("basic", replicas=2, size=3), (6,)),
    Scenario("rollout", "2 groups of 2, then both templates changed (one env entry) and rolled out",
             workloads.probe_lws("roll", replicas=2, size=2), (4, 4),
             (Step("template-changed", PatchLWS(_env_patch("2"))),)),
    Scenario("scale", "2 groups of 2, scaled to 3, then to 1",
             workloads.probe_lws("scale", replicas=2, size=2), (4, 6, 2),
             (Step("scaled-up-3", PatchLWS({"spec": {"replicas": 3}})),
              Step("scaled-down-1", PatchLWS({"spec": {"replicas": 1}})))),
    Scenario("worker-deleted", "2 groups of 2, then worker pod wd-0-1 deleted (RecreateGroupOnPodRestart)",
             workloads.probe_lws("wd", replicas=2, size=2), (4, 4),
             (Step("worker-deleted", DeletePod("wd-0-1")),)),
    Scenario("unique-subdomain", "2 groups of 2 with subdomainPolicy UniquePerReplica",
             workloads.probe_lws("uniq", replicas=2, size=2, network={"subdomainPolicy": "UniquePerReplica"}), (4,)),
    Scenario("subgroups", "1 group of 4 with subGroupSize 2 (type left to the default)",
             workloads.probe_lws("subg", replicas=1, size=4, subgroup={"subGroupSize": 2}), (4,)),
    Scenario("claims", "2 groups of 2 with one volumeClaimTemplate and a Delete/Delete retention policy",
             _with_claims(workloads.probe_lws("pvc", replicas=2, size=2)), (4,)),
    Scenario("leader-ready", "2 groups of 2 with startupPolicy LeaderReady",
             workloads.probe_lws("gate", replicas=2, size=2, startup_policy="LeaderReady"), (4,)),
    Scenario("exclusive", f"2 groups of 2, exclusive per {ZONE} (the sim's nodes span two zones)",
             workloads.probe_lws("excl", replicas=2, size=2, annotations={lwsapi.EXCLUSIVE_TOPOLOGY: ZONE}), (4,)),
    Scenario("leader-only-rollout", "2 groups of 2, then the leader template alone changed and rolled out",
             workloads.probe_lws("lroll", replicas=2, size=2), (4, 4),
             (Step("leader-template-changed", PatchLWS(_env_patch("2", worker=False))),)),
    Scenario("surge-rollout", "2 groups of 2 with maxSurge 1, then both templates changed and rolled out",
             workloads.probe_lws("surge", replicas=2, size=2, rollout={
                 "type": "RollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1}}),
             (4, 4), (Step("template-changed", PatchLWS(_env_patch("2"))),)),
    Scenario("restart-none", "2 groups of 2 with restartPolicy None, then worker pod rn-0-1 deleted (only it "
             "comes back)", workloads.probe_lws("rn", replicas=2, size=2, restart_policy="None"), (4, 4),
             (Step("worker-deleted", DeletePod("rn-0-1")),)),
    Scenario("unique-size-one", "2 groups of 1 (no workers) with subdomainPolicy UniquePerReplica",
             workloads.probe_lws("uone", replicas=2, size=1, network={"subdomainPolicy": "UniquePerReplica"}), (2,)),
)

CI: tuple[str, ...] = ("basic", "rollout", "worker-deleted", "subgroups")
"""What `make diff-impls` runs: creation, a rollout, a group recreation and subgroup labels, the paths most
objects go through, within a few minutes on 2 cores."""


def by_name(names: list[str] | None) -> list[Scenario]:
    """The named scenarios in table order (all when `names` is None); ValueError naming the known ones."""
    if not names:
        return list(SCENARIOS)
    known = {s.name: s for s in SCENARIOS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(known)} (or 'ci')")
    return [s for s in SCENARIOS if s.name in names]
