"""What `kubectl get` prints for the built-in kinds: a `Column` type and each kind's columns and cells.

kube-apiserver's printers (k8s.io/kubernetes pkg/printers/internalversion/printers.go) decide the
columns of a built-in kind, such as READY/STATUS/RESTARTS for pods or CLUSTER-IP for services; this
module holds the sim's copy of those for the kinds the sim serves, with the same headers and cell
text, so that `kubectl get` on the sim looks as it does on a real cluster. Kinds not listed get Age
only. The `Column` type, Age cells and kubectl's `HumanDuration` are in `cells`. `tables` builds
the Table from these columns (and from a CRD's printer columns). Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from lwsconf.sim.apiserver.apimachinery import selectors
from lwsconf.sim.apiserver.tables.cells import AGE, Cell, Column, Obj, age, human_duration, parse_time, value_at

# --- built-in columns ---------------------------------------------------------------------------


def _pod_ready(pod: Obj, _: datetime) -> str:
    statuses = value_at(pod, "status", "containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{len(value_at(pod, 'spec', 'containers') or [])}"


def _pod_status(pod: Obj, _: datetime) -> str:
    reason = str(value_at(pod, "status", "reason") or value_at(pod, "status", "phase") or "Unknown")
    running = False
    for status in reversed(value_at(pod, "status", "containerStatuses") or []):
        waiting = value_at(status, "state", "waiting", "reason")
        terminated = value_at(status, "state", "terminated", "reason")
        if waiting:
            reason = waiting
        elif terminated:
            reason = terminated
        elif status.get("ready") and value_at(status, "state", "running") is not None:
            running = True
    if reason == "Completed" and running:
        reason = "Running"
    if value_at(pod, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_restarts(pod: Obj, now: datetime) -> int | str:
    statuses = value_at(pod, "status", "containerStatuses") or []
    total = sum(int(s.get("restartCount", 0)) for s in statuses)
    finished = [t for s in statuses if (t := parse_time(value_at(s, "lastState", "terminated", "finishedAt")))]
    if total and finished:
        return f"{total} ({human_duration((now - max(finished)).total_seconds())} ago)"
    return total


def _pod_readiness_gates(pod: Obj, _: datetime) -> str:
    """`<true>/<gates>` over spec.readinessGates, `<none>` without gates (printPod in printers.go)."""
    gates = value_at(pod, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in value_at(pod, "status", "conditions") or []}
    met = sum(1 for gate in gates if conditions.get(gate.get("conditionType")) == "True")
    return f"{met}/{len(gates)}"


def _sts_ready(sts: Obj, _: datetime) -> str:
    return f"{value_at(sts, 'status', 'readyReplicas') or 0}/{value_at(sts, 'spec', 'replicas') or 0}"


def _svc_external_ip(svc: Obj, _: datetime) -> str:
    spec = svc.get("spec", {})
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return str(spec.get("externalName", "<none>"))
    ips = list(spec.get("externalIPs", []))
    if kind == "LoadBalancer":
        ingress = value_at(svc, "status", "loadBalancer", "ingress") or []
        ips += [i.get("ip") or i.get("hostname", "") for i in ingress]
        return ",".join(ips) or "<pending>"
    return ",".join(ips) or "<none>"


def _svc_ports(svc: Obj, _: datetime) -> str:
    out = []
    for port in value_at(svc, "spec", "ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        out.append(f"{port.get('port')}{node}/{port.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _node_status(node: Obj, _: datetime) -> str:
    ready = [c for c in value_at(node, "status", "conditions") or [] if c.get("type") == "Ready"]
    status = "Unknown" if not ready else "Ready" if ready[0].get("status") == "True" else "NotReady"
    return status + (",SchedulingDisabled" if value_at(node, "spec", "unschedulable") else "")


def _node_roles(node: Obj, _: datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    labels = value_at(node, "metadata", "labels") or {}
    roles = sorted(k.removeprefix(prefix) for k in labels if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _param_cell(obj: Obj, _: datetime) -> str:
    """A policy's `apiVersion/kind` of params, or a binding's `namespace|*/name` (or selector) of its param."""
    kind, ref = value_at(obj, "spec", "paramKind"), value_at(obj, "spec", "paramRef")
    if isinstance(kind, dict):
        return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"
    if isinstance(ref, dict) and (ref.get("name") or isinstance(ref.get("selector"), dict)):
        return (f"{ref.get('namespace') or '*'}/{ref['name']}" if ref.get("name")
                else str(selectors.LabelSelector.from_dict(ref["selector"])))
    return "<unset>"


def _field(*keys: str | int, default: Any = None) -> Cell:
    return lambda o, _: v if (v := value_at(o, *keys)) is not None else default


# (group, plural) -> the columns after Name; `tables.columns_for` falls back to [AGE] for other kinds.
BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): [
        Column("Ready", "string", _pod_ready), Column("Status", "string", _pod_status),
        Column("Restarts", "string", _pod_restarts), AGE,
        Column("IP", "string", _field("status", "podIP", default="<none>"), priority=1),
        Column("Node", "string", _field("spec", "nodeName", default="<none>"), priority=1),
        # kube-apiserver prints these two as well (pkg/printers/internalversion/printers.go,
        # podColumnDefinitions), so `kubectl get pods -o wide` has the same header as on a real cluster.
        Column("Nominated Node", "string", _field("status", "nominatedNodeName", default="<none>"), priority=1),
        Column("Readiness Gates", "string", _pod_readiness_gates, priority=1),
    ],
    ("apps", "statefulsets"): [Column("Ready", "string", _sts_ready), AGE],
    ("", "services"): [
        Column("Type", "string", _field("spec", "type", default="ClusterIP")),
        Column("Cluster-IP", "string", _field("spec", "clusterIP", default="<none>")),
        Column("External-IP", "string", _svc_external_ip), Column("Port(s)", "string", _svc_ports), AGE,
    ],
    ("", "nodes"): [
        Column("Status", "string", _node_status), Column("Roles", "string", _node_roles), AGE,
        Column("Version", "string", _field("status", "nodeInfo", "kubeletVersion", default="")),
    ],
    ("", "namespaces"): [Column("Status", "string", _field("status", "phase", default="Active")), AGE],
    # pkg/printers/internalversion/printers.go: printValidatingAdmissionPolicy(Binding).
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): [
        Column("Validations", "integer", lambda o, _: len(value_at(o, "spec", "validations") or [])),
        Column("ParamKind", "string", _param_cell), AGE,
    ],
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): [
        Column("PolicyName", "string", _field("spec", "policyName", default="")),
        Column("ParamRef", "string", _param_cell), AGE,
    ],
    # printMutatingAdmissionPolicy(Binding): the same columns, with Mutations for Validations.
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"): [
        Column("Mutations", "integer", lambda o, _: len(value_at(o, "spec", "mutations") or [])),
        Column("ParamKind", "string", _param_cell), AGE,
    ],
}
BUILTIN_COLUMNS[("admissionregistration.k8s.io", "mutatingadmissionpolicybindings")] = BUILTIN_COLUMNS[
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings")]
# printMutatingWebhook / printValidatingWebhook: the number of webhooks in the configuration.
for _plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
    BUILTIN_COLUMNS[("admissionregistration.k8s.io", _plural)] = [
        Column("Webhooks", "integer", lambda o, _: len(value_at(o, "webhooks") or [])), AGE]


# --- batch/v1 (printJob / printCronJob in pkg/printers/internalversion/printers.go) --------------------

def _has_condition(obj: Obj, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in value_at(obj, "status", "conditions") or [] if isinstance(c, dict))


def _job_status(job: Obj, _: datetime) -> str:
    """printJob's status order: Complete, Failed, Terminating, FailureTarget, Suspended, SuccessCriteriaMet."""
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if value_at(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    if _has_condition(job, "FailureTarget"):
        return "FailureTarget"
    if _has_condition(job, "Suspended"):
        return "Suspended"
    if _has_condition(job, "SuccessCriteriaMet"):
        return "SuccessCriteriaMet"
    return "Running"


def _job_completions(job: Obj, _: datetime) -> str:
    succeeded = value_at(job, "status", "succeeded") or 0
    completions, parallelism = value_at(job, "spec", "completions"), value_at(job, "spec", "parallelism")
    if completions is not None:
        return f"{succeeded}/{completions}"
    if parallelism is not None and parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def _job_duration(job: Obj, now: datetime) -> str:
    start = parse_time(value_at(job, "status", "startTime"))
    if start is None:
        return ""
    end = parse_time(value_at(job, "status", "completionTime")) or now
    return human_duration((end - start).total_seconds())


def _template_containers(*path: str) -> Callable[[str], Cell]:
    def cell_of(field: str) -> Cell:
        return lambda o, _: ",".join(str(c.get(field, "")) for c in value_at(o, *path) or [] if isinstance(c, dict))
    return cell_of


def _selector_cell(*path: str) -> Cell:
    def cell(o: Obj, _: datetime) -> str:
        selector = value_at(o, *path)
        return str(selectors.LabelSelector.from_dict(selector)) if isinstance(selector, dict) else "<none>"
    return cell


_JOB_CONTAINERS = _template_containers("spec", "template", "spec", "containers")
_CJ_CONTAINERS = _template_containers("spec", "jobTemplate", "spec", "template", "spec", "containers")

BUILTIN_COLUMNS[("batch", "jobs")] = [
    Column("Status", "string", _job_status), Column("Completions", "string", _job_completions),
    Column("Duration", "string", _job_duration), AGE,
    Column("Containers", "string", _JOB_CONTAINERS("name"), priority=1),
    Column("Images", "string", _JOB_CONTAINERS("image"), priority=1),
    Column("Selector", "string", _selector_cell("spec", "selector"), priority=1),
]
BUILTIN_COLUMNS[("batch", "cronjobs")] = [
    Column("Schedule", "string", _field("spec", "schedule", default="")),
    Column("Timezone", "string", _field("spec", "timeZone", default="<none>")),
    Column("Suspend", "boolean", _field("spec", "suspend", default=False)),
    Column("Active", "integer", lambda o, _: len(value_at(o, "status", "active") or [])),
    Column("Last Schedule", "string",
           lambda o, now: age(value_at(o, "status", "lastScheduleTime"), now) or "<none>"),
    AGE,
    Column("Containers", "string", _CJ_CONTAINERS("name"), priority=1),
    Column("Images", "string", _CJ_CONTAINERS("image"), priority=1),
    Column("Selector", "string", _selector_cell("spec", "jobTemplate", "spec", "selector"), priority=1),
]

# printPodDisruptionBudget: the counts as the spec gives them (an integer or a percentage), N/A when unset.
BUILTIN_COLUMNS[("policy", "poddisruptionbudgets")] = [
    Column("Min Available", "string", lambda o, _: str(v) if (v := value_at(o, "spec", "minAvailable")) is not None
           else "N/A"),
    Column("Max Unavailable", "string", lambda o, _: str(v) if (v := value_at(o, "spec", "maxUnavailable")) is not None
           else "N/A"),
    Column("Allowed Disruptions", "integer", _field("status", "disruptionsAllowed", default=0)), AGE,
]


# --- apps/v1 and discovery (printDeployment, printReplicaSet, printEndpointSlice) -----------------

_POD_TEMPLATE_CONTAINERS = _template_containers("spec", "template", "spec", "containers")
_WIDE_TEMPLATE = [
    Column("Containers", "string", _POD_TEMPLATE_CONTAINERS("name"), priority=1),
    Column("Images", "string", _POD_TEMPLATE_CONTAINERS("image"), priority=1),
    Column("Selector", "string", _selector_cell("spec", "selector"), priority=1),
]


def _deployment_ready(deployment: Obj, _: datetime) -> str:
    """printDeployment's Ready: ready replicas over the desired count."""
    desired = value_at(deployment, "spec", "replicas") or 0
    return f"{value_at(deployment, 'status', 'readyReplicas') or 0}/{desired}"


BUILTIN_COLUMNS[("apps", "deployments")] = [
    Column("Ready", "string", _deployment_ready),
    Column("Up-to-date", "integer", _field("status", "updatedReplicas", default=0)),
    Column("Available", "integer", _field("status", "availableReplicas", default=0)), AGE, *_WIDE_TEMPLATE,
]


# printReplicaSet: Desired (spec), Current and Ready (status), Age, then the template's containers/images and
# the selector in wide output.
BUILTIN_COLUMNS[("apps", "replicasets")] = [
    Column("Desired", "integer", _field("spec", "replicas", default=0)),
    Column("Current", "integer", _field("status", "replicas", default=0)),
    Column("Ready", "integer", _field("status", "readyReplicas", default=0)), AGE, *_WIDE_TEMPLATE,
]


def _first_three(items: list[str], unset: str) -> str:
    """listWithMoreString: at most three items joined by commas, then ' + N more...'; `unset` for none."""
    if not items:
        return unset
    more = f" + {len(items) - 3} more..." if len(items) > 3 else ""
    return ",".join(items[:3]) + more


def _slice_ports(eps: Obj, _: datetime) -> str:
    """formatDiscoveryPorts: each port's number, else its name, else '*'."""
    ports = [p for p in value_at(eps, "ports") or [] if isinstance(p, dict)]
    return _first_three([str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*")
                         for p in ports], "<unset>")


def _slice_endpoints(eps: Obj, _: datetime) -> str:
    """formatDiscoveryEndpoints: every endpoint's addresses, flattened, first three."""
    addresses = [str(a) for e in value_at(eps, "endpoints") or [] if isinstance(e, dict)
                 for a in e.get("addresses") or []]
    return _first_three(addresses, "<unset>")


BUILTIN_COLUMNS[("discovery.k8s.io", "endpointslices")] = [
    Column("AddressType", "string", _field("addressType", default="")),
    Column("Ports", "string", _slice_ports), Column("Endpoints", "string", _slice_endpoints), AGE,
]


# --- core/v1 Event (printEvent): the one built-in whose Name is not its first column -----------------------

def _event_first_seen(event: Obj, now: datetime) -> str:
    """firstTimestamp, else eventTime (events written through events.k8s.io), as an age."""
    return (age(value_at(event, "firstTimestamp"), now) or age(value_at(event, "eventTime"), now)
            or "<unknown>")


def _event_last_seen(event: Obj, now: datetime) -> str:
    series = age(value_at(event, "series", "lastObservedTime"), now)
    return series or age(value_at(event, "lastTimestamp"), now) or _event_first_seen(event, now)


def _event_count(event: Obj, _: datetime) -> int:
    """The series' count, else count; a singleton written through events.k8s.io has none: 1."""
    return int(value_at(event, "series", "count") or value_at(event, "count") or 1)


def _event_object(event: Obj, _: datetime) -> str:
    kind, name = str(value_at(event, "involvedObject", "kind") or "").lower(), value_at(event, "involvedObject", "name")
    return f"{kind}/{name}" if name else kind


def _event_source(event: Obj, _: datetime) -> str:
    """formatEventSource: component (else reportingController), then ', host' (else reportingInstance)."""
    component = value_at(event, "source", "component") or value_at(event, "reportingComponent") or ""
    instance = value_at(event, "source", "host") or value_at(event, "reportingInstance") or ""
    return f"{component}, {instance}" if instance else str(component)


FULL_COLUMNS: dict[tuple[str, str], list[Column]] = {
    # kube-apiserver prints every column (GenerateOptions{Wide: true}); kubectl shows the priority-0 ones.
    ("", "events"): [
        Column("Last Seen", "string", _event_last_seen), Column("Type", "string", _field("type", default="")),
        Column("Reason", "string", _field("reason", default="")), Column("Object", "string", _event_object),
        Column("Subobject", "string", _field("involvedObject", "fieldPath", default=""), priority=1),
        Column("Source", "string", _event_source, priority=1),
        Column("Message", "string", lambda o, _: str(value_at(o, "message") or "").strip()),
        Column("First Seen", "string", _event_first_seen, priority=1),
        Column("Count", "string", _event_count, priority=1),
        Column("Name", "string", _field("metadata", "name", default=""), priority=1),
    ],
}
"""Built-ins whose table does not start with Name: their whole column list."""
