"""The DisaggregatedSet API's names, defined once (docs/disaggregatedset-contract.md sections 1, 3, 4.8, 4.9).

The companion of `lwsapi`: group, kinds, resources, label and annotation keys, condition types, reasons and
messages. Only names, no imports, so any layer may use it (the reference's core, the suite, reports).
"""

from __future__ import annotations

GROUP = "disaggregatedset.x-k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "DisaggregatedSet"
PLURAL = "disaggregatedsets"
CRD_NAME = f"{PLURAL}.{GROUP}"
SCALER_KIND = "DisaggregatedSetRoleScaler"
SCALER_PLURAL = "disaggregatedsetrolescalers"
SCALER_CRD_NAME = f"{SCALER_PLURAL}.{GROUP}"

PREFIX = GROUP + "/"
"""Every DisaggregatedSet label and annotation key starts with this."""

# Labels (section 3).
NAME = PREFIX + "name"
ROLE = PREFIX + "role"
SLICE = PREFIX + "slice"
REVISION = PREFIX + "revision"
APP = "app"
"""Set on the LWS and its templates to `<D>-<s>-<r>`, over a user's own `app` label (trap DT12)."""

# Annotations.
INITIAL_REPLICAS = PREFIX + "initial-replicas"
"""On an old-revision LWS once a rollout starts: its spec.replicas then, the planner's fixed baseline."""

SERVICE_SUFFIX = "-prv"
"""A role Service is named after its LWS plus this (section 2.3)."""

# Conditions (section 4.8).
AVAILABLE = "Available"
PROGRESSING = "Progressing"
REASON_ALL_READY = "AllRolesReady"
REASON_IN_PROGRESS = "RolloutInProgress"
MESSAGE_ALL_READY = ("All roles have reached their desired replica count, ready and updated to the current "
                     "revision")
MESSAGE_IN_PROGRESS = ("Not all roles have reached their desired replica count, ready and updated to the current "
                       "revision")
SCALER_READY = "Ready"
SCALER_REASON_BOUND = "Bound"
SCALER_MESSAGE_BOUND = "Scaler bound to a live DisaggregatedSet role"

# Placement policy types (section 4.5) and scaling modes (4.6).
PLACEMENT_NONE = "None"
PLACEMENT_EXCLUSIVE_SLICE = "ExclusiveSlice"
PLACEMENT_EXCLUSIVE_TOPOLOGY = "ExclusiveTopology"
SCALING_STATIC = "Static"
SCALING_EXTERNAL = "External"
