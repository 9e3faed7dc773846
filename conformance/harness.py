"""The `lws` fixture's object: create, read, change and probe LeaderWorkerSets in the test's namespace.

A thin layer over the official client and `lwsconf.waits` so that test bodies read as the scenario:
`lws.create(manifest)`, `lws.patch(name, {...})`, `lws.scale(name, 3)`, `lws.probe("demo-0-1", "/env")`.
Everything goes through the Kubernetes API (CustomObjectsApi for LWS, the scale subresource, the API
server's pod and service proxies), so the same test runs on every backend. While a timeline is being
recorded (`with lws.timeline(name)`), what the test does through the harness (patch, scale, delete a
pod, crash a container) is recorded as a step of it, so the report's picture says what happened when.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kubernetes import client

from lwsconf import lwsapi, workloads
from lwsconf.timeline import model as timeline_model
from lwsconf.timeouts import TimeoutName, Timeouts
from lwsconf.waits import core, lws, observe, proxy, recorder, rollout, services
from lwsconf.waits import pods as pod_waits

P = lwsapi.PREFIX
NAME, GROUP_INDEX, WORKER_INDEX, GROUP_KEY = lwsapi.NAME, lwsapi.GROUP_INDEX, lwsapi.WORKER_INDEX, lwsapi.GROUP_KEY
REVISION, SIZE, LEADER_NAME, REPLICAS = lwsapi.TEMPLATE_REVISION_HASH, lwsapi.SIZE, lwsapi.LEADER_NAME, lwsapi.REPLICAS
Obj = dict[str, Any]
T = TypeVar("T")


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - the contract's group-key, not security


def labels(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def controller_of(obj: Obj) -> Obj | None:
    return next((o for o in obj["metadata"].get("ownerReferences") or [] if o.get("controller")), None)


def env_of(container: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def mismatches(want: Mapping[str, object], seen: Mapping[str, object] | None, *, exact: bool = False,
               why: Mapping[str, str] | None = None) -> list[str]:
    """`key is <observed>, want <expected> (<why>)` for each key of `want` that `seen` lacks or holds another
    value for; with `exact`, also `key is <observed>, want absent` for each key of `seen` not in `want`."""
    seen, why = seen or {}, why or {}
    wrong = [f"{key} is {repr(seen[key]) if key in seen else 'missing'}, want {value!r}"
             + (f" ({why[key]})" if key in why else "")
             for key, value in want.items() if key not in seen or seen[key] != value]
    if exact:
        wrong += [f"{key} is {seen[key]!r}, want absent" for key in seen if key not in want]
    return wrong


def assert_fields(where: str, want: Mapping[str, object], seen: Mapping[str, object] | None, *,
                  exact: bool = False, why: Mapping[str, str] | None = None) -> None:
    """Fail unless `seen` holds every key/value of `want` (`exact`: and nothing else). The message names the
    object and field (`where`) and, for each wrong key, the observed and expected value in full: pytest
    would truncate a long `==` diff and leave its sides unlabelled."""
    wrong = mismatches(want, seen, exact=exact, why=why)
    assert not wrong, f"{where}: " + "; ".join(wrong)


def is_rejected(exc: client.ApiException) -> bool:
    """A refusal of the object itself (400 Bad Request, 403 webhook denial, 422 Invalid)."""
    return exc.status in (400, 403, 422)


def _require_named(check: Callable[..., object], how: str) -> None:
    """Refuse a lambda: a wait or hold in a test is a named check, so the test reads as what it awaits."""
    if getattr(check, "__name__", "<lambda>") == "<lambda>":
        raise TypeError(f"lws.{how}() was given a lambda; define the check as a named function (def "
                        f"<what_must_hold>(): ...) or use a named wait of the harness or lwsconf.waits")


def _missing_is_not_yet(check: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        try:
            return check()
        except LookupError as exc:
            raise core.NotYet(f"missing {type(exc).__name__}: {exc}") from None
    return run


class ControllerRestart(Protocol):
    """The implementation fixture's handle on its controller (fixtures/controller_restart.py)."""

    how: str

    def restart(self) -> None: ...


class ControllerUpgrade(Protocol):
    """The implementation fixture's handle for upgrading its controller (fixtures/controller_upgrade.py)."""

    @property
    def how(self) -> str: ...

    def begin(self) -> None: ...

    def upgrade(self) -> None: ...

    def finish(self) -> None: ...


@dataclass
class LWSHarness:
    api: client.ApiClient
    namespace: str
    t: Timeouts
    artifacts: Path | None = None
    controller: ControllerRestart | None = None
    """How to restart the implementation's controller: the one thing tests do outside the Kubernetes API."""
    upgrade: ControllerUpgrade | None = None
    """How to run an older controller of the implementation and upgrade it to the one under test."""

    def __post_init__(self) -> None:
        self.custom = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self._configmap = False
        self._recorder: recorder.TimelineRecorder | None = None
        self._recorded = False

    # --- the LWS object ----------------------------------------------------------------------------

    def ensure_probe_configmap(self) -> None:
        """Create the ConfigMap the probe pods mount (once per test; a second harness may have made it)."""
        if not self._configmap:
            try:
                self.core.create_namespaced_config_map(self.namespace, workloads.probe_configmap())  # type: ignore[arg-type]
            except client.ApiException as exc:
                if exc.status != 409:
                    raise
            self._configmap = True

    def create(self, manifest: Obj) -> Obj:
        """Create the probe ConfigMap (once) and the LWS; returns the LWS as the server stored it."""
        self.ensure_probe_configmap()

        def created() -> Obj:
            try:
                return observe.raw(self.custom.create_namespaced_custom_object(
                    workloads.GROUP, workloads.VERSION, self.namespace, workloads.PLURAL, manifest,
                    _preload_content=False))
            except client.ApiException as exc:
                # kube-apiserver's MutatingAdmissionPolicy dispatcher answers 503 "Resource kind ... not found.
                # There can be a delay between when CustomResourceDefinitions are created and when they are
                # available" while its type converter catches up with a (re)installed CRD; nothing is stored, so
                # the create is retried. Seen mid-run on --cluster=local after controller restarts (2026-12-03).
                if exc.status == 503 and "There can be a delay" in str(exc.body):
                    raise core.NotYet(f"creating the LWS answered 503: {str(exc.body)[:200]}") from None
                raise
        return core.wait_until(created, what=f"LWS {manifest['metadata'].get('name')} to be created (admission "
                               "ready for the kind)", timeout=self.t.create, poll=self.t.poll_interval)

    def get(self, name: str) -> Obj:
        return observe.get_lws(self.api, self.namespace, name)

    def patch(self, name: str, body: Obj, *, step: str | None = None) -> Obj:
        """A JSON merge patch (None deletes a field); recorded as `step` (default: the fields it sets)."""
        self.step(step or f"patched {name}: {_patch_summary(body)}")
        return observe.raw(self.custom.patch_namespaced_custom_object(
            workloads.GROUP, workloads.VERSION, self.namespace, workloads.PLURAL, name, body,
            _content_type="application/merge-patch+json", _preload_content=False))

    def replace(self, obj: Obj) -> Obj:
        return observe.raw(self.custom.replace_namespaced_custom_object(
            workloads.GROUP, workloads.VERSION, self.namespace, workloads.PLURAL, obj["metadata"]["name"], obj,
            _preload_content=False))

    def delete(self, name: str, *, propagation: str = "Foreground") -> None:
        self.custom.delete_namespaced_custom_object(workloads.GROUP, workloads.VERSION, self.namespace,
                                                    workloads.PLURAL, name, propagation_policy=propagation)

    def get_scale(self, name: str) -> Obj:
        return observe.raw(self.custom.get_namespaced_custom_object_scale(
            workloads.GROUP, workloads.VERSION, self.namespace, workloads.PLURAL, name, _preload_content=False))

    def scale(self, name: str, replicas: int) -> Obj:
        """Set replicas through the scale subresource (what `kubectl scale` and the HPA do)."""
        self.step(f"scaled {name} to {replicas} (scale subresource)")
        return observe.raw(self.custom.patch_namespaced_custom_object_scale(
            workloads.GROUP, workloads.VERSION, self.namespace, workloads.PLURAL, name,
            {"spec": {"replicas": replicas}}, _content_type="application/merge-patch+json", _preload_content=False))

    # --- what it created ---------------------------------------------------------------------------

    def pods(self, name: str) -> dict[str, Obj]:
        """Live (not terminating) pods of the LWS by name."""
        return {p["metadata"]["name"]: p for p in observe.pods(self.api, self.namespace, f"{NAME}={name}")
                if not p["metadata"].get("deletionTimestamp")}

    def delete_pod(self, pod: str) -> None:
        self.step(f"pod {pod} deleted")
        self.core.delete_namespaced_pod(pod, self.namespace)

    def crash(self, pod: str, code: int = 1) -> None:
        """Make the probe in `pod` exit with `code` (a real container crash: the kubelet restarts it)."""
        self.step(f"container of {pod} exited with code {code}")
        self.probe_json(pod, "/exit", code=str(code))

    def pod(self, name: str) -> Obj:
        return observe.raw(self.core.read_namespaced_pod(name, self.namespace, _preload_content=False))

    def statefulsets(self) -> dict[str, Obj]:
        return {s["metadata"]["name"]: s for s in observe.statefulsets(self.api, self.namespace)}

    def services(self) -> dict[str, Obj]:
        items = observe.raw(self.core.list_namespaced_service(self.namespace, _preload_content=False))["items"]
        return {s["metadata"]["name"]: s for s in items}

    def revisions(self, name: str) -> list[Obj]:
        """The LWS's ControllerRevisions: labelled with its name, not those StatefulSets keep for themselves
        (which carry the same label, copied from their pod template)."""
        items = observe.raw(self.apps.list_namespaced_controller_revision(
            self.namespace, label_selector=f"{NAME}={name}", _preload_content=False))["items"]
        return [r for r in items if (controller_of(r) or {}).get("kind") != "StatefulSet"]

    def groups(self, name: str) -> dict[int, lws.Group]:
        return lws.groups(self.api, self.namespace, name)

    def describe(self, name: str | None = None) -> str:
        return observe.describe_namespace(self.api, self.namespace, name)

    # --- waits: named, bound to this namespace, the run's named timeouts and the state dump ------------
    #
    # A test waits through a named wait (`<subject>_must_<predicate>`, below or in lwsconf/waits) whose
    # timeout is a field of `Timeouts`, so a slow implementation is given more time by name
    # (--timeout-overrides) and a failure says what was awaited and shows the namespace's state. A check
    # that only one test awaits is a named function of that test handed to `wait`/`hold` with the name
    # of the timeout that bounds it: both refuse a lambda, whose name tells a reader nothing.

    def ready(self, name: str, *, replicas: int, size: int) -> dict[int, lws.Group]:
        """Available, and exactly `replicas` ready groups of `size` pods."""
        found = self.groups_must_be_ready(name, replicas=replicas, size=size)
        self.lws_must_be_available(name)
        return found

    def groups_must_be_ready(self, name: str, *, replicas: int, size: int,
                             within: TimeoutName = "lws_available") -> dict[int, lws.Group]:
        """Exactly groups 0..replicas-1, each with `size` Running and Ready pods (`within`: the named
        timeout, e.g. scale_complete after a scale)."""
        return lws.groups_must_be_ready(self.api, self.namespace, name, replicas=replicas, size=size, t=self.t,
                                        timeout=getattr(self.t, within))

    def lws_must_be_available(self, name: str) -> Obj:
        """Available=True for the current generation with every group ready; returns the LWS."""
        return lws.lws_must_be_available(self.api, self.namespace, name, self.t)

    def rollout_must_complete(self, name: str, *, old: str | set[str], replicas: int, size: int) -> str:
        """Every pod on one revision not in `old`, `replicas` ready groups of `size`, Available with the
        counters at `replicas` (`lwsconf.waits.rollout`); returns the new revision key."""
        olds = {old} if isinstance(old, str) else set(old)
        return rollout.rollout_must_complete(self.api, self.namespace, name, old=olds, replicas=replicas, size=size,
                                             t=self.t)

    def group_must_be_recreated(self, name: str, index: int, old_uids: set[str], *, size: int) -> lws.Group:
        """Group `index` back with `size` Ready pods, none of them one of `old_uids`."""
        return lws.group_must_be_recreated(self.api, self.namespace, name, index, old_uids, size=size, t=self.t)

    def pod_must_have_restarted(self, pod: str, *, uid: str, restarts: int, name: str | None = None) -> Obj:
        """Pod `pod` still the pod `uid`, its containers restarted `restarts` times, Ready again."""
        return pod_waits.pod_must_have_restarted(self.api, self.namespace, pod, uid=uid, restarts=restarts, t=self.t,
                                            lws=name)

    def pods_must_be_gone(self, label_selector: str, *, name: str | None = None,
                          within: TimeoutName = "delete") -> None:
        """No pod matching `label_selector` exists any more, terminating ones included (`within`: delete unless
        given, e.g. scale_complete after a scale-down)."""
        pod_waits.pods_must_be_gone(self.api, self.namespace, label_selector, self.t, lws=name,
                                    timeout=getattr(self.t, within))

    def service_endpoints_must_be(self, service: str, pods: set[str], *, name: str | None = None) -> None:
        """Service `service`'s endpoints are exactly `pods`, all ready (service_endpoints)."""
        services.service_endpoints_must_be(self.api, self.namespace, service, pods, self.t, lws=name)

    def service_must_route_only_to(self, service: str, allowed: set[str], *, must_reach: set[str] | None = None,
                                   name: str | None = None) -> set[str]:
        """Requests through `service` to the probe port are answered only by `allowed`,
        required_consecutive_successes in a row within max_time_to_consistency, and together by every pod of
        `must_reach`; the pods that answered."""
        return services.service_must_route_only_to(self.api, self.namespace, service, workloads.PROBE_PORT, allowed,
                                                   self.t, must_reach=must_reach, lws=name)

    def answering_pod(self, service: str) -> str:
        """One request through `service` to the probe port; the pod that answered (AssertionError if none)."""
        return services.answering_pod(self.api, self.namespace, service, workloads.PROBE_PORT, self.t)

    def lws_must_be_gone(self, name: str) -> None:
        """LeaderWorkerSet `name` no longer exists (a foreground delete ends once its dependents are gone)."""
        def gone() -> None:
            try:
                self.get(name)
            except client.ApiException as exc:
                if exc.status == 404:
                    return
                raise
            raise core.NotYet(f"LeaderWorkerSet {name} still exists")
        self.wait(gone, what=f"LeaderWorkerSet {name} to be deleted", within="delete", name=name)

    def wait(self, check: Callable[[], T], *, what: str, within: TimeoutName = "lws_available",
             name: str | None = None) -> T:
        """Poll the named function `check` until it returns, for at most the named timeout `within`
        (AssertionError, NotYet and a missing key mean "not yet"); on timeout the message shows `what`
        and the namespace's state (LWS `name`'s first)."""
        _require_named(check, "wait")
        return core.wait_until(_missing_is_not_yet(check), what=what, timeout=getattr(self.t, within),
                               poll=self.t.poll_interval, describe=lambda: self.describe(name))

    def hold(self, check: Callable[[], T], *, what: str, name: str | None = None) -> T:
        """The named "must stay" check `check` passes at every poll for `stays_true` seconds; the first
        failing poll fails the test with `what`, the reason and the namespace's state."""
        _require_named(check, "hold")
        return core.must_hold(_missing_is_not_yet(check), what=what, duration=self.t.stays_true,
                              poll=self.t.poll_interval, describe=lambda: self.describe(name))

    @contextlib.contextmanager
    def timeline(self, name: str) -> Iterator[timeline_model.Timeline]:
        """Record LWS `name`'s groups, leader StatefulSet and this test's steps while the block runs; saved
        as timeline.json in the test's artifacts (when the run keeps artifacts) for the report's picture.
        One per test: the report draws one timeline per test."""
        if self._recorded:
            raise RuntimeError("this test already recorded a timeline; record the whole scenario in one "
                               "`with lws.timeline(...)` block (the report shows one timeline per test)")
        self._recorded = True
        rec = recorder.TimelineRecorder(self.api, self.namespace, name)
        timeline = rec.start()  # a failed first list raises here: no recording, no file
        self._recorder = rec
        try:
            yield timeline
        finally:
            rec.stop()
            self._recorder = None
            if self.artifacts is not None:
                timeline_model.save(timeline, self.artifacts / timeline_model.FILENAME)

    def step(self, text: str) -> None:
        """Mark what the test does now on the timeline being recorded (nothing when none is)."""
        if self._recorder is not None:
            self._recorder.step(text)

    def clock(self) -> float:
        """Now on the recording timeline's clock (seconds since it began), else the monotonic clock."""
        return self._recorder.now() if self._recorder is not None else time.monotonic()

    def add_requests(self, requests: list[timeline_model.Request]) -> None:
        """Put requests a serving test sent (timed with `clock`) on the timeline being recorded."""
        if self._recorder is not None:
            self._recorder.timeline.requests.extend(requests)

    def restart_controller(self) -> str:
        """Stop the implementation's controller and start it again (LWSControllerRestart tests only).

        Returns:
            What the restart did, for failure messages.
        """
        if self.controller is None:
            raise RuntimeError("this implementation cannot be restarted; a test restarting the controller must "
                               "declare Feature.CONTROLLER_RESTART, so the suite reports it NOT_SUPPORTED instead")
        self.step(f"controller restarted ({self.controller.how})")
        self.controller.restart()
        return self.controller.how

    @contextlib.contextmanager
    def older_controller(self) -> Iterator[ControllerUpgrade]:
        """The block runs under the implementation's older controller (LWSControllerUpgrade tests only); the
        handle's `upgrade()` (through `upgrade_controller`) replaces it, and the session's controller runs again
        when the block ends, however it ends."""
        if self.upgrade is None:
            raise RuntimeError("this implementation cannot be upgraded; a test upgrading the controller must declare "
                               "Feature.CONTROLLER_UPGRADE, so the suite reports it NOT_SUPPORTED instead")
        self.step(f"older controller started ({self.upgrade.how})")
        self.upgrade.begin()
        try:
            yield self.upgrade
        finally:
            self.upgrade.finish()

    def upgrade_controller(self) -> str:
        """Replace the older controller by the one under test; what the upgrade did, for failure messages."""
        assert self.upgrade is not None
        self.step(f"controller upgraded ({self.upgrade.how})")
        self.upgrade.upgrade()
        return self.upgrade.how

    # --- the probe ---------------------------------------------------------------------------------

    def probe(self, pod: str, path: str = "/", /, **query: str) -> proxy.Reply:
        """GET the probe in `pod` through `pods/<pod>:8080/proxy/<path>`."""
        return proxy.pod_get(self.api, self.namespace, pod, workloads.PROBE_PORT, path, query=query or None,
                             timeout=self.t.request_timeout)

    def probe_json(self, pod: str, path: str = "/", /, **query: str) -> Obj:
        """The probe's JSON answer, waiting (pods_running) until the pod answers."""
        return core.wait_until(lambda: self.probe(pod, path, **query).json(), what=f"pod {pod} to answer {path}",
                               timeout=self.t.pods_running, poll=self.t.poll_interval, describe=self.describe)

    def service_get(self, service: str, port: int | str, path: str = "/") -> proxy.Reply:
        return proxy.service_get(self.api, self.namespace, service, port, path, timeout=self.t.request_timeout)


def _patch_summary(body: Obj, prefix: str = "") -> str:
    """`spec.replicas=2, spec.leaderWorkerTemplate changed`: a merge patch in a few words, for a step."""
    parts = []
    for key, value in body.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and key != "leaderWorkerTemplate":
            parts.append(_patch_summary(value, path + "."))
        elif isinstance(value, dict):
            size = value.get("size")
            parts.append(f"{path} changed" + (f" (size {size})" if size is not None else ""))
        else:
            parts.append(f"{path}={value}")
    return ", ".join(parts)
