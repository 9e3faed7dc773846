"""Record a `lwsconf.timeline.model.Timeline` of an LWS by watching its pods and StatefulSets.

Waiting for the end state cannot show what happened on the way, so while a test acts, two watch
threads (StatefulSets, pods) keep the latest objects and, after every event, append a `GroupSample`
for each group whose observed state changed and a `LeaderSample` when the leader StatefulSet's
replicas, partition, maxUnavailable or revision changed. The test adds `Step`s ("template updated").

A group's members are its live leader pod `N-i` and the live worker pods of the worker StatefulSet
that this leader pod owns (ownership, not names: the old group's workers, still terminating after a
leader was replaced, belong to no current group). A group is *ready* (serving) when its leader and
`size - 1` members are all Running and Ready. On a watch error (410 included) the kind is relisted
and watched again; the error is kept in `Timeline.errors`. The claims about a timeline are in
`lwsconf.timeline.analysis`; the file format in `lwsconf.timeline.model`.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from lwsconf import lwsapi
from lwsconf.timeline.model import GroupSample, LeaderSample, PodState, Step, Timeline, save
from lwsconf.waits import observe

__all__ = ["TimelineRecorder", "record_timeline"]

NAME, REVISION, SIZE = lwsapi.NAME, lwsapi.TEMPLATE_REVISION_HASH, lwsapi.SIZE
Obj = dict[str, Any]
Lister = Callable[..., Any]
WATCH_SECONDS = 1
"""Each watch asks the server to end it after this long (then it is opened again from the last version)."""


class _State:
    """The latest pods and StatefulSets of one LWS; turns each change into samples of `timeline`."""

    def __init__(self, timeline: Timeline, clock: Callable[[], float]) -> None:
        self.tl = timeline
        self.clock = clock
        self.started = clock()
        self.lock = threading.Lock()
        self.pods: dict[str, Obj] = {}
        self.sts: dict[str, Obj] = {}
        self.last: dict[int, GroupSample] = {}
        self.last_sts: LeaderSample | None = None
        self.seq = 0

    def now(self) -> float:
        return round(self.clock() - self.started, 3)

    def apply(self, kind: str, event: str, obj: Obj) -> None:
        store = self.pods if kind == "pods" else self.sts
        name = obj["metadata"]["name"]
        with self.lock:
            if event == "DELETED":
                store.pop(name, None)
            else:
                store[name] = obj
            self._sample(self.now())

    def replace(self, kind: str, items: list[Obj], *, sample: bool = True) -> None:
        """A fresh list of one kind replaces what was known (the start, or a relist after an error)."""
        with self.lock:
            store = self.pods if kind == "pods" else self.sts
            store.clear()
            store.update({o["metadata"]["name"]: o for o in items})
            if sample:
                self._sample(self.now())

    def step(self, text: str) -> None:
        with self.lock:
            self.tl.steps.append(Step(self.now(), text))

    def _group_of(self, pod_name: str) -> tuple[int, int] | None:
        rest = pod_name[len(self.tl.name) + 1:].split("-")
        if not pod_name.startswith(self.tl.name + "-") or not all(x.isdigit() for x in rest) or len(rest) > 2:
            return None
        return int(rest[0]), int(rest[1]) if len(rest) == 2 else 0

    def _sample(self, t: float) -> None:
        self.seq += 1
        by_group: dict[int, list[tuple[int, Obj]]] = {}
        for name, pod in self.pods.items():
            where = self._group_of(name)
            if where and not pod["metadata"].get("deletionTimestamp"):
                by_group.setdefault(where[0], []).append((where[1], pod))
        for g in sorted(set(by_group) | set(self.last)):
            sample = self._group_sample(t, g, by_group.get(g, []))
            previous = self.last.get(g)
            if previous is None or (previous.revisions, previous.ready, previous.pods) != \
                    (sample.revisions, sample.ready, sample.pods):
                self.last[g] = sample
                self.tl.samples.append(sample)
        leader = self.sts.get(self.tl.name)
        if leader is not None:
            row = _leader_sample(t, leader)
            if self.last_sts is None or (row.replicas, row.partition, row.max_unavailable, row.revision) != (
                    self.last_sts.replicas, self.last_sts.partition, self.last_sts.max_unavailable,
                    self.last_sts.revision):
                self.last_sts = row
                self.tl.leader_sts.append(row)

    def _group_sample(self, t: float, g: int, members: list[tuple[int, Obj]]) -> GroupSample:
        leader = next((p for j, p in members if j == 0), None)
        owned_sts = set()
        if leader is not None:
            uid = leader["metadata"]["uid"]
            owned_sts = {s["metadata"]["uid"] for s in self.sts.values()
                         if any(o.get("uid") == uid for o in s["metadata"].get("ownerReferences") or [])}
        workers = [p for j, p in members if j > 0 and any(
            o.get("uid") in owned_sts for o in p["metadata"].get("ownerReferences") or [])]
        group = ([leader] if leader else []) + sorted(workers, key=lambda p: p["metadata"]["name"])
        size = int(((leader or {}).get("metadata", {}).get("annotations") or {}).get(SIZE, "0") or 0)
        pods = tuple(PodState(p["metadata"]["name"], (p["metadata"].get("labels") or {}).get(REVISION),
                              observe.pod_ready(p), p["metadata"]["uid"][:8], p is leader) for p in group)
        revisions = tuple(sorted({p.revision or "" for p in pods}))
        ready = leader is not None and len(workers) == size - 1 and all(p.ready for p in pods)
        return GroupSample(t, self.seq, g, revisions, ready, pods)


def _leader_sample(t: float, sts: Obj) -> LeaderSample:
    spec = sts.get("spec") or {}
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    return LeaderSample(t, int(spec.get("replicas", 1)), int(rolling.get("partition", 0)),
                        rolling.get("maxUnavailable"), (sts["metadata"].get("labels") or {}).get(REVISION))


def _list(lister: Lister, namespace: str, selector: str) -> tuple[list[Obj], str]:
    listed = observe.raw(lister(namespace, label_selector=selector, _preload_content=False))
    return list(listed["items"]), str(listed["metadata"]["resourceVersion"])


class _OpenWatch:
    """The HTTP response a watch thread is reading, so `stop()` can end the read at once.

    Without it `stop()` waited for each watch to end on its own (up to its one-second timeout): about 0.9 s at
    the end of every test that records a timeline (measured 2026-12-03 on PartitionKeepsSurge)."""

    def __init__(self, lister: Lister) -> None:
        self.response: Any = None
        self.stopped = False
        self.lock = threading.Lock()

        @functools.wraps(lister)  # the watch reads the lister's docstring for the type it returns
        def opened(*args: Any, **kwargs: Any) -> Any:
            response = lister(*args, **kwargs)
            with self.lock:
                self.response = response
                if self.stopped:  # opened while `shutdown()` ran: ended at once too
                    _shutdown(response)
            return response
        self.lister: Lister = opened

    def shutdown(self) -> None:
        with self.lock:
            self.stopped = True
            if self.response is not None:
                _shutdown(self.response)


def _shutdown(response: Any) -> None:
    with contextlib.suppress(Exception):
        response.shutdown()  # urllib3 >= 2.3: wakes a blocked read, which then ends


def _watch_loop(lister: Lister, namespace: str, selector: str, kind: str, state: _State, rv: str,
                stop: threading.Event) -> None:
    """Watch from `rv`; on 410 or any error, relist (replacing the kind's state) and watch again, until `stop`."""
    while not stop.is_set():
        try:
            while not stop.is_set():
                w = watch.Watch()  # type: ignore[no-untyped-call]
                stream = w.stream(lister, namespace, label_selector=selector,  # type: ignore[no-untyped-call]
                                  resource_version=rv, timeout_seconds=WATCH_SECONDS,
                                  _request_timeout=WATCH_SECONDS + 4)
                for event in stream:
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error: {obj}")
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        state.apply(kind, event["type"], obj)
                    if stop.is_set():
                        w.stop()  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - record, relist and carry on; the test's own waits judge
            if stop.is_set():
                return  # `stop()` ended the read
            state.tl.errors.append(f"{kind} watch: {type(exc).__name__}: {str(exc)[:200]}")
            if stop.wait(0.2):
                return
            with contextlib.suppress(Exception):
                items, rv = _list(lister, namespace, selector)
                state.replace(kind, items)


class TimelineRecorder:
    """Records LWS `name` from `start()` to `stop()`; `step(text)` marks what the test did meanwhile."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str, *, title: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api, self.namespace, self.name = api, namespace, name
        self.timeline = Timeline(namespace, name, title or name)
        self._state = _State(self.timeline, clock)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches: list[_OpenWatch] = []

    def start(self) -> Timeline:
        selector = f"{NAME}={self.name}"
        core_api, apps = client.CoreV1Api(self.api), client.AppsV1Api(self.api)
        listers = (("statefulsets", apps.list_namespaced_stateful_set), ("pods", core_api.list_namespaced_pod))
        versions = {}
        for kind, lister in listers:  # StatefulSets first: pods are grouped through them
            items, versions[kind] = _list(lister, self.namespace, selector)
            self._state.replace(kind, items, sample=kind == "pods")
        self._watches = [_OpenWatch(lister) for _, lister in listers]
        self._threads = [threading.Thread(target=_watch_loop, name=f"timeline-{kind}", daemon=True,
                                          args=(opened.lister, self.namespace, selector, kind, self._state,
                                                versions[kind], self._stop))
                         for (kind, _), opened in zip(listers, self._watches, strict=True)]
        for thread in self._threads:
            thread.start()
        return self.timeline

    def step(self, text: str) -> None:
        self._state.step(text)

    def now(self) -> float:
        """Seconds since recording began: the clock of every time on the timeline."""
        return self._state.now()

    def stop(self) -> Timeline:
        """Stop watching (idempotent); the timeline's `end` is now."""
        self._stop.set()
        for opened in self._watches:
            opened.shutdown()
        for thread in self._threads:
            thread.join(timeout=10)
        if self.timeline.end is None:
            self.timeline.end = self._state.now()
        return self.timeline


@contextlib.contextmanager
def record_timeline(api: client.ApiClient, namespace: str, name: str, *, path: Path | None = None,
                    title: str = "") -> Iterator[TimelineRecorder]:
    """Record LWS `name` while the block runs (the recorder's `.timeline`); save it to `path` at exit."""
    recorder = TimelineRecorder(api, namespace, name, title=title)
    recorder.start()
    try:
        yield recorder
    finally:
        recorder.stop()
        if path is not None:
            save(recorder.timeline, path)
