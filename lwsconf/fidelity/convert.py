"""A traffic recording turned into held-out scenarios: data a replay sends to both servers (pure, no I/O).

The recording (`recorder.py`) is what real clients sent to a real kube-apiserver, in arrival order. A replay
cannot send it as is: its namespaces, uids, resourceVersions and generated names were that server's. So:

* one scenario per test namespace (every request whose path names it, and its create and delete), the
  namespace written `${ns}` wherever it appears (the replay's namespace is the scenario's own); the cluster-scoped
  writes before the first namespace (CRDs, admission policies: the implementation's install) become the corpus's
  `prelude`, run before the scenarios on each server;
* a value the server generated (uid, resourceVersion, a name made from generateName, a list's resourceVersion
  or continue token) that a later request sends back is `save`d from the answer that first carried it and
  written `${var}` in that request, so each server gets its own value back; a resourceVersion the client
  got elsewhere (a watch event, a cluster-wide list the corpus leaves out) is that object's latest saved one;
* the state a request needs is the writes before it in the same namespace, kept in order (nothing is
  reordered, only dropped, each drop counted with its reason in `skipped`);
* a run of identical reads (a client polling) is one step: the last, what the client saw before it moved on;
* a body goes as it came: JSON as JSON, text as its bytes, a body without Content-Type without one, a Kubernetes
  protobuf body (kubectl's for built-in kinds) as protobuf again, from its JSON form (`recorder.decode`); answers
  are asked for as JSON (a protobuf Accept is rewritten, counted), which is what the comparison reads;
* a read there that waits for nothing else is marked `settle`: the replay asks until the answer has stopped
  changing (`run.py`), so that each server is read once its controllers are done with the writes before it, not
  at whichever moment of their work the request happened to land;
* a watch is given `timeoutSeconds` of at most WATCH_SECONDS (a replay cannot wait on a client's minutes);
* a scenario that reads objects kube-controller-manager makes (pods of a StatefulSet, ControllerRevisions,
  EndpointSlices, ReplicaSets) is `controllers: true`; there a request on such an object that the recording found
  waits for it to exist (`after`), a read whose answers changed while the client polled waits (`until`) for the
  code it ended with, a create the recording saw succeed is sent again while refused (an old object of that name
  may still await the garbage collector), a list of pods for the last pod the recording listed, and their `status`
  is left out of the comparison (`vary`): no node runs pods in a replay, and when a controller writes is timing.
  A watch there compares event names (`events: names`), and an update of an object a controller also writes is
  sent without its resourceVersion (counted in `rewritten`), since whether it conflicts would be timing too.

Dropped (counted): discovery and OpenAPI documents (which APIs a server serves is configuration, and the
in-sample corpus compares the documents it claims), health endpoints, cluster-scoped reads (nodes, every
namespace's objects: they depend on what else ran), system namespaces (kube-system, default...: the
controllers' and the reconciler's bookkeeping), upgrades (exec, attach, port-forward: the stream is not
recorded), binary (protobuf) bodies, bodies over the recorder's limit, and the namespace's own create (the
replay's setup makes it).
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lwsconf.fidelity import scrub

WATCH_SECONDS = 1
"""The longest watch a replay makes (seconds): it starts, reads what is there, and ends."""
UNTIL_SECONDS = 20.0
"""How long a replayed read of a controller-made object waits for the recording's code."""
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "lws-system"})
CONTROLLER_KINDS = frozenset({"pods", "controllerrevisions", "endpointslices", "endpoints", "replicasets"})
"""Resources whose objects kube-controller-manager makes (from a StatefulSet, Deployment, Service). Not Events:
their names carry the time, so no replay can wait for a recorded one."""
CONTROLLER_WRITTEN = frozenset({"statefulsets", "deployments", "replicasets", "daemonsets", "jobs"})
"""Resources whose objects a controller also updates (status): an update of one is sent unconditionally."""
JSON = "application/json"
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NS_PATH = re.compile(r"^/(?:api/v1|apis/[^/]+/[^/]+)/(?:watch/)?namespaces/([^/]+)(/.*)?$")
_DISCOVERY = re.compile(r"^/api(/[^/]+)?/?$|^/apis(/[^/]+){0,2}/?$|^/version/?$|^/openapi(/.*)?$")
_REPLICA_POD = re.compile(r"^[a-z0-9-]+-[a-z0-9]{6,10}-[a-z0-9]{5}$")
"""`<deployment>-<pod-template-hash>-<5 random>`: a ReplicaSet's pod, named at random."""
_HEALTH = ("/healthz", "/readyz", "/livez", "/metrics")


@dataclass
class Converted:
    """The held-out corpus made from one recording: prelude steps, scenarios, and what was left out."""

    source: str
    prelude: list[dict[str, Any]] = field(default_factory=list)
    scenarios: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    rewritten: Counter[str] = field(default_factory=Counter)
    recorded: int = 0

    def document(self, header: dict[str, Any]) -> dict[str, Any]:
        return {"generated": header, "source": self.source, "recordedInteractions": self.recorded,
                "steps": sum(len(s["steps"]) for s in self.scenarios) + len(self.prelude),
                "skipped": dict(sorted(self.skipped.items())), "rewritten": dict(sorted(self.rewritten.items())),
                "prelude": self.prelude, "scenarios": self.scenarios}


def namespace_of(record: dict[str, Any]) -> str | None:
    """The namespace a request is about: in its path, or the one a namespace create names."""
    match = _NS_PATH.match(record["path"])
    if match:
        return match.group(1)
    if record["path"].rstrip("/") == "/api/v1/namespaces" and record["method"] == "POST":
        body = _as_json_if_same_bytes(record.get("body"))  # the Python client sends JSON without a Content-Type
        if isinstance(body, dict):
            return str((body.get("metadata") or {}).get("name") or "") or None
    return None


def resource_of(path: str) -> tuple[str, str | None]:
    """(plural, object name or None) of a namespaced path; ("namespaces", name) for a namespace's own path."""
    match = _NS_PATH.match(path)
    if not match:
        return "", None
    rest = (match.group(2) or "").strip("/").split("/")
    if not rest or rest == [""]:
        return "namespaces", match.group(1)
    return rest[0], rest[1] if len(rest) > 1 else None


def _skip_reason(record: dict[str, Any]) -> str | None:
    path = record["path"]
    if record.get("upgraded"):
        return "upgrade (exec, attach, port-forward): the stream is not recorded"
    if record["code"] in (0, 502):
        return "no answer from kube-apiserver"
    if record.get("truncated"):
        return "a body over the recorder's limit"
    if "base64" in (record.get("bodyEncoding"), record.get("responseEncoding")):
        return "a binary (protobuf) body"
    if path.startswith(_HEALTH):
        return "health endpoint"
    if _DISCOVERY.match(path):
        return "discovery or OpenAPI document"
    return None


def _walk_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _walk_strings(v, fn) for k, v in value.items()}
    return value


class _Variables:
    """Values the server generated in one scenario's answers, and the variables that carry them on."""

    def __init__(self) -> None:
        self.sources: dict[str, tuple[int, str, int]] = {}
        """recorded value -> (index of the step whose answer carried it, dotted path in that answer, rank): an
        object's own answer (rank 2) over a list item (1) over a list's resourceVersion (0), which is the whole
        store's counter, not one object's."""
        self.latest_rv: dict[str, tuple[str, int]] = {}
        """object path -> (recorded resourceVersion, numeric) of its latest answer."""
        self.names: dict[str, str] = {}
        """recorded value -> variable name, for values some request used."""

    def learn(self, index: int, step_path: str, answer: Any, *, generated_name: bool) -> None:
        if not isinstance(answer, dict):
            return
        raw_meta = answer.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if isinstance(answer.get("items"), list):  # a list: its own rv and continue, each item's uid and rv
            for key in ("resourceVersion", "continue"):
                if meta.get(key):
                    self._source(str(meta[key]), index, f"metadata.{key}", 0)
            for i, item in enumerate(answer["items"]):
                item_meta = (item or {}).get("metadata") if isinstance(item, dict) else None
                if isinstance(item_meta, dict):
                    for key in ("uid", "resourceVersion"):
                        if item_meta.get(key):
                            self._source(str(item_meta[key]), index, f"items.{i}.metadata.{key}", 1)
            return
        for key in ("uid", "resourceVersion") + (("name",) if generated_name else ()):
            if meta.get(key):
                self._source(str(meta[key]), index, f"metadata.{key}", 2)
        rv = str(meta.get("resourceVersion") or "")
        if rv.isdigit() and meta.get("name"):
            self.latest_rv[_object_key(step_path, str(meta["name"]))] = (rv, int(rv))

    def _source(self, value: str, index: int, path: str, rank: int) -> None:
        known = self.sources.get(value)
        if value not in self.names and (known is None or rank > known[2]):
            self.sources[value] = (index, path, rank)

    def use(self, value: str, steps: list[dict[str, Any]]) -> str | None:
        """`${var}` for a recorded value some earlier answer carried (saving it there), else None."""
        if value not in self.sources:
            return None
        if value not in self.names:
            index, path, _ = self.sources[value]
            name = f"v{len(self.names) + 1}"
            self.names[value] = name
            steps[index].setdefault("save", {})[name] = path
        return "${" + self.names[value] + "}"


_NOT_STATE = ("/log", "/proxy", "/exec", "/attach", "/portforward")


def _reads_state(step: dict[str, Any], is_watch: bool) -> bool:
    """A read of objects or a list (not a log or a proxied answer) in a scenario where controllers write, that waits
    for nothing else: the replay reads it once it has settled (`settle`)."""
    return step["method"] == "GET" and not is_watch and "until" not in step \
        and not any(part in step["path"] for part in _NOT_STATE)


def proxied_name(segment: str) -> str:
    """The object's name in a path segment that may be a proxy target, `[scheme:]name[:port]` (a pod's or a
    Service's `.../pods/web-0:8080/proxy/...`, kube-apiserver's `net.SplitSchemeNamePort`)."""
    parts = segment.split(":")
    if len(parts) == 3:
        return parts[1]
    if len(parts) == 2 and parts[0] in ("http", "https"):
        return parts[1]
    return parts[0]


def _object_key(path: str, name: str | None = None) -> str:
    """An object's collection path and name (a create's answer and later updates meet here)."""
    plural, obj = resource_of(path)
    match = _NS_PATH.match(path)
    return f"{match.group(1) if match else ''}/{plural}/{name or obj}"


class _Scenario:
    """One namespace's steps as they are built."""

    def __init__(self, namespace: str, controllers_read: bool) -> None:
        self.namespace = namespace
        self.steps: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.vars = _Variables()
        self.controllers = controllers_read
        self.deleted = False
        """The namespace's DELETE has been sent: what follows is the clients' tail during its teardown."""


def _reads_controller_objects(records: Iterable[dict[str, Any]]) -> bool:
    """Whether a namespace's recording read objects a controller made (a 200 answer with a controller owner,
    or of a resource only controllers make here)."""
    for r in records:
        plural, _ = resource_of(r["path"])
        if r["method"] == "GET" and r["code"] == 200 and plural in CONTROLLER_KINDS:
            answer = r.get("response")
            items = answer.get("items") if isinstance(answer, dict) else None
            if items or (isinstance(answer, dict) and "items" not in answer) or r.get("events"):
                return True
    return False


def _poll_key(record: dict[str, Any]) -> tuple[Any, ...] | None:
    if record["method"] != "GET":
        return None
    query = tuple(sorted((k, v) for k, v in record["query"] if k != "resourceVersion"))
    return record["client"], record["path"], query


def convert(records: Sequence[dict[str, Any]], *, source: str) -> Converted:
    """Held-out scenarios from one recording's interactions (any order: sorted by `seq` here)."""
    out = Converted(source, recorded=len(records))
    ordered = sorted(records, key=lambda r: r["seq"])
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for record in ordered:
        reason = _skip_reason(record)
        ns = namespace_of(record) if reason is None else None
        if reason is None and ns is None:
            if record["method"] in ("GET", "HEAD"):
                reason = "cluster-scoped or all-namespace read"
            elif by_namespace:
                reason = "cluster-scoped write once the scenarios began (a node's labels, a teardown)"
            elif record["code"] < 400:
                out.prelude.append(_prelude_step(record, len(out.prelude)))
                continue
            else:
                reason = "cluster-scoped write that failed"
        if reason is None and ns in SYSTEM_NAMESPACES:
            reason = "system namespace (controllers' and the reconciler's bookkeeping)"
        if reason is not None:
            out.skipped[reason] += 1
            continue
        by_namespace.setdefault(str(ns), []).append(record)
    for k, (ns, recs) in enumerate(by_namespace.items(), 1):
        scenario = _Scenario(ns, _reads_controller_objects(recs))
        for record in _collapse_polls(recs, out.skipped):
            _add(scenario, record, out)
        if scenario.steps:
            out.scenarios.append({"name": _scenario_name(source, k, ns), "recordedNamespace": ns,
                                  "controllers": scenario.controllers, "steps": scenario.steps})
    return out


def _scenario_name(source: str, k: int, ns: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", ns.removeprefix("lwsconf-").lower()).strip("-")[:28].strip("-")
    return f"{source}-{k:03d}-{slug}" if slug else f"{source}-{k:03d}"


POLL_REASON = "repeated read with no write in between (a client polling): kept the last"


def _collapse_polls(records: list[dict[str, Any]], skipped: Counter[str]) -> list[dict[str, Any]]:
    """Between two writes to the namespace, each distinct read (same client, path and query but its
    resourceVersion) only once: its last time, in the order of those last times, with the codes all its times got.
    With nothing written in between, a replay would ask the same question of the same state; the recorded
    repeats were a client polling for a change that came from a controller or a kubelet, if at all."""
    out: list[dict[str, Any] | None] = []
    window: dict[tuple[Any, ...], int] = {}
    for record in records:
        key = _poll_key(record)
        if key is None:
            window.clear()
            out.append(record)
            continue
        if key in window:
            skipped[POLL_REASON] += 1
            earlier = out[window[key]]
            assert earlier is not None
            out[window[key]] = None
            record = {**record, "_codes": [*earlier.get("_codes", [earlier["code"]]), record["code"]]}
        window[key] = len(out)
        out.append(record)
    return [r for r in out if r is not None]


def _prelude_step(record: dict[str, Any], index: int) -> dict[str, Any]:
    step = _base_step(record, f"{index:03d}-{record['method'].lower()}-{record['path'].rstrip('/').split('/')[-1]}")
    return step


def _base_step(record: dict[str, Any], name: str) -> dict[str, Any]:
    step: dict[str, Any] = {"name": name, "method": record["method"], "path": record["path"],
                            "query": dict(record["query"]), "client": record["client"],
                            "recordedCode": record["code"], "seq": record["seq"]}
    if record.get("body") is not None:
        step["body"] = scrub.replayable(_as_json_if_same_bytes(copy.deepcopy(record["body"])), record["path"])
        step["contentType"] = record.get("contentType") or ""  # "": the client sent none
    headers = {"User-Agent": record["client"]} if record["client"] else {}
    accept = record.get("accept")
    if accept and "protobuf" not in accept and accept != JSON:
        headers["Accept"] = accept
    if headers:
        step["headers"] = headers
    return step


def _as_json_if_same_bytes(body: Any) -> Any:
    """A text body that is JSON exactly as the replay would encode it (json.dumps' defaults: the official Python
    client's bytes, sent without a Content-Type) as that JSON, so that its uids and resourceVersions can be
    carried over; any other text stays as it was sent."""
    if not isinstance(body, str) or not body.startswith(("{", "[")):
        return body
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    return parsed if json.dumps(parsed) == body else body


def _add(scenario: _Scenario, record: dict[str, Any], out: Converted) -> None:
    ns = scenario.namespace
    if record["path"].rstrip("/") == "/api/v1/namespaces" and record["method"] == "POST":
        out.skipped["the namespace's create (the replay's setup makes it)"] += 1
        return
    if record.get("accept") and "protobuf" in str(record["accept"]):
        out.rewritten["Accept: protobuf asked as JSON (the comparison reads JSON)"] += 1
    plural, obj = resource_of(record["path"])
    index = len(scenario.steps)
    label = "" if obj is None else "-ns" if plural == "namespaces" else f"-{obj}"
    step = _base_step(record, f"{index:03d}-{record['method'].lower()}-{plural}{label}"[:80])
    step = _walk_strings(step, lambda s: s.replace(ns, "${ns}") if isinstance(s, str) else s)
    step["recordedCode"], step["seq"] = record["code"], record["seq"]
    _substitute(scenario, step, out)
    query = step["query"]
    is_watch = query.get("watch") in ("true", "1") or "/watch/" in step["path"]
    if is_watch:
        step["watch"] = True
        recorded = query.get("timeoutSeconds")
        if recorded is None or not recorded.isdigit() or int(recorded) > WATCH_SECONDS:
            out.rewritten[f"watch timeoutSeconds set to {WATCH_SECONDS}"] += 1
            query["timeoutSeconds"] = str(WATCH_SECONDS)
        rv = query.get("resourceVersion")
        if rv and not rv.startswith("${") and rv != "0":
            out.rewritten["watch from a resourceVersion no kept answer carried: from now instead"] += 1
            del query["resourceVersion"]
    if scenario.controllers:
        _controller_marks(step, record, plural, obj, is_watch, out)
        if scenario.deleted:  # the namespace's teardown: a controller's object may be gone already, as may the wait's
            step.pop("after", None)
            if record["method"] == "POST":  # and a create may be refused for good (NamespaceTerminating)
                step.pop("until", None)
        if _reads_state(step, is_watch):
            step["settle"] = True
    if record["method"] == "DELETE" and plural == "namespaces":
        scenario.deleted = True
    scenario.steps.append(step)
    scenario.records.append(record)
    answer = record.get("response")
    generated = isinstance(record.get("body"), dict) and bool((record["body"].get("metadata") or {}).get(
        "generateName"))
    scenario.vars.learn(index, step["path"], answer, generated_name=generated)
    uid = ((answer.get("metadata") or {}) if isinstance(answer, dict) else {}).get("uid")
    if record["method"] == "POST" and isinstance(uid, str) and uid:
        # saved even if no request sends it back: the objects controllers make from it name it in ownerReferences
        # (a StatefulSet's pods), and the comparison reads a saved value as its variable (`saved-values`)
        scenario.vars.use(uid, scenario.steps)


def _substitute(scenario: _Scenario, step: dict[str, Any], out: Converted) -> None:
    """Recorded server values in a request replaced by the variables that carry each server's own."""
    variables, steps = scenario.vars, scenario.steps

    def uid_or_name(text: str) -> str:
        whole = variables.use(text, steps) if not text.isdigit() else None
        if whole is not None:
            return whole
        return _UID.sub(lambda m: variables.use(m.group(0), steps) or m.group(0), text)

    step["path"] = "/".join(uid_or_name(part) if part else part for part in step["path"].split("/"))
    query = step["query"]
    for key in ("resourceVersion", "continue"):
        if query.get(key):
            query[key] = variables.use(query[key], steps) or query[key]
    for key, value in query.items():  # a field selector on involvedObject.uid (kubectl describe's events)
        query[key] = _UID.sub(lambda m: variables.use(m.group(0), steps) or m.group(0), value)
    body = step.get("body")
    if isinstance(body, (dict, list)):
        step["body"] = body = _walk_strings(body, lambda s: _UID.sub(
            lambda m: variables.use(m.group(0), steps) or m.group(0), s))
    if isinstance(body, dict):
        _body_rv(scenario, step, body, out)


def _body_rv(scenario: _Scenario, step: dict[str, Any], body: dict[str, Any], out: Converted) -> None:
    holders = [m for m in (body.get("metadata"), body.get("preconditions")) if isinstance(m, dict)]
    for holder in holders:
        rv = holder.get("resourceVersion")
        if not isinstance(rv, str) or not rv or rv.startswith("${"):
            continue
        var = scenario.vars.use(rv, scenario.steps)
        if var is None:
            name = (body.get("metadata") or {}).get("name") if isinstance(body.get("metadata"), dict) else None
            latest = scenario.vars.latest_rv.get(_object_key(step["path"], name))
            if latest is not None and rv.isdigit() and int(rv) >= latest[1]:
                var = scenario.vars.use(latest[0], scenario.steps)
                out.rewritten["resourceVersion from a watch or cluster list: the object's latest saved one"] += 1
        if var is not None:
            holder["resourceVersion"] = var


def _random_name(obj: Any) -> bool:
    """A name made from generateName with random characters (a ReplicaSet's pod), not a StatefulSet's ordinal one
    (whose pods carry generateName too)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return False
    prefix, name = str(meta.get("generateName") or ""), str(meta.get("name") or "")
    return bool(prefix) and name.startswith(prefix) and re.fullmatch(r"[a-z0-9]{5}", name[len(prefix):]) is not None \
        and not name[len(prefix):].isdigit()


def _controller_marks(step: dict[str, Any], record: dict[str, Any], plural: str, obj: str | None, is_watch: bool,
                      out: Converted) -> None:
    if is_watch:
        step["events"] = "names"
        return
    if record["method"] in ("PUT",) and plural in CONTROLLER_WRITTEN and isinstance(step.get("body"), dict):
        meta = step["body"].get("metadata")
        if isinstance(meta, dict) and meta.pop("resourceVersion", None) is not None:
            out.rewritten["update of an object a controller also writes: sent without resourceVersion"] += 1
    codes = record.get("_codes") or []
    if record["method"] == "GET" and len(set(codes)) > 1:  # a client waited for a change (a deletion, a creation)
        step["until"] = {"path": "code", "value": record["code"], "timeout": UNTIL_SECONDS}
    if record["method"] == "POST" and record["code"] == 201 and not step.get("query", {}).get("dryRun"):
        # the recorded client created it once it had seen the way clear (the old object of that name collected by
        # the garbage collector, its namespace's quota...): a refused create changes nothing, so the replay sends
        # it again until it is created as recorded, or the bound runs out and the refusal is compared
        step["until"] = {"path": "code", "value": 201, "timeout": UNTIL_SECONDS}
    if plural not in CONTROLLER_KINDS:
        return
    if obj is not None and record["code"] != 404 and not (record["method"] == "GET" and len(set(codes)) > 1) \
            and not _random_name(record.get("response")) and not _REPLICA_POD.match(obj):
        # (a ReplicaSet's pod, by its answer or its name: no replay makes that random name again)
        # the client acted on an object it had seen a controller make: the replay waits for it to exist too
        collection, _, rest = step["path"].partition(f"/{plural}/")
        step["after"] = f"{collection}/{plural}/{proxied_name(rest.split('/')[0])}"
    if record["method"] != "GET":
        return
    answer = record.get("response")
    if obj is not None and "/" not in record["path"].split(f"/{plural}/", 1)[-1]:
        if isinstance(answer, dict) and "status" in answer:
            step["vary"] = ["body.status"]
    elif obj is None and isinstance(answer, dict) and isinstance(answer.get("items"), list):
        names = [((i or {}).get("metadata") or {}).get("name") for i in answer["items"]]
        if plural == "pods" and names and all(isinstance(n, str) for n in names) \
                and not _random_name(answer["items"][-1]):
            step["until"] = {"path": f"body.items.{len(names) - 1}.metadata.name", "value": names[-1],
                             "timeout": UNTIL_SECONDS}
        step["vary"] = ["body.items.*.status"]
