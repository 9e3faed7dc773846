"""A watch-based timeline of an LWS's groups during a rollout, restart or scale, for whole-timeline claims.

Waiting for the end state cannot show what happened on the way ("no group ever served with its leader
and workers on different revisions", "never more than maxUnavailable groups down", "the leader
StatefulSet peaked at R + surge"). `record_timeline` watches the namespace's pods and StatefulSets in
background threads while the test acts, and after every event appends a *sample* for each group whose
observed state changed:

    {"t": seconds since recording began, "seq": event number (samples of one event share it), "group": i,
     "revision": key or None when mixed, "revisions": [keys], "ready": bool,
     "pods": [{"name", "revision", "ready", "uid", "leader"}]}

A group's members are its live leader pod `N-i` and the live worker pods of the worker StatefulSet
that this leader pod owns (ownership, not names: the old group's workers, still terminating after a
leader was replaced, belong to no current group). A group is *ready* (serving) when its leader and
`size - 1` members are all Running and Ready. Leader StatefulSet samples (`replicas`, `partition`,
`maxUnavailable`, `revision`) are kept apart. `Timeline.save(path)` writes both as JSON for reports.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from lwsconf.timeouts import Timeouts
from lwsconf.waits import core, lws, observe

NAME = "leaderworkerset.sigs.k8s.io/name"
REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"
SIZE = "leaderworkerset.sigs.k8s.io/size"
Obj = dict[str, Any]


@dataclass
class Timeline:
    """Samples recorded so far (read them after the `with` block; they keep growing inside it)."""

    namespace: str
    name: str
    samples: list[Obj] = field(default_factory=list)
    leader_sts: list[Obj] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def half_updated(self) -> list[Obj]:
        """Samples of a group serving (ready) with leader and workers on different revisions."""
        return [s for s in self.samples if s["ready"] and len(s["revisions"]) > 1]

    def replacement_order(self, old_revision: str, groups: int) -> list[int]:
        """Groups `0..groups-1` in the order their leader first appeared on a revision other than `old_revision`."""
        first: dict[int, float] = {}
        for s in self.samples:
            leader = next((p for p in s["pods"] if p["leader"]), None)
            if s["group"] < groups and leader and leader["revision"] != old_revision:
                first.setdefault(s["group"], s["t"])
        return sorted(first, key=lambda g: first[g])

    def states(self) -> Iterator[tuple[float, dict[int, Obj]]]:
        """(t, latest sample per group) at each observed instant, in time order.

        Samples taken from one event share their `seq` and form one instant (e.g. every group at the start).
        """
        latest: dict[int, Obj] = {}
        ordered = sorted(self.samples, key=lambda s: s["seq"])
        for n, s in enumerate(ordered):
            latest[s["group"]] = s
            if n + 1 == len(ordered) or ordered[n + 1]["seq"] != s["seq"]:
                yield s["t"], dict(latest)

    def max_unready(self, groups: range) -> tuple[int, float]:
        """The most groups of `groups` not ready at one instant (missing counts as not ready), and when."""
        worst, when = 0, 0.0
        for t, latest in self.states():
            down = sum(1 for g in groups if not (latest.get(g) or {}).get("ready", False))
            if down > worst:
                worst, when = down, t
        return worst, when

    def min_ready(self) -> int:
        """The fewest ready groups (any index, surge included) at one instant after the first sample."""
        counts = [sum(1 for s in latest.values() if s["ready"]) for _, latest in self.states()]
        return min(counts) if counts else 0

    def peak_leader_replicas(self) -> int:
        return max((s["replicas"] for s in self.leader_sts), default=0)

    def to_json(self) -> Obj:
        return {"namespace": self.namespace, "lws": self.name, "samples": self.samples,
                "leaderStatefulSet": self.leader_sts, "errors": self.errors}

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True))

    def describe(self, last: int = 40, *, around: float | None = None) -> str:
        """The last `last` group samples and leader StatefulSet rows; with `around` (a time `t`, e.g. from
        `max_unready`), the `last` samples centred on it (its rows marked `>`) and the leader rows up to it
        instead, so a violation early in a long timeline is still shown."""
        samples, sts, where = self.samples[-last:], self.leader_sts[-10:], f"last {last}"
        if around is not None:
            at = next((n for n, s in enumerate(self.samples) if s["t"] >= around), len(self.samples))
            start = max(0, min(at - last // 2, len(self.samples) - last))
            samples = self.samples[start:start + last]
            sts = [s for s in self.leader_sts if s["t"] <= around][-10:]
            where = f"{len(samples)} around t={around}"

        def row(s: Obj) -> str:
            pods = [p["name"] + ("*" if p["ready"] else "") for p in s["pods"]]
            mark = ">" if s["t"] == around else " "
            return (f"{mark} t={s['t']:7.2f} group {s['group']} ready={s['ready']} revisions={s['revisions']} "
                    f"pods={pods}")
        sts_rows = [f"  t={s['t']:7.2f} replicas={s['replicas']} partition={s['partition']} "
                    f"maxUnavailable={s.get('maxUnavailable')}" for s in sts]
        nl = "\n"
        return (f"group samples ({where}; * = ready):{nl}{nl.join(row(s) for s in samples)}{nl}"
                f"leader StatefulSet{' up to then' if around is not None else ''}:{nl}{nl.join(sts_rows)}")


class _Recorder:
    """Keeps the latest pods and StatefulSets and turns each change into samples."""

    def __init__(self, timeline: Timeline) -> None:
        self.tl = timeline
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.pods: dict[str, Obj] = {}
        self.sts: dict[str, Obj] = {}
        self.last: dict[int, Obj] = {}
        self.last_sts: Obj = {}
        self.seq = 0

    def apply(self, kind: str, event: str, obj: Obj) -> None:
        store = self.pods if kind == "pods" else self.sts
        name = obj["metadata"]["name"]
        with self.lock:
            if event == "DELETED":
                store.pop(name, None)
            else:
                store[name] = obj
            self._sample(time.monotonic() - self.started)

    def replace(self, kind: str, items: list[Obj], *, sample: bool = True) -> None:
        """A fresh list of one kind replaces what was known (the start, or a relist after an error)."""
        with self.lock:
            store = self.pods if kind == "pods" else self.sts
            store.clear()
            store.update({o["metadata"]["name"]: o for o in items})
            if sample:
                self._sample(time.monotonic() - self.started)

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
            sample = self._group_sample(g, by_group.get(g, []))
            key = {k: v for k, v in sample.items() if k != "t"}
            if self.last.get(g) != key:
                self.last[g] = key
                self.tl.samples.append({"t": round(t, 3), "seq": self.seq, **sample})
        leader = self.sts.get(self.tl.name)
        if leader is not None:
            spec = leader.get("spec") or {}
            rolling = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {})
            row = {"replicas": spec.get("replicas", 1), "partition": rolling.get("partition", 0),
                   "maxUnavailable": rolling.get("maxUnavailable"),
                   "revision": (leader["metadata"].get("labels") or {}).get(REVISION)}
            if row != self.last_sts:
                self.last_sts = row
                self.tl.leader_sts.append({"t": round(t, 3), **row})

    def _group_sample(self, g: int, members: list[tuple[int, Obj]]) -> Obj:
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
        revs = sorted({(p["metadata"].get("labels") or {}).get(REVISION, "") for p in group})
        ready = leader is not None and len(workers) == size - 1 and all(observe.pod_ready(p) for p in group)
        return {"group": g, "revision": revs[0] if len(revs) == 1 else None, "revisions": revs, "ready": ready,
                "pods": [{"name": p["metadata"]["name"], "revision": (p["metadata"].get("labels") or {}).get(REVISION),
                          "ready": observe.pod_ready(p), "uid": p["metadata"]["uid"][:8], "leader": p is leader}
                         for p in group]}


Lister = Callable[..., Any]


def _list(lister: Lister, namespace: str, selector: str) -> tuple[list[Obj], str]:
    listed = observe.raw(lister(namespace, label_selector=selector, _preload_content=False))
    return list(listed["items"]), str(listed["metadata"]["resourceVersion"])


def _watch_loop(lister: Lister, namespace: str, selector: str, kind: str, rec: _Recorder, rv: str,
                stop: threading.Event) -> None:
    """Watch from `rv`; on 410 or any error, relist (replacing the kind's state) and watch again, until `stop`."""
    while not stop.is_set():
        try:
            while not stop.is_set():
                w = watch.Watch()  # type: ignore[no-untyped-call]
                stream = w.stream(lister, namespace, label_selector=selector,  # type: ignore[no-untyped-call]
                                  resource_version=rv, timeout_seconds=1, _request_timeout=5)
                for event in stream:
                    obj = event["raw_object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error: {obj}")
                    rv = obj["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        rec.apply(kind, event["type"], obj)
                    if stop.is_set():
                        w.stop()  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - record, relist and carry on; the test's own waits judge
            rec.tl.errors.append(f"{kind} watch: {type(exc).__name__}: {str(exc)[:200]}")
            if stop.wait(0.2):
                return
            with contextlib.suppress(Exception):
                items, rv = _list(lister, namespace, selector)
                rec.replace(kind, items)


@contextlib.contextmanager
def record_timeline(api: client.ApiClient, namespace: str, name: str, *,
                    path: Path | None = None) -> Iterator[Timeline]:
    """Record group and leader-StatefulSet samples of LWS `name` while the block runs; save to `path` at exit."""
    timeline = Timeline(namespace, name)
    rec = _Recorder(timeline)
    stop = threading.Event()
    selector = f"{NAME}={name}"
    core_api, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    listers = (("statefulsets", apps.list_namespaced_stateful_set), ("pods", core_api.list_namespaced_pod))
    versions = {}
    for kind, lister in listers:  # StatefulSets first: pods are grouped through them
        items, versions[kind] = _list(lister, namespace, selector)
        rec.replace(kind, items, sample=kind == "pods")
    threads = [threading.Thread(target=_watch_loop, name=f"timeline-{kind}", daemon=True,
                                args=(lister, namespace, selector, kind, rec, versions[kind], stop))
               for kind, lister in listers]
    for thread in threads:
        thread.start()
    try:
        yield timeline
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        if path is not None:
            timeline.save(path)


def leader_revision(api: client.ApiClient, namespace: str, name: str) -> str:
    """The revision key the leader StatefulSet currently carries."""
    sts = observe.raw(client.AppsV1Api(api).read_namespaced_stateful_set(name, namespace, _preload_content=False))
    return str((sts["metadata"].get("labels") or {}).get(REVISION, ""))


def rollout_must_complete(api: client.ApiClient, namespace: str, name: str, *, old: set[str], replicas: int,
                          size: int, t: Timeouts) -> str:
    """Every pod on one revision not in `old`, groups 0..replicas-1 ready (no surge left), LWS Available
    with updatedReplicas == readyReplicas == replicas for the current generation. Returns the new key."""
    def check() -> str:
        obj = observe.get_lws(api, namespace, name)
        status = obj.get("status") or {}
        if status.get("observedGeneration") != obj["metadata"].get("generation"):
            raise core.NotYet(f"observedGeneration {status.get('observedGeneration')} != {obj['metadata'].get('generation')}")
        found = lws.groups(api, namespace, name)
        revs = {r for g in found.values() for r in g.revisions()}
        if len(revs) != 1 or revs & old:
            raise core.NotYet(f"pods on revisions {sorted(revs)} (old: {sorted(old)})")
        if sorted(found) != list(range(replicas)):
            raise core.NotYet(f"groups {sorted(found)}, want 0..{replicas - 1}")
        for index, group in found.items():
            if len(group.pods) != size or not group.ready:
                raise core.NotYet(f"group {index}: {len(group.pods)}/{size} pods, ready={group.ready}")
        counts = (status.get("updatedReplicas"), status.get("readyReplicas"))
        if counts != (replicas, replicas) or lws.condition(obj, "Available") != "True":
            raise core.NotYet(f"status updated/ready {counts}, Available={lws.condition(obj, 'Available')}")
        return revs.pop()
    return core.wait_until(check, what=f"the rollout of {namespace}/{name} to complete", timeout=t.rollout_complete,
                           poll=t.poll_interval, describe=lambda: observe.describe_namespace(api, namespace, name))
