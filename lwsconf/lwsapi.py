"""The LeaderWorkerSet API's names, defined once: group, version, resource, labels, annotations, env vars.

Every part of lwsconf that speaks LWS (the suite's harness and waits, the reference reconciler, the serving
workloads, the reports) imports its keys from here, so a renamed key is one edit and a typo is an import
error. The values are the API's (docs/lws-contract.md, sections 3.1-3.3). Only names:
no functions of them (the reconciler's `labels` module computes the portable hashes) and no imports, so any
layer may use it.
"""

from __future__ import annotations

GROUP = "leaderworkerset.x-k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "LeaderWorkerSet"
PLURAL = "leaderworkersets"
CRD_NAME = f"{PLURAL}.{GROUP}"
"""The LeaderWorkerSet CustomResourceDefinition's name."""

PREFIX = "leaderworkerset.sigs.k8s.io/"
"""Every LWS label and annotation key starts with this."""

# Labels (section 3.1).
NAME = PREFIX + "name"
TEMPLATE_REVISION_HASH = PREFIX + "template-revision-hash"
GROUP_INDEX = PREFIX + "group-index"
GROUP_KEY = PREFIX + "group-key"
WORKER_INDEX = PREFIX + "worker-index"
SUBGROUP_INDEX = PREFIX + "subgroup-index"
SUBGROUP_KEY = PREFIX + "subgroup-key"

# Annotations (section 3.2).
SIZE = PREFIX + "size"
REPLICAS = PREFIX + "replicas"
LEADER_NAME = PREFIX + "leader-name"
EXCLUSIVE_TOPOLOGY = PREFIX + "exclusive-topology"
SUBGROUP_EXCLUSIVE_TOPOLOGY = PREFIX + "subgroup-exclusive-topology"
SUBGROUP_SIZE = PREFIX + "subgroup-size"
SUBGROUP_POLICY_TYPE = PREFIX + "subgroup-policy-type"
SUBDOMAIN_POLICY = PREFIX + "subdomainPolicy"
LEADER_REQUESTS_TPUS = PREFIX + "leader-requests-tpus"
RECREATE_GROUP_AFTER_START = PREFIX + "experimental-recreate-group-after-start"

# Volcano gang scheduling (section 4.13): the PodGroup kind LWS creates and the keys it reads and writes.
# Volcano's API (volcano.sh/apis pkg/apis/scheduling/v1beta1, labels.go), as upstream LWS uses it.
VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_VERSION = "v1beta1"
PODGROUP_KIND = "PodGroup"
PODGROUP_PLURAL = "podgroups"
PODGROUP_GROUP_NAME = "scheduling.k8s.io/group-name"
"""Pod annotation naming the pod's PodGroup."""
PODGROUP_QUEUE_NAME = "scheduling.volcano.sh/queue-name"
"""LWS annotation whose value becomes the PodGroup's spec.queue."""
VOLCANO_ANNOTATION_PREFIX = "volcano.sh/"
"""LWS annotations with this prefix are copied onto its PodGroups."""
GANG_PROVIDER_VOLCANO = "volcano"
"""The one gangSchedulingManagement.schedulerProvider upstream supports."""

# Environment variables (section 3.3).
ENV_LEADER_ADDRESS = "LWS_LEADER_ADDRESS"
ENV_GROUP_SIZE = "LWS_GROUP_SIZE"
ENV_WORKER_INDEX = "LWS_WORKER_INDEX"
ENV_NAMES = (ENV_LEADER_ADDRESS, ENV_GROUP_SIZE, ENV_WORKER_INDEX)

# Enumerations.
SUBGROUP_LEADER_WORKER = "LeaderWorker"
SUBGROUP_LEADER_EXCLUDED = "LeaderExcluded"
SUBDOMAIN_SHARED = "Shared"
SUBDOMAIN_UNIQUE_PER_REPLICA = "UniquePerReplica"

__all__ = [
    "GROUP",
    "VERSION",
    "API_VERSION",
    "KIND",
    "PLURAL",
    "CRD_NAME",
    "PREFIX",
    "NAME",
    "TEMPLATE_REVISION_HASH",
    "GROUP_INDEX",
    "GROUP_KEY",
    "WORKER_INDEX",
    "SUBGROUP_INDEX",
    "SUBGROUP_KEY",
    "SIZE",
    "REPLICAS",
    "LEADER_NAME",
    "EXCLUSIVE_TOPOLOGY",
    "SUBGROUP_EXCLUSIVE_TOPOLOGY",
    "SUBGROUP_SIZE",
    "SUBGROUP_POLICY_TYPE",
    "SUBDOMAIN_POLICY",
    "LEADER_REQUESTS_TPUS",
    "RECREATE_GROUP_AFTER_START",
    "VOLCANO_GROUP",
    "VOLCANO_VERSION",
    "PODGROUP_KIND",
    "PODGROUP_PLURAL",
    "PODGROUP_GROUP_NAME",
    "PODGROUP_QUEUE_NAME",
    "VOLCANO_ANNOTATION_PREFIX",
    "GANG_PROVIDER_VOLCANO",
    "ENV_LEADER_ADDRESS",
    "ENV_GROUP_SIZE",
    "ENV_WORKER_INDEX",
    "ENV_NAMES",
    "SUBGROUP_LEADER_WORKER",
    "SUBGROUP_LEADER_EXCLUDED",
    "SUBDOMAIN_SHARED",
    "SUBDOMAIN_UNIQUE_PER_REPLICA",
]
