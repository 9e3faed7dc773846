"""Taint-based eviction: delete pods that do not tolerate their node's NoExecute taints, in time.

kube-controller-manager's taint-eviction-controller (pkg/controller/tainteviction/taint_eviction.go,
run by the node lifecycle controller before v1.29 and as its own controller since): for every pod
bound to a node with NoExecute taints,

* if some NoExecute taint is tolerated by none of the pod's tolerations, the pod is deleted at once;
* otherwise the first toleration matching each taint is "used" (`GetMatchingTolerations`), and the
  pod is deleted `min(tolerationSeconds)` of those after the controller first saw it there
  (`getMinTolerationTime`: a toleration without tolerationSeconds tolerates forever, <= 0 means now;
  an eviction already scheduled keeps its time);
* a scheduled eviction is cancelled when the taints go or the pod stops needing one.

Deleting is what `addConditionAndDeletePod` does: a `DisruptionTarget` condition (reason
DeletionByTaintManager) on the pod status, then a normal graceful DELETE, with the Events
"Marking for deletion Pod ns/name" and "Cancelling deletion of Pod ns/name" (reason
TaintManagerEviction). Pods get not-ready/unreachable NoExecute tolerations of 300 s from the API
server's DefaultTolerationSeconds admission unless they bring their own, so a test can use a short
`tolerationSeconds`. A pod already being deleted is left alone.

`TaintEviction` is driven by `nodelifecycle.NodeLifecycleController`, which calls `sync` on each pass.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.scheduler import filters as sf

log = logging.getLogger(__name__)
Obj = dict[str, Any]
REASON = "TaintManagerEviction"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def no_execute_taints(node: Obj) -> list[Obj]:
    return [t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]


def matching_tolerations(taints: list[Obj], tolerations: list[Obj]) -> tuple[bool, list[Obj]]:
    """(every taint tolerated, the first toleration matching each taint) - `GetMatchingTolerations`."""
    used: list[Obj] = []
    for taint in taints:
        match = next((t for t in tolerations if sf.tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(used: list[Obj]) -> float | None:
    """The shortest tolerationSeconds among `used` (<= 0 counts as 0); None: tolerated forever."""
    if not used:
        return 0.0
    bounded = [float(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not bounded:
        return None
    return max(0.0, min(bounded))


def eviction_delay(pod: Obj, taints: list[Obj]) -> float | None:
    """Seconds until `pod` must go from a node with these NoExecute `taints`; None: never."""
    if not taints:
        return None
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or () if isinstance(t, dict)]
    tolerated, used = matching_tolerations(taints, tolerations)
    if not tolerated:
        return 0.0
    return min_toleration_seconds(used)


@dataclass
class _Scheduled:
    namespace: str
    name: str
    fire_at: float


class TaintEviction:
    """Schedules, cancels and carries out taint-based evictions; `sync` is called on every pass."""

    def __init__(self, client: kc.Client, recorder: tracking.EventRecorder) -> None:
        self.client = client
        self.recorder = recorder
        self.scheduled: dict[str, _Scheduled] = {}
        """Pending evictions by pod uid."""

    async def sync(self, nodes: Iterable[Obj], pods_by_node: Mapping[str, list[Obj]], now: float) -> None:
        """Bring the schedule in line with the current taints and pods, then evict the pods that are due."""
        wanted: dict[str, Obj] = {}
        for node in nodes:
            taints = no_execute_taints(node)
            for pod in pods_by_node.get((node.get("metadata") or {}).get("name", ""), ()) if taints else ():
                meta = pod.get("metadata") or {}
                if meta.get("deletionTimestamp"):
                    continue
                delay = eviction_delay(pod, taints)
                if delay is None:
                    continue
                uid = str(meta.get("uid"))
                wanted[uid] = pod
                if uid not in self.scheduled:
                    self.scheduled[uid] = _Scheduled(meta.get("namespace", ""), meta.get("name", ""), now + delay)
        for uid in [u for u in self.scheduled if u not in wanted]:
            self._cancel(uid)
        for uid, entry in list(self.scheduled.items()):
            if entry.fire_at <= now and await self._evict(uid, entry):
                del self.scheduled[uid]

    def _cancel(self, uid: str) -> None:
        entry = self.scheduled.pop(uid)
        self.recorder.event(_pod_ref(entry, uid), "Normal", REASON,
                            f"Cancelling deletion of Pod {entry.namespace}/{entry.name}")

    async def _evict(self, uid: str, entry: _Scheduled) -> bool:
        """Mark the pod a disruption target and delete it gracefully; False: try again next pass."""
        log.info("taint eviction: deleting pod %s/%s", entry.namespace, entry.name)
        self.recorder.event(_pod_ref(entry, uid), "Normal", REASON,
                            f"Marking for deletion Pod {entry.namespace}/{entry.name}")
        try:
            pod = await self.client.get(kc.PODS, entry.name, namespace=entry.namespace)
            if (pod.get("metadata") or {}).get("uid") != uid:
                return True  # gone, or another pod of that name now
            await _add_disruption_target(self.client, pod)
            await self.client.delete(kc.PODS, entry.name, namespace=entry.namespace, preconditions={"uid": uid})
        except errors.ApiError as exc:
            if exc.is_not_found:
                return True
            log.info("taint eviction of %s/%s failed: %s; retrying", entry.namespace, entry.name, exc)
            return False
        except errors.TransportError as exc:
            log.info("taint eviction of %s/%s failed: %s; retrying", entry.namespace, entry.name, exc)
            return False
        return True


async def _add_disruption_target(client: kc.Client, pod: Obj) -> None:
    """The DisruptionTarget condition on the pod status (a PUT with its resourceVersion)."""
    status = pod.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    if any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions):
        return
    conditions[:] = [c for c in conditions if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": DISRUPTION_REASON,
                       "message": DISRUPTION_MESSAGE, "lastTransitionTime": now_rfc3339()})
    await client.replace(kc.PODS, pod, subresource="status")


def _pod_ref(entry: _Scheduled, uid: str) -> Obj:
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": entry.name, "namespace": entry.namespace, "uid": uid}}


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
