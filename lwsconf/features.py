"""Conformance features: the stable names an implementation claims support for.

A feature names one observable capability of the LeaderWorkerSet API (with the contract section
that defines it). Tests declare the features they exercise; a run claims features through profiles
or flags; a test whose features are not all claimed is NOT_SUPPORTED rather than failed (Gateway API's
model, kubernetes-sigs/gateway-api pkg/features). Names are part of the report format: never rename
one, add a new one instead. No I/O here.
"""

from __future__ import annotations

from enum import StrEnum


class Feature(StrEnum):
    """Each member: the capability, and the docs/lws-contract.md section it comes from."""

    OBJECT_MODEL = "LWSObjectModel"
    """Leader/worker StatefulSets, pods, hostnames and Services named as in section 2."""
    LABELS = "LWSLabelsAndAnnotations"
    """Labels and annotations of section 3.1/3.2 on every LWS-owned object."""
    ENV_INJECTION = "LWSEnvInjection"
    """LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX as containers observe them (section 3.3)."""
    DEFAULTING = "LWSDefaulting"
    """A created LWS reads back with every default of section 1.3."""
    VALIDATION = "LWSValidation"
    """Invalid specs (section 5.1, V1-V24) are rejected; the explicitly accepted ones are not."""
    GROUP_RESTART = "LWSRecreateGroupOnPodRestart"
    """A failed or deleted pod recreates its whole group (section 4.2)."""
    RESTART_POLICY_NONE = "LWSRestartPolicyNone"
    """Under restartPolicy None only the failed container restarts (section 4.2)."""
    RECREATE_AFTER_START = "LWSRecreateGroupAfterStart"
    """RecreateGroupAfterStart leaves still-starting groups alone (section 4.2)."""
    SCALING = "LWSScaling"
    """spec.replicas up, down (highest index first), to and from 0 (section 4.3)."""
    SCALE_SUBRESOURCE = "LWSScaleSubresource"
    """/scale and status.hpaPodSelector (section 4.3)."""
    ROLLING_UPDATE = "LWSRollingUpdate"
    """Group-by-group template rollout from the highest index (section 4.4)."""
    ROLLING_UPDATE_MAX_UNAVAILABLE = "LWSRollingUpdateMaxUnavailable"
    """maxUnavailable counted in groups (section 4.4.3-4.4.5)."""
    ROLLING_UPDATE_MAX_SURGE = "LWSRollingUpdateMaxSurge"
    """maxSurge counted in groups, surge released highest first (section 4.4.7)."""
    ROLLING_UPDATE_PARTITION = "LWSRollingUpdatePartition"
    """rollingUpdateConfiguration.partition (section 4.4.6)."""
    STATUS_CONDITIONS = "LWSStatusConditions"
    """Status counters and Available/Progressing/UpdateInProgress conditions (section 4.5)."""
    LEADER_SERVICE = "LWSLeaderOnlyService"
    """A Service selecting leaders routes real traffic to leaders only (sections 2.6, 3.1)."""
    SERVING_RENDEZVOUS = "LWSServingRendezvous"
    """A multi-node server's members find each other through LWS_LEADER_ADDRESS/LWS_GROUP_SIZE and serve as one
    group: every leader reports a complete group of the right pods (issue 16; the emulator, or vLLM on GPUs)."""
    SERVING_UNDER_LOAD = "LWSServingUnderLoad"
    """Requests through the leader Service keep being answered by complete groups while a member fails, the
    LWS rolls out (no request fails with a preStop delay and graceful drain) and it scales out."""
    STARTUP_LEADER_CREATED = "LWSStartupPolicyLeaderCreated"
    """Workers are created without waiting for the leader (section 4.1)."""
    STARTUP_LEADER_READY = "LWSStartupPolicyLeaderReady"
    """No worker StatefulSet exists before its leader is Ready (section 4.1)."""
    EXCLUSIVE_PLACEMENT = "LWSExclusivePlacement"
    """One group per topology domain, workers pinned to their leader's domain (section 4.7)."""
    SUBGROUPS = "LWSSubGroupPolicy"
    """subGroupPolicy labels, annotations and index formula (section 4.8)."""
    SUBDOMAIN_UNIQUE_PER_REPLICA = "LWSSubdomainUniquePerReplica"
    """networkConfig.subdomainPolicy UniquePerReplica and switching policies (section 4.9)."""
    VOLUME_CLAIM_TEMPLATES = "LWSVolumeClaimTemplates"
    """PVCs named after leader and worker pods (section 4.10)."""
    DELETION = "LWSDeletion"
    """Deleting an LWS (foreground) removes everything it created (section 4.12)."""
    CONTROLLER_RESTART = "LWSControllerRestart"
    """Restarting the implementation's controller disturbs no workload: no pod recreated, no spurious revision,
    status unchanged, and an in-flight rollout or group restart completes with its guarantees (disruptive: the
    harness must be able to restart the controller)."""
    CONTROLLER_UPGRADE = "LWSControllerUpgrade"
    """Replacing the implementation's controller by a newer build while workloads run (upstream: the previous
    release's manager, CRDs and webhooks, then the version under test's) recreates no pod or StatefulSet, adds
    no revision, keeps every LWS Available, and the new controller reconciles old and new LWS objects (section
    4.14; upstream's test/e2e/upgrade). Disruptive, and needs the harness to run the older build."""
    EVENTS = "LWSEvents"
    """Normal Events regarding the LWS with the documented reasons (CreatingRevision, GroupsProgressing,
    AllGroupsReady, GroupsUpdating, RecreateGroup) as its lifecycle goes on (section 4.6). Optional: Events are
    informative, and an implementation may report its progress only through status."""
    EXCLUSIVE_PLACEMENT_TERMS = "LWSExclusivePlacementAffinityTerms"
    """The exact pod affinity/anti-affinity terms of section 4.7 on each pod, keyed on its own group-key (and
    subgroup-key for subgroup-exclusive-topology), as upstream's pod webhook injects them. Optional: one group
    per domain (LWSExclusivePlacement) can be had with other terms."""
    GANG_SCHEDULING = "LWSGangScheduling"
    """With gang scheduling configured for Volcano, one scheduling.volcano.sh/v1beta1 PodGroup per group and
    revision (`N-i-<rev>`, owned by the leader pod, minMember and minResources from the templates) and every pod
    annotated `scheduling.k8s.io/group-name` with it; gone with the leader, made anew on resize and rollout
    (section 4.13). Optional: needs the implementation configured for it and the PodGroup CRD served (the
    harness installs its own); no Volcano scheduler is needed to observe it."""
    TPU_ENV_INJECTION = "LWSTPUEnvInjection"
    """TPU_WORKER_HOSTNAMES, TPU_WORKER_ID, TPU_NAME, TPU_PROCESS_ADDRESSES and TPU_PROCESS_PORT in the TPU
    containers of LWS pods that request `google.com/tpu`, with and without subgroups and whether or not the
    leader requests TPUs (section 3.5). Optional: only TPU workloads need it."""
    DISAGGREGATED_OBJECT_MODEL = "DisaggregatedSetObjectModel"
    """A DisaggregatedSet makes one LWS per role, named `<D>-[<s>-]<h>-<r>`, labelled with name, role and revision,
    owned by the set, carrying the role's labels, annotations and LWS spec (docs/disaggregatedset-contract.md 2.1,
    2.2, 3; upstream E3, E8, E9), and deleting the set deletes them (2.6; E11)."""
    DISAGGREGATED_VALIDATION = "DisaggregatedSetValidation"
    """Invalid DisaggregatedSets are refused (section 5: role count and names, the all-or-nothing replicas rule,
    partition; E2) and valid ones admitted."""
    DISAGGREGATED_SCALING = "DisaggregatedSetScaling"
    """A role's replicas change without a rollout: the LWS of the current revision is patched, nothing new is made
    (4.3; E6)."""
    DISAGGREGATED_SERVICES = "DisaggregatedSetRoleServices"
    """Each role gets a headless, portless Service selecting that role's pods of the current revision once every
    role has a ready group (2.3; E7)."""
    DISAGGREGATED_ROLLOUT = "DisaggregatedSetCoordinatedRollout"
    """A template change rolls every role to a new revision together, in the planner's steps, never leaving a role
    without serving groups, and deletes the old LWS once drained (4.7; E4, E5, E12, E13, E14)."""
    DISAGGREGATED_SLICES = "DisaggregatedSetSlices"
    """spec.slices copies the whole role topology, slice-labelled and -named, and changing it never rolls (4.4;
    v0.10.0+)."""
    DISAGGREGATED_PLACEMENT = "DisaggregatedSetPlacement"
    """placementPolicy ExclusiveSlice/ExclusiveTopology put the contract's affinity terms on the LWS templates, and
    are refused with LWS exclusive-topology annotations (4.5, D-V23, D-V24; E10, I1-I7; v0.10.0+)."""
    DISAGGREGATED_EXTERNAL_SCALING = "DisaggregatedSetExternalScaling"
    """An External role gets a DisaggregatedSetRoleScaler whose /scale works before any write and whose writes reach
    the role's LWS (4.6; H1, H2; v0.10.0+)."""
    DISAGGREGATED_STATUS = "DisaggregatedSetStatus"
    """status.roleStatuses and the Available/Progressing conditions through creation and a rollout (4.8; main)."""
    VLLM_MULTI_NODE = "VLLMMultiNode"
    """A real multi-node vLLM server on GPU nodes answers completions through the leader Service."""
    VLLM_CPU_MULTI_NODE = "VLLMCPUMultiNode"
    """Real vLLM (its CPU build) split by pipeline parallelism over an LWS group serves through the leader Service,
    comes back whole after a worker's engine dies, and rolls to a new revision."""


ALL: frozenset[Feature] = frozenset(Feature)


def parse(names: str, *, where: str) -> frozenset[Feature]:
    """Parse a comma-separated list of feature names; errors name the source and the valid names."""
    out: set[Feature] = set()
    for raw in (n.strip() for n in names.split(",")):
        if not raw:
            continue
        try:
            out.add(Feature(raw))
        except ValueError:
            valid = ", ".join(sorted(f.value for f in Feature))
            raise ValueError(f"unknown feature {raw!r} in {where}; valid features: {valid}") from None
    return frozenset(out)
