"""What each known difference between the reference and upstream means, and the judge that keeps the list true.

Every difference `lwsconf diff-impls` reports between the reference and upstream's release must match an
entry here, and every entry must still match a difference in each of its scenarios that ran: a new
difference fails `make diff-impls` (decide: a conformance test, a documented divergence, or an
implementation freedom, and add it here), and so does an entry nothing matches any more (remove it:
the implementations converged). An entry matches a difference by kind, path pattern (`*` matches any
characters, everything else is literal, brackets included) and scenario. No I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lwsconf import lwsapi
from lwsconf.implcompare.model import Difference


@dataclass(frozen=True)
class Disposition:
    """One known difference and what it is.

    `verdict` is one of `tested` (`why` names the conformance test that holds the contract), `divergence`
    (`why` names the row of conformance/divergences.yaml) or `freedom` (`why` says why either behaviour is
    correct, citing docs/lws-contract.md)."""

    key: str
    kinds: tuple[str, ...]
    paths: tuple[str, ...]
    scenarios: tuple[str, ...]
    verdict: str
    why: str

    def matches(self, d: Difference) -> bool:
        return d.scenario in self.scenarios and d.kind in self.kinds and any(glob(p, d.path) for p in self.paths)

    def line(self) -> str:
        label = {"tested": "tested by", "divergence": "documented divergence", "freedom": "implementation freedom:"}
        return f"{label.get(self.verdict, self.verdict)} {self.why}"


def glob(pattern: str, path: str) -> bool:
    """`*` matches any run of characters (dots and brackets too); everything else matches itself."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), path) is not None


VERDICTS = ("tested", "divergence", "freedom")

ALL = ("basic", "rollout", "scale", "worker-deleted", "unique-subdomain", "subgroups", "claims", "leader-ready",
       "exclusive", "leader-only-rollout", "surge-rollout", "restart-none", "unique-size-one")

_SUBGROUP_TYPE = f"[{lwsapi.SUBGROUP_POLICY_TYPE}]"
_EXCLUSIVE = f"[{lwsapi.EXCLUSIVE_TOPOLOGY}]"
_TEMPLATE_ENV = ("spec.template.spec.containers[*].env", "spec.template.spec.containers[*].env[LWS_GROUP_SIZE]",
                 "spec.template.spec.containers[*].env[LWS_LEADER_ADDRESS]",
                 "spec.template.spec.containers[*].env[LWS_WORKER_INDEX]")
"""Where the reference's template env differs: the leader's whole list (two LWS_LEADER_ADDRESS entries), a worker
template's three LWS entries (upstream has none there). A differing value of an entry both write (a pod's
LWS_GROUP_SIZE, say) matches none of these paths, so it is reported."""

DISPOSITIONS: tuple[Disposition, ...] = (
    Disposition(
        "env-from-templates", ("StatefulSet", "Pod", "ControllerRevision"),
        (*_TEMPLATE_ENV, *(f"data.{p}" for p in _TEMPLATE_ENV), "spec.containers[*].env",
         "spec.containers[*].env[LWS_WORKER_INDEX].value", "spec.containers[*].env[LWS_WORKER_INDEX].valueFrom"),
        ALL, "tested",
        "EnvVarsInEveryContainer, EnvVarExpansion, EnvListMatchesWebhookOrder and LeaderAddressReachesLeader "
        "(conformance/test_env_injection.py), which read what each container's process sees: the reference writes "
        "LWS_* into the StatefulSets' templates (the leader's address as fieldRef metadata.name then "
        "$(LWS_LEADER_ADDRESS).<N>.<ns>, a worker's index as fieldRef to the apps.kubernetes.io/pod-index label), "
        "upstream's pod webhook writes literals into each pod (lwsconf/reconciler/README.md, choice 1; lws-contract.md "
        "3.3 and 3.4 give the values a container sees, which are equal)"),
    Disposition(
        "lws-template-empty-metadata", ("LeaderWorkerSet", "ControllerRevision"),
        ("spec.leaderWorkerTemplate.*Template.metadata", "data.spec.leaderWorkerTemplate.*Template.metadata"),
        ALL, "freedom",
        "upstream's defaulting webhook re-encodes the LWS through its Go types, whose non-pointer ObjectMeta writes an "
        "empty `metadata: {}` into a pod template that had none (and so into the revision data); an empty object "
        "and an absent one mean the same template, and the contract's defaults (lws-contract.md 1.3) do not "
        "include it"),
    Disposition(
        "lws-template-port-protocol", ("LeaderWorkerSet", "ControllerRevision"),
        ("spec.leaderWorkerTemplate.*Template.spec.containers[*].ports[*].protocol",
         "data.spec.leaderWorkerTemplate.*Template.spec.containers[*].ports[*].protocol"),
        ALL, "freedom",
        "upstream's CRD schema is generated from the core Pod types and carries their `default: TCP` for a "
        "container port's protocol; the reference's compact pod-template schema has no pod-field defaults "
        "(lwsconf/reconciler/README.md, 'Pod templates: a compact schema'). Kubernetes defaults the field where it "
        "takes effect, on the StatefulSets' templates and the pods, where both compare equal; lws-contract.md 1.3 "
        "lists only LWS-level defaults"),
    Disposition(
        "lws-claim-template-empty-status", ("LeaderWorkerSet", "ControllerRevision"),
        ("spec.leaderWorkerTemplate.volumeClaimTemplates[*].status",
         "data.spec.leaderWorkerTemplate.volumeClaimTemplates[*].status"),
        ("claims",), "freedom",
        "the same Go re-encoding as lws-template-empty-metadata: a claim template's non-pointer status becomes "
        "`status: {}`; the StatefulSets' claim templates and the PVCs compare equal (lws-contract.md 4.10)"),
    Disposition(
        "subgroup-policy-type-on-workers", ("Pod", "StatefulSet", "ControllerRevision"),
        (f"metadata.annotations{_SUBGROUP_TYPE}", f"spec.template.metadata.annotations{_SUBGROUP_TYPE}",
         f"data.spec.template.metadata.annotations{_SUBGROUP_TYPE}"),
        ("subgroups",), "divergence",
        "SubGroupPolicyTypeOnEveryPod (conformance/divergences.yaml, upstream v0.9.0): upstream writes the "
        "subgroup-policy-type annotation on the leader template only before v0.10.0 (kubernetes-sigs/lws#945); "
        "lws-contract.md 3.2 puts it on the worker template too; the test holds implementations to it"),
    Disposition(
        "exclusive-leader-terms", ("Pod", "StatefulSet", "ControllerRevision"),
        ("spec.affinity*", "spec.template.spec.affinity*", "data.spec.template.spec.affinity*"),
        ("exclusive",), "tested",
        "ExclusivePlacementOneGroupPerDomain (conformance/test_exclusive_placement.py) holds the outcome, one group "
        "per topology domain with workers beside their leader, which both reach; upstream's exact per-pod terms "
        "(group-key podAffinity and anti-affinity, from its pod webhook) are the optional feature "
        "LWSExclusivePlacementAffinityTerms (conformance/test_affinity_terms.py), which the reference does not claim: "
        "its shared leader template cannot carry a group's own key, so it uses one anti-affinity term on worker-index "
        "(lwsconf/reconciler/README.md, choice 4; lws-contract.md 4.7)"),
    Disposition(
        "exclusive-annotation-on-statefulsets", ("StatefulSet", "ControllerRevision"),
        (f"metadata.annotations{_EXCLUSIVE}", "metadata.annotations"),
        ("exclusive",), "freedom",
        "the reference also copies the LWS's exclusive-topology annotation onto the StatefulSets' own metadata (the "
        "sim's StatefulSet controller copies it into their ControllerRevisions); lws-contract.md 3.2 requires it on "
        "both pod templates, hence pods, where both agree, and nothing reads it from a StatefulSet's metadata"),
    Disposition(
        "duplicate-revision-unique-per-replica", ("ControllerRevision",), ("(object)",),
        ("unique-subdomain", "unique-size-one"), "freedom",
        "upstream v0.9.0 leaves a second LWS ControllerRevision (revision 2, same template-revision-hash and data, "
        "name suffixed -2) at steady state under subdomainPolicy UniquePerReplica, in every run so far; the reference "
        "has one. The path that makes it: while the manager's cache has no leader StatefulSet yet, the key it looks "
        "up is empty, GetRevision finds nothing and a new revision is created "
        "(sigs.k8s.io/lws@v0.9.0 pkg/controllers/leaderworkerset_controller.go:722-745, "
        "pkg/utils/revision/revision_utils.go:112-116); why UniquePerReplica makes it repeatable on the sim was not "
        "established. The reference reuses a matching revision (lwsconf/reconciler/README.md, choice 12). Revisions "
        "are looked up by key and the highest wins (lws-contract.md 2.5), so no rollout, status or pod changes; the "
        "contract does not bound how many revisions of one key exist"),
)
"""The differences between the reference and upstream v0.9.0 (`--a reference --b upstream-local`), as found
by the run recorded in docs/implementation-diff.md."""


@dataclass(frozen=True)
class Judgement:
    """Each difference's disposition key (None: unlisted), the unlisted ones, and the stale entries with the
    scenario each no longer matches in."""

    keys: list[str | None]
    """Aligned with the differences judged."""
    unlisted: list[Difference]
    stale: list[tuple[Disposition, str]]

    @property
    def ok(self) -> bool:
        return not self.unlisted and not self.stale


def judge(diffs: Sequence[Difference], entries: Iterable[Disposition], scenarios_run: Iterable[str]) -> Judgement:
    """Match every difference to the first entry that fits; stale: an entry with no match in a scenario it
    lists that ran."""
    entries = list(entries)
    keys: list[str | None] = []
    used: set[tuple[str, str]] = set()
    for d in diffs:
        hit = next((e for e in entries if e.matches(d)), None)
        keys.append(hit.key if hit is not None else None)
        if hit is not None:
            used.add((hit.key, d.scenario))
    ran = set(scenarios_run)
    stale = [(e, s) for e in entries for s in e.scenarios if s in ran and (e.key, s) not in used]
    return Judgement(keys, [d for d, k in zip(diffs, keys, strict=True) if k is None], stale)


def check(entries: Iterable[Disposition]) -> list[str]:
    """What is wrong with the list itself: duplicate keys, unknown verdicts or scenarios, an empty reason."""
    problems, seen = [], set()
    for e in entries:
        if e.key in seen:
            problems.append(f"{e.key}: duplicate key")
        seen.add(e.key)
        if e.verdict not in VERDICTS:
            problems.append(f"{e.key}: verdict {e.verdict!r}, want one of {', '.join(VERDICTS)}")
        unknown = [s for s in e.scenarios if s not in ALL]
        if unknown or not e.scenarios:
            problems.append(f"{e.key}: scenarios {list(e.scenarios)}: unknown {unknown} (known: {', '.join(ALL)})")
        if not e.why.strip():
            problems.append(f"{e.key}: no reason given")
    return problems
