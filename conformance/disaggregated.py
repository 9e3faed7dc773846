"""The `ds` fixture's object: create, read, change and wait on DisaggregatedSets in the test's namespace.

Like `conformance/harness.py` for LWS (and built on it: the namespace, client, named timeouts and the state dump
are the `lws` harness's), so the LWS-DISAGGREGATED tests read as their scenario: `ds.create(...)`,
`ds.settled("pd", {"prefill": 2, "decode": 1})`, `ds.rollout("pd", ...)`. Everything goes through the Kubernetes
API: the DisaggregatedSet and scaler custom resources, the LWS objects the set owns (found by the
`disaggregatedset.x-k8s.io/name` label, docs/disaggregatedset-contract.md section 3) and their Services.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kubernetes import client, watch

from conformance.harness import LWSHarness
from lwsconf import disaggapi, workloads
from lwsconf.timeouts import TimeoutName
from lwsconf.waits import core, observe

Obj = dict[str, Any]
T = TypeVar("T")
State = dict[str, tuple[int, int]]
"""Per role: (old spec.replicas, new spec.replicas), old summed over every revision but the new one."""


def role(name: str, replicas: int | None, *, tag: str = "v1", size: int = 1, rollout: Obj | None = None,
         metadata: Obj | None = None, scaling: str | None = None) -> Obj:
    """A role of `replicas` groups of `size` probe pods whose template carries label `tag` (change it to roll)."""
    spec: Obj = {"leaderWorkerTemplate": {"size": size,
                                          "workerTemplate": workloads.probe_pod_template(labels={"tag": tag})}}
    if replicas is not None:
        spec["replicas"] = replicas
    if rollout is not None:
        spec["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": rollout}
    out: Obj = {"name": name, "spec": spec}
    if metadata is not None:
        out["metadata"] = metadata
    if scaling is not None:
        out["scaling"] = {"mode": scaling}
    return out


def manifest(name: str, roles: list[Obj], **spec: Any) -> Obj:
    """A DisaggregatedSet named `name` with `roles` and any further spec fields (`slices=2`, ...)."""
    return {"apiVersion": disaggapi.API_VERSION, "kind": disaggapi.KIND, "metadata": {"name": name},
            "spec": {"roles": roles, **spec}}


def role_of(lws: Obj) -> str:
    return str(lws["metadata"]["labels"][disaggapi.ROLE])


def revision_of(obj: Obj) -> str:
    return str(obj["metadata"]["labels"][disaggapi.REVISION])


def replicas_of(lws: Obj) -> int:
    return int(lws["spec"].get("replicas", 1))


def ready_of(lws: Obj) -> int:
    return int((lws.get("status") or {}).get("readyReplicas") or 0)


@dataclass
class Rollout:
    """What `DSHarness.rollout` saw: every distinct state, in order."""

    states: list[State] = field(default_factory=list)

    def add(self, state: State) -> None:
        if not self.states or self.states[-1] != state:
            self.states.append(state)


@dataclass
class DSHarness:
    lws: LWSHarness

    def __post_init__(self) -> None:
        self.custom = client.CustomObjectsApi(self.lws.api)

    # --- the DisaggregatedSet ------------------------------------------------------------------------

    def create(self, body: Obj) -> Obj:
        """Create the probe ConfigMap (once) and the set; returns the set as the server stored it."""
        self.lws.ensure_probe_configmap()
        self.lws.step(f"created DisaggregatedSet {body['metadata']['name']}")
        return observe.raw(self.custom.create_namespaced_custom_object(
            disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.PLURAL, body, _preload_content=False))

    def refusal(self, body: Obj) -> client.ApiException:
        """Create `body` expecting the API server to refuse it; the refusal (AssertionError if it was stored)."""
        try:
            self.custom.create_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace,
                                                        disaggapi.PLURAL, body)
        except client.ApiException as exc:
            return exc
        raise AssertionError(f"DisaggregatedSet {body['metadata']['name']} was admitted; want it refused: "
                             f"{body['spec']}")

    def get(self, name: str) -> Obj:
        return observe.raw(self.custom.get_namespaced_custom_object(
            disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.PLURAL, name, _preload_content=False))

    def patch(self, name: str, body: Obj, *, step: str) -> Obj:
        """A JSON merge patch of the set (lists are replaced whole), recorded as `step`."""
        self.lws.step(step)
        return observe.raw(self.custom.patch_namespaced_custom_object(
            disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.PLURAL, name, body,
            _content_type="application/merge-patch+json", _preload_content=False))

    def set_roles(self, name: str, roles: list[Obj], *, step: str) -> Obj:
        """Replace `spec.roles` (what a user's `kubectl apply` of a new manifest does)."""
        return self.patch(name, {"spec": {"roles": copy.deepcopy(roles)}}, step=step)

    def delete(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace,
                                                    disaggapi.PLURAL, name)

    # --- what it owns --------------------------------------------------------------------------------

    def lws_objects(self, name: str) -> list[Obj]:
        """The LeaderWorkerSets labelled as the set's (not being deleted), by name."""
        found: list[Obj] = observe.raw(self.custom.list_namespaced_custom_object(
            workloads.GROUP, workloads.VERSION, self.lws.namespace, workloads.PLURAL,
            label_selector=f"{disaggapi.NAME}={name}", _preload_content=False))["items"]
        return sorted((o for o in found if not o["metadata"].get("deletionTimestamp")),
                      key=lambda o: str(o["metadata"]["name"]))

    def services(self, name: str) -> dict[str, Obj]:
        items: list[Obj] = observe.raw(self.lws.core.list_namespaced_service(
            self.lws.namespace, label_selector=f"{disaggapi.NAME}={name}", _preload_content=False))["items"]
        return {str(s["metadata"]["name"]): s for s in items if not s["metadata"].get("deletionTimestamp")}

    def scaler(self, name: str) -> Obj | None:
        """The DisaggregatedSetRoleScaler `name`, or None when there is none (HTTP 404)."""
        try:
            return observe.raw(self.custom.get_namespaced_custom_object(
                disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.SCALER_PLURAL, name,
                _preload_content=False))
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def scaler_scale(self, name: str) -> Obj:
        return observe.raw(self.custom.get_namespaced_custom_object_scale(
            disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.SCALER_PLURAL, name,
            _preload_content=False))

    def scale_scaler(self, name: str, replicas: int) -> Obj:
        """Write the scaler's scale subresource, as `kubectl scale` and the HPA do."""
        self.lws.step(f"scaled {name} to {replicas} (scale subresource)")
        return observe.raw(self.custom.patch_namespaced_custom_object_scale(
            disaggapi.GROUP, disaggapi.VERSION, self.lws.namespace, disaggapi.SCALER_PLURAL, name,
            {"spec": {"replicas": replicas}}, _content_type="application/merge-patch+json", _preload_content=False))

    def describe(self, name: str) -> str:
        """The set, its LWS (spec/ready replicas, revision) and Services, then the namespace's state."""
        try:
            ds: Obj | str = self.get(name)
        except client.ApiException as exc:
            ds = f"HTTP {exc.status}"
        rows = [f"  {o['metadata']['name']}: spec {o['spec'].get('replicas')} ready {ready_of(o)}"
                for o in self.lws_objects(name)]
        return (f"DisaggregatedSet {name}: {ds if isinstance(ds, str) else ds.get('status')}\n"
                f"its LWS:\n" + "\n".join(rows) + f"\nits Services: {sorted(self.services(name))}\n"
                + self.lws.describe())

    # --- waits ---------------------------------------------------------------------------------------

    def wait(self, check: Callable[[], T], *, what: str, name: str, within: TimeoutName = "lws_available") -> T:
        """Poll the named `check` until it returns, for at most the named timeout; a timeout shows the set."""
        return core.wait_until(check, what=what, timeout=getattr(self.lws.t, within), poll=self.lws.t.poll_interval,
                               describe=lambda: self.describe(name))

    def settled(self, name: str, want: Mapping[str, int], *, slices: int = 1) -> dict[str, Obj]:
        """Exactly one LWS per (slice, role) of `want`, all on one revision, each with spec.replicas and
        status.readyReplicas at the role's count; returns them by name."""
        def check() -> dict[str, Obj]:
            found = self.lws_objects(name)
            per_role: dict[str, int] = {}
            for o in found:
                per_role[role_of(o)] = per_role.get(role_of(o), 0) + 1
            revisions = {revision_of(o) for o in found}
            wrong = [f"{o['metadata']['name']} spec {replicas_of(o)} ready {ready_of(o)}" for o in found
                     if role_of(o) not in want or not replicas_of(o) == ready_of(o) == want[role_of(o)]]
            if per_role != dict.fromkeys(want, slices) or len(revisions) != 1 or wrong:
                raise core.NotYet(f"LWS per role {per_role} on revisions {sorted(revisions)}; not settled: {wrong}")
            return {str(o["metadata"]["name"]): o for o in found}
        return self.wait(check, what=f"DisaggregatedSet {name} to settle at {dict(want)} ({slices} slice(s))",
                         name=name)

    def rollout(self, name: str, old: str, done: Mapping[str, int],
                invariant: Callable[[State], None] | None = None) -> Rollout:
        """Watch the set roll from revision `old` until every role's new LWS is at `done` (spec and ready) and no
        old LWS is left; `invariant` is checked on the state after every change of the set's LWS, its
        AssertionError fails at once. Returns the distinct states in order.

        Why a watch and not a poll: a poll can miss a state (a fresh clone's run saw trace B skip (0,0/2,2) between
        two polls), and the invariants and the path checks are about every state the controller wrote."""
        seen = Rollout()
        selector = f"{disaggapi.NAME}={name}"
        args = (workloads.GROUP, workloads.VERSION, self.lws.namespace, workloads.PLURAL)
        objs: dict[str, Obj] = {}

        def relist() -> str:
            listed = observe.raw(self.custom.list_namespaced_custom_object(*args, label_selector=selector,
                                                                           _preload_content=False))
            objs.clear()
            objs.update({o["metadata"]["name"]: o for o in listed["items"]})
            return str(listed["metadata"]["resourceVersion"])

        def finished() -> bool:
            found = [o for o in objs.values() if not o["metadata"].get("deletionTimestamp")]
            newer = {revision_of(o) for o in found} - {old}
            if len(newer) > 1:
                raise AssertionError(f"more than one new revision: {sorted(newer)}")
            if not newer:
                return False
            state = _state_of(found, newer.pop())
            seen.add(state)
            if invariant is not None:
                invariant(state)
            settled = all(ready_of(o) == replicas_of(o) for o in found)
            return (state == {r: (0, n) for r, n in done.items()} and settled
                    and not any(revision_of(o) == old for o in found))

        limit = self.lws.t.rollout_complete
        deadline = time.monotonic() + limit
        version = relist()
        try:
            if finished():
                return seen
            while time.monotonic() < deadline:
                stream = watch.Watch()  # type: ignore[no-untyped-call]
                try:
                    events = stream.stream(  # type: ignore[no-untyped-call]
                        self.custom.list_namespaced_custom_object, *args, label_selector=selector,
                        resource_version=version, timeout_seconds=max(1, int(deadline - time.monotonic())))
                    for event in events:
                        obj = event["object"]
                        if event["type"] == "ERROR":  # e.g. 410 Gone: start again from a fresh list
                            version = relist()
                            break
                        version = str(obj["metadata"]["resourceVersion"])
                        if event["type"] == "DELETED":
                            objs.pop(obj["metadata"]["name"], None)
                        else:
                            objs[obj["metadata"]["name"]] = obj
                        if finished():
                            return seen
                finally:
                    stream.stop()  # type: ignore[no-untyped-call]
        except AssertionError as exc:
            raise AssertionError(f"{exc}; states seen so far: {seen.states}") from None
        raise AssertionError(f"timed out after {limit:g}s (timeout rollout_complete) waiting for DisaggregatedSet "
                             f"{name} to roll from revision {old} to {dict(done)}; states seen: {seen.states}\n"
                             f"{self.describe(name)}")


def _state_of(found: list[Obj], new: str) -> State:
    """Per role (old, new) spec.replicas over `found`, `new` being the new revision's label."""
    out: dict[str, list[int]] = {}
    for o in found:
        pair = out.setdefault(role_of(o), [0, 0])
        pair[1 if revision_of(o) == new else 0] += replicas_of(o)
    return {r: (p[0], p[1]) for r, p in out.items()}


