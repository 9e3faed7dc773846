"""Running a corpus against one API server, recording each step's request and answer.

Scenarios run one after another, each in its own namespace, so an earlier scenario's objects never
show up in a later one's lists. A step's `until` is awaited with a named timeout (default
`UNTIL_TIMEOUT`, overridable by LWSCONF_FIDELITY_UNTIL); when it runs out, the last answer is
recorded as is, so the page shows where the server stopped.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lwsconf.fidelity import normalise
from lwsconf.fidelity.client import Endpoint
from lwsconf.fidelity.model import JSON, Answer, Scenario, Step, StepRecord
from lwsconf.objwalk import walk_dicts
from lwsconf.waits.core import NotYet, WaitTimeout, wait_until

UNTIL_TIMEOUT_ENV = "LWSCONF_FIDELITY_UNTIL"
UNTIL_POLL = 0.25
"""Seconds between two tries of a step with `until`."""
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def until_timeout(step_timeout: float) -> float:
    """The step's own bound, or LWSCONF_FIDELITY_UNTIL seconds when set (a loaded machine)."""
    raw = os.environ.get(UNTIL_TIMEOUT_ENV)
    return float(raw) if raw else step_timeout


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """`${name}` replaced in every string of `value` (an unknown name is left as written)."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


PROTOBUF = "application/vnd.kubernetes.protobuf"


def _protobuf(body: dict[str, Any]) -> bytes | None:
    from lwsconf.sim.apiserver.protobuf import envelope

    try:
        return envelope.encode_object(body)
    except (ValueError, LookupError):
        return None


def build_request(step: Step, variables: dict[str, str]) -> dict[str, Any]:
    """The HTTP request of a step: body encoded as JSON unless the step gives a string, or as Kubernetes protobuf
    when its content type says so (a held-out step recorded from kubectl; encoded with the schema the sim serves,
    which kube-apiserver then reads as well: a wrong encoding would show as its refusal)."""
    body = substitute(step.body, variables)
    data: bytes | None = None
    if isinstance(body, str):
        data = body.encode()
    elif isinstance(body, dict) and step.content_type.startswith(PROTOBUF):
        data = _protobuf(body)
    elif body is not None:
        data = json.dumps(body).encode()
    headers = dict(substitute(step.headers, variables))
    if data is None and body is not None:  # a protobuf body the schema cannot encode: sent as the JSON it is
        data, headers["Content-Type"] = json.dumps(body).encode(), JSON
    if data is not None and step.content_type:  # "": sent without one, as a recorded client did
        headers.setdefault("Content-Type", step.content_type)
    headers.setdefault("Accept", JSON)
    return {"method": step.method, "path": substitute(step.path, variables),
            "query": substitute(step.query, variables), "headers": headers, "body": data}


def _bounded(check: Callable[[], bool], what: str, timeout: float, ran_out: list[str], kind: str) -> None:
    """wait_until where running out is an outcome, not an error: the step goes on (its answer shows where the server
    stopped) and `kind` is noted in `ran_out`, which the run's summary counts per server."""
    try:
        wait_until(check, what=what, timeout=timeout, poll=UNTIL_POLL)
    except WaitTimeout:
        ran_out.append(kind)


def _await(endpoint: Endpoint, step: Step, variables: dict[str, str], ran_out: list[str]) -> None:
    """A step's `after`: the object it acts on, made by a controller, exists (or the bound runs out: then the step is
    sent anyway and its answer shows where the server stopped)."""
    probe = build_request(Step("after", "GET", step.after), variables)

    def exists() -> bool:
        answer = endpoint.send(probe)
        if answer.code != 200:
            raise NotYet(f"{probe['path']} answered {answer.code}")
        return True

    _bounded(exists, f"{endpoint.name}: {probe['path']} exists", until_timeout(AFTER_TIMEOUT), ran_out, "after")


AFTER_TIMEOUT = 10.0
"""Seconds a step with `after` waits for that object (a controller's pod, ControllerRevision, EndpointSlice)."""


SETTLE_SECONDS = 0.5
"""How long a `settle` read must keep the same answer before it is compared: longer than kube-controller-manager's
and the sim's controllers take to act on a write here, so that a controller still at work shows as a change."""
SETTLE_TIMEOUT = 10.0
"""Seconds a `settle` read is repeated at most (overridable as every wait, LWSCONF_FIDELITY_UNTIL)."""


def settled_view(answer: Answer, step: Step, variables: dict[str, str]) -> tuple[Any, ...]:
    """What must stay the same for a `settle` read: the normalised answer and every object's own resourceVersion (a
    write that changes only managed fields or the version is still a write), but not a list's resourceVersion,
    which moves with any write anywhere (kube-apiserver's Leases every few seconds)."""
    versions: list[str] = []

    def collect(d: dict[str, Any]) -> None:
        meta = d.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str) and "resourceVersion" in meta:
            versions.append(str(meta["resourceVersion"]))

    walk_dicts(answer.body, collect)
    return json.dumps(normalise.normalise(answer, step, variables), sort_keys=True), tuple(versions)


def _settle(endpoint: Endpoint, step: Step, request: dict[str, Any], variables: dict[str, str],
            ran_out: list[str]) -> Answer:
    """The answer to `request` once it has read the same for SETTLE_SECONDS (or the last one when SETTLE_TIMEOUT
    runs out).

    Why: a held-out read of what controllers made lands, on each server, somewhere in their work on the writes before
    it (two sets of controllers, each at its own pace, and a recording at a third); read once they are done, the
    two servers are compared on where their controllers take the state, which is behaviour, not on when a request
    happened to arrive, which is timing."""
    since: list[Any] = []  # [first time the current view was read, that view, the latest answer]

    def still() -> bool:
        answer = endpoint.send(request)
        view, now = settled_view(answer, step, variables), time.monotonic()
        if not since or since[1] != view:
            since[:] = [now, view, answer]
        since[2] = answer
        if now - since[0] < SETTLE_SECONDS:
            raise NotYet(f"changed {now - since[0]:.2f} s ago")
        return True

    _bounded(still, f"{endpoint.name}: {step.name} settled", until_timeout(SETTLE_TIMEOUT), ran_out, "settle")
    answer: Answer = since[2]
    return answer


def _send(endpoint: Endpoint, step: Step, variables: dict[str, str],
          ran_out: list[str]) -> tuple[dict[str, Any], Answer, tuple[Any, ...]]:
    """Send `step` (repeated while its `until` is not met, or until its answer settles); the request, the last
    answer and, for an `until` step, the distinct successive values its conditions' paths took (consecutive repeats
    counted once). Each wait that ran out is noted in `ran_out`."""
    if step.after:
        _await(endpoint, step, variables, ran_out)
    request = build_request(step, variables)
    if step.until is None and step.settle and not step.watch:
        return request, _settle(endpoint, step, request, variables, ran_out), ()
    if step.until is None:
        return request, endpoint.send(request, watch=step.watch), ()
    until = step.until
    last: list[Answer] = []
    states: list[Any] = []

    def reached() -> bool:
        last[:] = [endpoint.send(request, watch=step.watch)]
        view = normalise.normalise(last[0], step, variables)
        got = [normalise.lookup(view, path) for path, _ in until.conditions()]
        state = got[0] if len(got) == 1 else got
        if not states or states[-1] != state:
            states.append(state)
        for (path, value), seen in zip(until.conditions(), got, strict=True):
            if seen != value:
                raise NotYet(f"{path} is {seen!r}, waiting for {value!r}")
        return True

    # On timeout the last answer is recorded as it stands: the other server's shows what was expected.
    _bounded(reached, f"{endpoint.name}: {step.name}", until_timeout(until.timeout), ran_out, "until")
    return request, last[0], tuple(states)


def _save(step: Step, answer: Answer, variables: dict[str, str]) -> None:
    for name, path in step.save.items():
        value = normalise.lookup(answer.body, path)
        if value is not None:
            variables[name] = str(value)


def setup_namespace(endpoint: Endpoint, namespace: str) -> Answer:
    """Create the scenario's namespace and its `default` ServiceAccount (kube-apiserver's
    ServiceAccount admission refuses pods until it exists; kube-controller-manager would create it)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    answer = endpoint.send(build_request(Step("namespace", "POST", "/api/v1/namespaces", ns), {}))
    if answer.code != 201:
        return answer
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    answer = endpoint.send(build_request(Step("sa", "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", sa), {}))
    return Answer(201) if answer.code in (201, 409) else answer


class Stopped(Exception):
    """The replay was told to stop (the other server's side failed or was interrupted)."""


def run_scenario(endpoint: Endpoint, scenario: Scenario, stop: threading.Event | None = None) -> list[StepRecord]:
    """Every step of `scenario` in order; if its namespace cannot be made, every step records why."""
    variables = {"ns": scenario.namespace}
    ready = setup_namespace(endpoint, scenario.namespace)
    if ready.code != 201:
        failed = Answer(0, f"scenario setup failed: namespace {scenario.namespace}: {ready.code} {ready.body}")
        return [StepRecord(step, build_request(step, variables), failed, variables) for step in scenario.steps]
    return run_steps(endpoint, scenario.steps, variables, stop)


def run_steps(endpoint: Endpoint, steps: Iterable[Step], variables: dict[str, str],
              stop: threading.Event | None = None) -> list[StepRecord]:
    """`steps` in order, each one's saved values available to the next; Stopped before a step once `stop` is set."""
    records = []
    for step in steps:
        if stop is not None and stop.is_set():
            raise Stopped(f"{endpoint.name}: stopped before {step.name}")
        ran_out: list[str] = []
        request, answer, states = _send(endpoint, step, variables, ran_out)
        _save(step, answer, variables)
        records.append(StepRecord(step, request, answer, variables, states, tuple(ran_out)))
    return records


CRD_SERVED = 60.0
"""Seconds for a CustomResourceDefinition a prelude created to be served (a dry-run create reaches its admission)."""
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def run_prelude(endpoint: Endpoint, steps: Sequence[Step], scenarios: Sequence[Scenario] = ()) -> list[StepRecord]:
    """A held-out corpus's cluster-scoped setup (CRDs, admission policies), outside any namespace; then each
    CRD it created is waited for until its group-version is served, so that no scenario's first request
    races the server's own start of a new API (not an interaction: both servers get the same wait).

    The probe is a dry-run create of the first object of that kind the `scenarios` create (a minimal one if
    none does): only a valid object passes schema validation (422) and reaches the admission policies, whose
    503 "There can be a delay between when CustomResourceDefinitions are created and when they are
    available" is what a scenario's first create would otherwise meet on kube-apiserver.
    """
    records = run_steps(endpoint, steps, {})
    for record in records:  # each CRD it created, until a dry-run create of one of its objects is admitted or judged
        body = record.step.body
        if record.step.method != "POST" or record.step.path.rstrip("/") != _CRDS or record.answer.code != 201 \
                or not isinstance(body, dict):
            continue
        spec = body.get("spec") or {}
        group, names = spec.get("group"), spec.get("names") or {}
        for version in spec.get("versions") or []:
            if version.get("served"):
                api_version, plural = f"{group}/{version.get('name')}", str(names.get("plural"))
                sample = first_created(scenarios, api_version, plural) or {
                    "apiVersion": api_version, "kind": names.get("kind")}
                probe = Step("served", "POST", f"/apis/{api_version}/namespaces/default/{plural}",
                             {**sample, "metadata": {"name": "lwsconf-served-probe"}}, query={"dryRun": "All"})
                wait_until(lambda p=probe: _served(endpoint, p),  # type: ignore[misc]
                           what=f"{endpoint.name}: {probe.path} served", timeout=CRD_SERVED, poll=UNTIL_POLL)
    return records


def first_created(scenarios: Sequence[Scenario], api_version: str, plural: str) -> dict[str, Any] | None:
    """The body of the first create of `plural` in `api_version` among `scenarios` (None: none creates one)."""
    collection = re.compile(rf"^/apis/{re.escape(api_version)}/namespaces/[^/]+/{re.escape(plural)}/?$")
    for scenario in scenarios:
        for step in scenario.steps:
            if step.method == "POST" and isinstance(step.body, dict) and collection.match(step.path) \
                    and not step.query.get("dryRun"):
                return dict(step.body)
    return None


def _served(endpoint: Endpoint, probe: Step) -> bool:
    """A dry-run create answered by the resource's own handler and admission: any code but 404 (not routed yet) and
    503 (kube-apiserver's admission policies not yet able to resolve the new kind: "There can be a delay between
    when CustomResourceDefinitions are created and when they are available")."""
    answer = endpoint.send(build_request(probe, {}))
    if answer.code in (0, 404, 503):
        raise NotYet(f"{probe.path} answered {answer.code}")
    return True


def run_corpus(endpoint: Endpoint, scenarios: Iterable[Scenario],
               stop: threading.Event | None = None) -> dict[str, list[StepRecord]]:
    """Records by scenario name (Stopped once `stop` is set)."""
    return {scenario.name: run_scenario(endpoint, scenario, stop) for scenario in scenarios}
