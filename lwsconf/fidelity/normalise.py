"""Normalisation: what of an answer is allowed to differ between two correct API servers.

Each rule below is a named function with its reason. A rule only touches values the server
generates (identifiers, times, counters, random suffixes, allocated addresses) or the cadence of
things Kubernetes does not promise; it keeps their presence, so "the server set a uid" is still
compared. Nothing here hides a difference in behaviour: codes, reasons, causes, field values a
client chose or a default the server applied are compared as they are.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lwsconf.fidelity.model import Answer, Step
from lwsconf.objwalk import walk_dicts

SERVER = "<server>"
TIME = "<time>"

View = dict[str, Any]
Rule = Callable[[Any], Any]

_TALLY: contextvars.ContextVar[Counter[str] | None] = contextvars.ContextVar("normalise_tally", default=None)


@contextlib.contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count, by rule name, the values the rules erase while the block runs (the page lists each rule with its
    count, so a rule that hides much is seen to). Counts only; what the rules do is unchanged."""
    tally: Counter[str] = Counter()
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def erased(rule: str, n: int = 1) -> None:
    """Record that rule `rule` replaced or dropped `n` values (nothing when no count is being kept)."""
    tally = _TALLY.get()
    if tally is not None and n:
        tally[rule] += n


def rule_name(rule: Callable[..., Any]) -> str:
    """The name a rule's docstring gives it (Rule `name`: ...), as `erased` counts it."""
    found = re.search(r"Rule `([^`]+)`", rule.__doc__ or "")
    return found.group(1) if found else rule.__name__


def saved_values(value: Any, saved: Mapping[str, str]) -> Any:
    """Rule `saved-values`: a value saved from an earlier answer (a uid, a resourceVersion) reads as
    `${name}` wherever it reappears. Why: the script carries it from answer to request, so both
    servers echo their own generated value; what is compared is that they echo the one saved. Whole
    strings only, except values of 16 characters or more (uids), also replaced inside messages."""
    if isinstance(value, str):
        for name, saved_value in saved.items():
            if value == saved_value:
                erased("saved-values")
                return "${" + name + "}"
        for name, saved_value in saved.items():
            if len(saved_value) >= 16 and saved_value in value:
                erased("saved-values", value.count(saved_value))
                value = value.replace(saved_value, "${" + name + "}")
        return value
    if isinstance(value, list):
        return [saved_values(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: saved_values(v, saved) for k, v in value.items()}
    return value


def object_metadata(d: dict[str, Any]) -> None:
    """Rule `server-metadata`: uid, resourceVersion, creationTimestamp and deletionTimestamp of an
    object become placeholders. Why: a uid is random, a resourceVersion is the storage's counter
    (etcd's revision vs the sim's), and times are the clock; their presence is kept."""
    meta = d.get("metadata")
    if not isinstance(meta, dict) or "kind" not in d and "apiVersion" not in d and "name" not in meta:
        return
    for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
        if isinstance(meta.get(key), str) and not meta[key].startswith(("${", "<")):
            meta[key] = SERVER
            erased("server-metadata")


def status_details_uid(d: dict[str, Any]) -> None:
    """Rule `status-details-uid`: the uid a Status's details name (a delete's Success Status) is a
    placeholder, for the same reason as an object's uid; name, group and kind are compared."""
    if d.get("kind") == "Status" and isinstance(d.get("details"), dict):
        uid = d["details"].get("uid")
        if isinstance(uid, str) and uid and not uid.startswith("${"):
            d["details"]["uid"] = SERVER
            erased("status-details-uid")


def managed_fields_time(d: dict[str, Any]) -> None:
    """Rule `managed-fields-time`: managedFields entries keep manager, operation, apiVersion,
    subresource and fieldsV1; their `time` is the clock, and so is their order within one operation:
    kube-apiserver sorts entries by operation, then time to the second, then manager name
    (fieldmanager's sortEncodedManagedFields), so two Updates a second apart or in the same second swap.
    Compared in (operation, manager, subresource) order. Seen: controllers/ctl-statefulset/ready-replicas
    differed only in this order in one of three full runs (2026-12-03)."""
    fields = d.get("managedFields")
    if isinstance(fields, list):
        for entry in fields:
            if isinstance(entry, dict) and "time" in entry:
                entry["time"] = TIME
                erased("managed-fields-time")
        if all(isinstance(entry, dict) for entry in fields):
            fields.sort(key=lambda e: (str(e.get("operation")), str(e.get("manager")), str(e.get("subresource", ""))))


_UID_KEY = re.compile(r'^k:\{"uid":"[^"$<][^"]*"\}$')


def managed_fields_uid_keys(d: dict[str, Any]) -> None:
    """Rule `managed-fields-uid-keys`: in a managedFields entry's fieldsV1, an ownerReferences element
    `k:{"uid":"..."}` reads `k:{"uid":"<server>"}`. Why: it is keyed by the owner's uid, which each server
    generates; the ownerReferences themselves (with saved uids as `${name}`) are compared in the metadata,
    and which fields of the element the manager owns still is."""
    fields = d.get("managedFields")
    if isinstance(fields, list):
        for entry in fields:
            if isinstance(entry, dict) and isinstance(entry.get("fieldsV1"), dict):
                entry["fieldsV1"] = _uid_keys(entry["fieldsV1"])


def _uid_keys(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    erased("managed-fields-uid-keys", sum(1 for k in node if _UID_KEY.match(k)))
    return {('k:{"uid":"' + SERVER + '"}' if _UID_KEY.match(k) else k): _uid_keys(v) for k, v in node.items()}


_GENERATED = re.compile(r"^[a-z0-9]{5}$")


_NAME_LABEL = "kubernetes.io/metadata.name"


def generated_name(d: dict[str, Any]) -> None:
    """Rule `generated-name`: a name made from metadata.generateName keeps its prefix; the five
    random characters after it become `*****`, in the name and in a Namespace's
    `kubernetes.io/metadata.name` label when that label repeats the name. Why: both servers pick them at
    random; that the label is set, and to the object's own name, is still compared."""
    meta = d.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("generateName"), str) and isinstance(meta.get("name"), str):
        prefix, name = meta["generateName"][:58], meta["name"]  # SimpleNameGenerator cuts a prefix to 58
        if name.startswith(prefix) and _GENERATED.match(name[len(prefix):]):
            meta["name"] = prefix + "*****"
            erased("generated-name")
            labels = meta.get("labels")
            if d.get("kind") == "Namespace" and isinstance(labels, dict) and labels.get(_NAME_LABEL) == name:
                labels[_NAME_LABEL] = meta["name"]


def cluster_ip(d: dict[str, Any]) -> None:
    """Rule `cluster-ip`: an allocated Service ClusterIP becomes `<allocated>` ("None", a headless
    Service, is kept). Why: each server allocates from its own range (the sim's is loopback)."""
    if isinstance(d.get("clusterIP"), str) and d["clusterIP"] not in ("None", "", "<allocated>"):
        d["clusterIP"] = "<allocated>"
        erased("cluster-ip")
    if isinstance(d.get("clusterIPs"), list):
        erased("cluster-ip", sum(1 for ip in d["clusterIPs"] if ip not in ("None", "<allocated>")))
        d["clusterIPs"] = ["<allocated>" if ip != "None" else ip for ip in d["clusterIPs"]]


def list_metadata(d: dict[str, Any]) -> None:
    """Rule `list-metadata`: a list's resourceVersion and continue token are placeholders. Why: the
    first is the storage counter, the second an opaque encoding of it; whether a token is given is
    kept (pagination is compared through the items of each page)."""
    if isinstance(d.get("items"), list) and isinstance(d.get("metadata"), dict):
        meta = d["metadata"]
        for key in ("resourceVersion", "continue"):
            if isinstance(meta.get(key), str) and meta[key] and not meta[key].startswith(("${", "<")):
                meta[key] = SERVER
                erased("list-metadata")


_TIME_KEYS = ("lastTransitionTime", "lastUpdateTime", "lastProbeTime", "lastHeartbeatTime")


def condition_times(d: dict[str, Any]) -> None:
    """Rule `condition-times`: a condition's lastTransitionTime (and update/probe/heartbeat times)
    is the clock of whoever set it; the condition's type, status, reason and message are kept."""
    for key in _TIME_KEYS:
        if isinstance(d.get(key), str) and "type" in d and not d[key].startswith("<time:"):
            d[key] = TIME
            erased("condition-times")


_MESSAGE_NUMBERS = (
    (re.compile(r"too old resource version: \d+ \(\d+\)"), "too old resource version: N (N)"),
    (re.compile(r"Too large resource version: \d+, current: \d+"), "Too large resource version: N, current: N"),
    (re.compile(r"(resourceVersion|resource version)( in precondition)?: \d+"), r"\1\2: N"),
    # rest.BeforeDelete's precondition Conflict
    (re.compile(r"the ResourceVersion in the precondition \(\d+\) does not match the ResourceVersion in record "
                r"\(\d+\)"),
     "the ResourceVersion in the precondition (N) does not match the ResourceVersion in record (N)"),
    (re.compile(r"(continue|Continue) parameter is too old.*"), r"\1 parameter is too old"),
)


def message_numbers(value: Any) -> Any:
    """Rule `message-numbers`: in a message, the resourceVersions Kubernetes embeds ("too old resource
    version: 5 (812)") become N. Why: they are the storage counters of each server; the rest of the
    message is compared word for word."""
    if isinstance(value, str):
        for pattern, replacement in _MESSAGE_NUMBERS:
            value, n = pattern.subn(replacement, value)
            erased("message-numbers", n)
        return value
    if isinstance(value, list):
        return [message_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: message_numbers(v) for k, v in value.items()}
    return value


_EMBEDDED = re.compile(r'\\"(uid|resourceVersion|creationTimestamp|deletionTimestamp|time)\\":\\"[^"\\]*\\"')


def embedded_metadata(value: Any) -> Any:
    """Rule `embedded-metadata`: where a message quotes an object's JSON (a patch kube-apiserver could not
    decode: `patch: Invalid value: "{\\"apiVersion\\":...}"`), the uid, resourceVersion, creation and deletion
    timestamps and managedFields times inside it become `<server>`. Why: the same server-generated values as
    rule `server-metadata` and `managed-fields-time`, quoted; every other character of the quoted object and
    of the message is compared."""
    if isinstance(value, str):
        if '\\"' not in value:
            return value
        value, n = _EMBEDDED.subn(lambda m: f'\\"{m.group(1)}\\":\\"{SERVER}\\"', value)
        erased("embedded-metadata", n)
        return value
    if isinstance(value, list):
        return [embedded_metadata(v) for v in value]
    if isinstance(value, dict):
        return {k: embedded_metadata(v) for k, v in value.items()}
    return value


_KUBELET_IDS = {"containerID": "<container-id>", "imageID": "<image-id>"}
_KUBELET_TIMES = ("startedAt", "finishedAt", "startTime")


def kubelet_generated(d: dict[str, Any]) -> None:
    """Rule `kubelet-generated`: a container's containerID and imageID, and the times a kubelet stamps
    (a pod's startTime, a container state's startedAt and finishedAt), become placeholders. Why: the id is
    the runtime's (containerd's random 64 hex digits vs the sim's own), the image id the digest of the image
    as the node holds it (the real nodes' images are built here, the sim runs none), and the times are the
    clock; their presence is kept, and so is the image a container reports running."""
    for key, placeholder in _KUBELET_IDS.items():
        if isinstance(d.get(key), str) and d[key]:
            d[key] = placeholder
            erased("kubelet-generated")
    for key in _KUBELET_TIMES:
        if isinstance(d.get(key), str) and d[key]:
            d[key] = TIME
            erased("kubelet-generated")


_IPV4 = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")


def pod_addresses(d: dict[str, Any]) -> None:
    """Rule `pod-addresses`: a pod's podIP(s) read `<pod-ip>` and its hostIP(s) `<node-ip>`, also where its
    containers' termination messages repeat them, and in the managedFields keys of its podIPs entries; any other
    IPv4 address in such a message reads `<ip>`. Why:
    each side allocates from its own network (the sim's loopback 127.X.0.0/16, the real nodes' 198.19.0.0/16
    bridge); that the address a container saw (downward API status.podIP) is the pod's own is still compared."""
    status = d.get("status")
    if not isinstance(status, dict) or not ("podIP" in status or "hostIP" in status):
        return
    names = {status.get("podIP"): "<pod-ip>", status.get("hostIP"): "<node-ip>"}
    names.pop(None, None)

    def rename(text: str) -> str:
        return _IPV4.sub(lambda m: names.get(m.group(0), "<ip>"), text)

    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            for state_key in ("state", "lastState"):
                terminated = ((cs.get(state_key) or {}) if isinstance(cs, dict) else {}).get("terminated")
                if isinstance(terminated, dict) and isinstance(terminated.get("message"), str):
                    terminated["message"] = rename(terminated["message"])
    meta = d.get("metadata")
    for entry in (meta.get("managedFields") if isinstance(meta, dict) else None) or []:
        if isinstance(entry, dict) and isinstance(entry.get("fieldsV1"), dict):
            entry["fieldsV1"] = _ip_keys(entry["fieldsV1"], names)
    for single, plural, placeholder in (("podIP", "podIPs", "<pod-ip>"), ("hostIP", "hostIPs", "<node-ip>")):
        if isinstance(status.get(single), str) and status[single]:
            status[single] = placeholder
            erased("pod-addresses")
        if isinstance(status.get(plural), list):
            erased("pod-addresses", len(status[plural]))
            status[plural] = [{**ip, "ip": placeholder} if isinstance(ip, dict) else ip for ip in status[plural]]


def _ip_keys(node: Any, names: Mapping[Any, str]) -> Any:
    """managedFields keys naming an address (`k:{"ip":"10.0.0.1"}`, a podIPs entry) with the placeholder."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key.startswith('k:{"ip":"') and key.endswith('"}'):
            key = 'k:{"ip":"' + names.get(key[len('k:{"ip":"'):-2], "<ip>") + '"}'
        out[key] = _ip_keys(value, names)
    return out


_EVENT_NAME = re.compile(r"^(.+)\.[0-9a-f]{12,20}$")
_EVENT_TIMES = ("eventTime", "firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp", "deprecatedLastTimestamp")


def event_fields(d: dict[str, Any]) -> None:
    """Rule `event-fields`: an Event's times (eventTime, first/lastTimestamp and their deprecated forms, a series'
    lastObservedTime) read `<time>` where set (null stays null), the hex clock suffix of its name
    (`<object>.<hex nanoseconds>`, how every recorder names one) `<hex time>`, and the uid and resourceVersion of
    the object it is about `<server>`. Why: the clock and the server's counters; which object, the reason,
    type, action, message, reporter and count are compared."""
    if not isinstance(d.get("involvedObject") or d.get("regarding"), dict):
        return
    for key in _EVENT_TIMES:
        if isinstance(d.get(key), str) and d[key]:
            d[key] = TIME
            erased("event-fields")
    series = d.get("series")
    if isinstance(series, dict) and isinstance(series.get("lastObservedTime"), str):
        series["lastObservedTime"] = TIME
        erased("event-fields")
    meta = d.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        named = _EVENT_NAME.match(meta["name"])
        if named:
            meta["name"] = f"{named.group(1)}.<hex time>"
            erased("event-fields")
    for ref_key in ("involvedObject", "regarding", "related"):
        ref = d.get(ref_key)
        if isinstance(ref, dict):
            for key in ("uid", "resourceVersion"):
                if isinstance(ref.get(key), str) and ref[key] and not ref[key].startswith(("${", "<")):
                    ref[key] = SERVER
                    erased("event-fields")


OBJECT_RULES: tuple[Callable[[dict[str, Any]], None], ...] = (
    object_metadata, status_details_uid, managed_fields_time, managed_fields_uid_keys, generated_name, cluster_ip,
    list_metadata, condition_times, kubelet_generated, pod_addresses, event_fields)


_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)\b")
_PAREN_UID = re.compile(r"\([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\)")


def event_reasons(items: list[Any]) -> dict[str, Any]:
    """Rule `event-reasons` (steps with view="event-reasons"): a list of one object's Events is compared as the
    ordered distinct `type reason component fieldPath: message` lines, in the order the server lists them (by
    name: `<object>.<hex time>`), with `seen` naming every reason. Why: an event's times, its count (how often
    the kubelet saw the same thing before the list was read) and its name are timing; durations inside a
    message ("pulled in 1.2s"), the pod's uid and the addresses a message quotes (a probe's "dial tcp
    <ip>:8080") are the clock, the server's and each side's own network. Which
    component reported what, for which container, with which words, in which order, is compared."""
    lines: list[str] = []
    seen: dict[str, bool] = {}
    for event in items:
        if not isinstance(event, dict):
            continue
        involved = event.get("involvedObject") or event.get("regarding") or {}
        component = event.get("reportingComponent") or (event.get("source") or {}).get("component") or ""
        text = str(event.get("message") or event.get("note") or "")
        message = _IPV4.sub("<ip>", _PAREN_UID.sub("(<uid>)", _DURATION.sub("<duration>", text)))
        erased("event-reasons")  # each event is folded into one line without its times, count and name
        line = (f"{event.get('type')} {event.get('reason')} {component} {involved.get('fieldPath', '')}: "
                f"{message}")
        if line not in lines:
            lines.append(line)
        seen[str(event.get("reason"))] = True
    return {"events": lines, "seen": seen}


class History:
    """What one server answered before, within one scenario: the rules that judge an answer against the
    ones before it (`resource-version-order`, `transition-history`) keep it. One per server and scenario,
    fed every answer in order."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}
        """The last resourceVersion seen of each object, by uid."""
        self.newest = 0
        """The highest resourceVersion any answer carried so far."""
        self.transitions: dict[tuple[str, str], str] = {}
        """The last lastTransitionTime seen of each (object uid, condition type)."""

    def tag(self, body: Any) -> Any:
        """`body` (changed in place and returned) with each resourceVersion and condition lastTransitionTime
        replaced by how it relates to what this server answered before."""
        before = self.newest
        seen: list[int] = []

        def visit(d: dict[str, Any]) -> None:
            meta = d.get("metadata")
            if isinstance(meta, dict):
                number = self.order_version(d, meta, before)
                if number is not None:
                    seen.append(number)
                self.mark_transitions(d, meta)

        walk_dicts(body, visit)
        self.newest = max([self.newest, *seen])
        return body

    def order_version(self, d: dict[str, Any], meta: dict[str, Any], before: int) -> int | None:
        """Rule `resource-version-order`: an object's resourceVersion is compared by how it relates to the last one
        the same server gave for that object in the scenario: `<rv:same>` (a no-op write or a re-read keeps it),
        `<rv:newer>`, `<rv:older>` (never right), or `<server>` the first time; a list's (or a bookmark's) reads
        `<rv:current>` when it is at least the highest the server gave before in the scenario (`before`), else
        `<rv:stale>`. Why: the numbers are each storage's counter, their order is behaviour. Applied before
        `saved-values`.

        Returns the resourceVersion as a number (None when it is not one)."""
        version = meta.get("resourceVersion")
        if not (isinstance(version, str) and version.isdigit()):
            return None
        number = int(version)
        uid = meta.get("uid")
        if isinstance(uid, str) and uid:
            last = self.versions.get(uid)
            self.versions[uid] = number
            meta["resourceVersion"] = SERVER if last is None else \
                "<rv:same>" if number == last else "<rv:newer>" if number > last else "<rv:older>"
        elif isinstance(d.get("items"), list) or "name" not in meta:  # a list, a bookmark
            meta["resourceVersion"] = "<rv:current>" if number >= before else "<rv:stale>"
        erased("resource-version-order", int(meta["resourceVersion"] != version))
        return number

    def mark_transitions(self, d: dict[str, Any], meta: dict[str, Any]) -> None:
        """Rule `transition-history`: a condition's lastTransitionTime, after the first time the server showed that
        condition of that object in the scenario, reads `<time:kept>` or `<time:changed>` against the last one
        shown. Why: the time is the clock, whether a transition happened is behaviour (a status write that keeps
        a condition's status must keep its time)."""
        uid = meta.get("uid")
        conditions = (d.get("status") or {}).get("conditions") if isinstance(d.get("status"), dict) else None
        if not (isinstance(uid, str) and isinstance(conditions, list)):
            return
        for condition in conditions:
            if isinstance(condition, dict) and isinstance(condition.get("lastTransitionTime"), str):
                key, when = (uid, str(condition.get("type"))), condition["lastTransitionTime"]
                last = self.transitions.get(key)
                self.transitions[key] = when
                if last is not None:
                    condition["lastTransitionTime"] = "<time:kept>" if last == when else "<time:changed>"
                    erased("transition-history")


_TOKEN_VOLUME = re.compile(r"\bkube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}\b")


def token_volume_name(value: Any) -> Any:
    """Rule `token-volume-name`: the ServiceAccount admission plugin's `kube-api-access-xxxxx` volume name (in a
    pod's volumes and mounts, and in a managedFields key naming it) reads `kube-api-access-*****`. Why: its five
    characters are random on each server (names.SimpleNameGenerator); the volume, its sources and every
    container's mount of it are compared."""
    if isinstance(value, str):
        if "kube-api-access-" not in value:
            return value
        value, n = _TOKEN_VOLUME.subn("kube-api-access-*****", value)
        erased("token-volume-name", n)
        return value
    if isinstance(value, list):
        return [token_volume_name(v) for v in value]
    if isinstance(value, dict):
        return {token_volume_name(k): token_volume_name(v) for k, v in value.items()}
    return value


def normalise_body(body: Any, saved: Mapping[str, str], history: History | None = None) -> Any:
    """Every object rule on a copy of `body` (`history`'s rules first, then saved values, so a saved uid reads
    `${name}`)."""
    if history is not None:
        body = history.tag(copy.deepcopy(body))
    out = saved_values(body, saved)
    def every_rule(d: dict[str, Any]) -> None:
        for rule in OBJECT_RULES:
            rule(d)

    walk_dicts(out, every_rule)
    return token_volume_name(embedded_metadata(message_numbers(out)))


def bookmarks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rule `bookmark-cadence`: consecutive periodic BOOKMARKs count as one. Why: kube-apiserver sends
    them on its own schedule ("roughly every minute", and before a watch times out), so how many
    arrive in a window is timing. The initial-events-end BOOKMARK (WatchList) is compared as is."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "BOOKMARK" and not _initial_end(event) and out and out[-1].get("type") == "BOOKMARK" \
                and not _initial_end(out[-1]):
            erased("bookmark-cadence")
            continue
        out.append(event)
    return out


def _initial_end(event: dict[str, Any]) -> bool:
    obj = event.get("object")
    annotations = (obj.get("metadata") or {}).get("annotations") if isinstance(obj, dict) else None
    return isinstance(annotations, dict) and annotations.get("k8s.io/initial-events-end") == "true"


def event_names(events: list[dict[str, Any]]) -> list[str]:
    """Rule `controller-events` (steps with events="names"): a controller scenario's watch is compared
    as the sequence of `TYPE name` with MODIFIED and BOOKMARK left out. Why: how many status updates
    a controller writes between two states, and when, is its implementation's cadence; which
    objects appear and disappear, in which order, is its behaviour."""
    out = []
    for event in events:
        erased("controller-events")  # dropped, or reduced to its type and name
        if event.get("type") in ("MODIFIED", "BOOKMARK"):
            continue
        obj = event.get("object") or {}
        out.append(f"{event.get('type')} {(obj.get('metadata') or {}).get('name', '?')}")
    return out


def drop(view: View, path: str) -> None:
    """Remove a dotted path (list indexes as numbers; `*` for every list item) from `view`."""
    parts = path.split(".")
    _drop(view, parts)


def _drop(node: Any, parts: list[str]) -> None:
    head, rest = parts[0], parts[1:]
    if isinstance(node, list):
        items = node if head == "*" else ([node[int(head)]] if head.isdigit() and int(head) < len(node) else [])
        for item in items:
            if rest:
                _drop(item, rest)
        return
    if not isinstance(node, dict) or head not in node:
        return
    if rest:
        _drop(node[head], rest)
    else:
        node[head] = "<varies>"
        erased("vary")


def normalise(answer: Answer, step: Step, saved: Mapping[str, str], history: History | None = None) -> View:
    """The comparable view of one answer: code, normalised body or events, warnings; then the
    step's own `vary` paths replaced on both sides. `history`: the server's earlier answers in the scenario."""
    view: View = {"code": answer.code}
    if answer.events is not None:
        if step.events == "names":
            view["events"] = event_names(answer.events)
        else:
            view["events"] = bookmarks([normalise_body(e, saved, history) for e in answer.events])
    if answer.body is not None and (answer.events is None or answer.code != 200):
        view["body"] = normalise_body(answer.body, saved, history)
        if step.view == "event-reasons" and answer.code == 200 and isinstance(view["body"], dict):
            view["body"] = event_reasons(view["body"].get("items") or [])
    if answer.warnings:
        view["warnings"] = sorted(message_numbers(saved_values(answer.warnings, saved)))
    for path in step.vary:
        drop(view, path)
    return view


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted path (list indexes as numbers, or `key=value`: the first item whose `key` is
    `value`, such as a condition by its type), or None."""
    for part in path.split(".") if path else ():
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, list) and "=" in part:
            key, _, wanted = part.partition("=")
            value = next((item for item in value if isinstance(item, dict) and str(item.get(key)) == wanted), None)
        else:
            return None
    return value
