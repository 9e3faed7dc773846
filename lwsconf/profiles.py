"""Conformance profiles: named bundles of features an implementation can claim as a whole.

Claiming a profile claims its core features. Its extended features are claimed one by one (or with
--all-features); the report lists the supported and unsupported extended features per profile, as
Gateway API's ConformanceProfile does. A profile stands on its own: its tests may need features of
another profile (a serving test restarts a group, an extended one rolls out), and the profile
`implies` them, as Gateway API's profiles include the core features their tests use. Claiming it
claims the implied features that are core where they belong; --all-features adds the implied extended
ones with its own (`Profile.claimed`). tests/test_profiles.py keeps `implies` complete. GPU-SMOKE is
never part of conformance, as Kubernetes keeps GPUs out of its own conformance program. No I/O here."""

from __future__ import annotations

from dataclasses import dataclass

from lwsconf.features import Feature


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    core: frozenset[Feature]
    extended: frozenset[Feature] = frozenset()
    implies: frozenset[Feature] = frozenset()
    """Features of other profiles that this profile's tests need; claimed with it (see `claimed`)."""

    @property
    def features(self) -> frozenset[Feature]:
        """The profile's own features (not those it implies: each feature belongs to one profile)."""
        return self.core | self.extended

    def claimed(self, *, all_features: bool) -> frozenset[Feature]:
        """What claiming this profile claims: its core features and the implied features that are core in
        their own profile; with --all-features also its extended features and every implied one. So an
        implied feature keeps the standing it has where it belongs: a test needing an extended feature of
        another profile is no core test of this one either (lwsconf/report/build.py `is_core`)."""
        implied_core = frozenset(f for f in self.implies if f in profile_of(f).core)
        if all_features:
            return self.features | self.implies
        return self.core | implied_core


LWS_CORE = Profile(
    "LWS-CORE",
    "What every LeaderWorkerSet implementation must do: the object model, labels, env, defaulting, "
    "validation, group restart, scaling, basic rolling updates, status and deletion.",
    core=frozenset({
        Feature.OBJECT_MODEL, Feature.LABELS, Feature.ENV_INJECTION, Feature.DEFAULTING, Feature.VALIDATION,
        Feature.GROUP_RESTART, Feature.RESTART_POLICY_NONE, Feature.SCALING, Feature.SCALE_SUBRESOURCE,
        Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_UNAVAILABLE, Feature.STATUS_CONDITIONS,
        Feature.STARTUP_LEADER_CREATED, Feature.DELETION,
    }),
)

LWS_EXTENDED = Profile(
    "LWS-EXTENDED",
    "Optional but portable API features: surge, partition, startup gating, exclusive placement, subgroups, "
    "per-replica subdomains, volume claim templates, RecreateGroupAfterStart, surviving a controller restart or "
    "upgrade, Events with the documented reasons, upstream's exclusive-placement affinity terms, Volcano PodGroups "
    "per group, TPU env vars.",
    core=frozenset(),
    implies=frozenset({
        Feature.DELETION, Feature.GROUP_RESTART, Feature.RESTART_POLICY_NONE, Feature.ROLLING_UPDATE,
        Feature.ROLLING_UPDATE_MAX_UNAVAILABLE, Feature.SCALING, Feature.STATUS_CONDITIONS, Feature.VALIDATION,
    }),
    extended=frozenset({
        Feature.ROLLING_UPDATE_MAX_SURGE, Feature.ROLLING_UPDATE_PARTITION, Feature.STARTUP_LEADER_READY,
        Feature.EXCLUSIVE_PLACEMENT, Feature.SUBGROUPS, Feature.SUBDOMAIN_UNIQUE_PER_REPLICA,
        Feature.VOLUME_CLAIM_TEMPLATES, Feature.RECREATE_AFTER_START, Feature.CONTROLLER_RESTART,
        Feature.CONTROLLER_UPGRADE,
        Feature.EVENTS, Feature.EXCLUSIVE_PLACEMENT_TERMS, Feature.GANG_SCHEDULING, Feature.TPU_ENV_INJECTION,
    }),
)

LWS_SERVING = Profile(
    "LWS-SERVING",
    "Serving traffic: a multi-node server's groups rendezvous, a leader-only Service reaches leaders of every "
    "group, and requests keep being answered through a member failure, a rollout and a scale-out.",
    core=frozenset({Feature.LEADER_SERVICE, Feature.SERVING_RENDEZVOUS, Feature.SERVING_UNDER_LOAD}),
    implies=frozenset({Feature.GROUP_RESTART, Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_MAX_SURGE,
                       Feature.SCALING}),
)

LWS_DISAGGREGATED = Profile(
    "LWS-DISAGGREGATED",
    "DisaggregatedSet (disaggregatedset.x-k8s.io/v1): prefill/decode roles as one unit over LWS, their objects, "
    "validation, scaling, role Services and the coordinated rollout; slices, placement, external scaling and status "
    "as extended features (docs/disaggregatedset-contract.md).",
    core=frozenset({
        Feature.DISAGGREGATED_OBJECT_MODEL, Feature.DISAGGREGATED_VALIDATION, Feature.DISAGGREGATED_SCALING,
        Feature.DISAGGREGATED_SERVICES, Feature.DISAGGREGATED_ROLLOUT,
    }),
    extended=frozenset({
        Feature.DISAGGREGATED_SLICES, Feature.DISAGGREGATED_PLACEMENT, Feature.DISAGGREGATED_EXTERNAL_SCALING,
        Feature.DISAGGREGATED_STATUS,
    }),
)

GPU_SMOKE = Profile(
    "GPU-SMOKE",
    "Real multi-node vLLM on GPU nodes; runs only where GPU nodes exist.",
    core=frozenset({Feature.VLLM_MULTI_NODE}),
)

VLLM_CPU = Profile(
    "VLLM-CPU",
    "Real vLLM without a GPU: its CPU build split over an LWS group (pipeline parallel, vLLM's multi-node backend), "
    "a tiny model made on the spot; runs where vLLM's CPU image runs (the sim maps it onto `make vllm-cpu-runtime`).",
    core=frozenset({Feature.VLLM_CPU_MULTI_NODE}),
)

ALL: dict[str, Profile] = {p.name: p for p in (LWS_CORE, LWS_EXTENDED, LWS_SERVING, LWS_DISAGGREGATED, GPU_SMOKE,
                                              VLLM_CPU)}
DEFAULT = ("LWS-CORE", "LWS-EXTENDED", "LWS-SERVING", "LWS-DISAGGREGATED")
CONFORMANCE = DEFAULT
"""The conformance profiles: --all-features claims every one of their features whatever --profiles says.
GPU-SMOKE and VLLM-CPU are not conformance and need GPU nodes or vLLM's CPU image (gigabytes a real
cluster pulls), so their features are claimed only by naming them in --profiles (or --supported-features)."""


def parse(names: str, *, where: str) -> tuple[Profile, ...]:
    out = []
    for raw in (n.strip() for n in names.split(",")):
        if not raw:
            continue
        if raw not in ALL:
            raise ValueError(f"unknown profile {raw!r} in {where}; valid profiles: {', '.join(ALL)}")
        out.append(ALL[raw])
    return tuple(out)


def profile_of(feature: Feature) -> Profile:
    """The profile a feature belongs to (each feature is in exactly one)."""
    for profile in ALL.values():
        if feature in profile.features:
            return profile
    raise KeyError(f"feature {feature} belongs to no profile")


def profiles_of(features: frozenset[Feature]) -> tuple[str, ...]:
    """The profiles a test of `features` belongs to: those owning one of its features whose own and implied
    features cover them all, else (nothing covers them) every profile owning one of them.

    Why not simply every owner: a test of LeaderOnlyService and RecreateGroupOnPodRestart is a serving test (it
    needs the Service LWS-SERVING owns, and LWS-SERVING implies group restart); counted under LWS-CORE too, a run
    claiming LWS-CORE alone reported it NOT_SUPPORTED there and LWS-CORE `partial` although every LWS-CORE
    test passed. As in Gateway API, a profile's tests are the ones its claims can run."""
    owners = {profile_of(f) for f in features}
    covering = sorted(p.name for p in owners if features <= p.features | p.implies)
    return tuple(covering) if covering else tuple(sorted(p.name for p in owners))
