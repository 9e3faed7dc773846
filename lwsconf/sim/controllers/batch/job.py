"""The Job controller (batch/v1): runs a Job's pods to completion, as kube-controller-manager's does.

The decisions are `job_sync.decide` (pure); this module is the I/O around them, in the Deployment
controller's shape: informers on Jobs and pods, pods indexed by their Job controller reference, a work
queue, expectations so a stale cache never creates twice. Pods are created from the template with
`generateName: <job>-` and a controller reference to the Job (controller and blockOwnerDeletion true), so
deleting a Job cascades through the garbage collector. Events as kube-controller-manager records them on
the Job: `SuccessfulCreate` "Created pod: NAME", `SuccessfulDelete` "Deleted pod: NAME", `Completed`
"Job completed", Warning `BackoffLimitExceeded` / `DeadlineExceeded`, `Suspended`/`Resumed`. A finished
Job with `ttlSecondsAfterFinished` is deleted (propagation Foreground) when its time is up, which upstream's
separate TTL-after-finished controller does.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.sim.controllers.batch import job_sync as sync
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl

log = logging.getLogger(__name__)

Obj = sync.Obj
COMPONENT = "job-controller"
JOBS = kc.GVR("batch", "v1", "jobs")


class JobController:
    """Keeps each Job's pods and status.

    Args:
        client: an API client for this controller alone.
        workers: Jobs synced concurrently.
        expectation_ttl: seconds after which unobserved creations/deletions stop blocking a pass.
        backoff_base: seconds before the first failed pod is replaced (doubling per failure, as upstream).
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 2, expectation_ttl: float = 60.0,
                 backoff_base: float = sync.BACKOFF_BASE) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="Job", api_version="batch/v1")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="job")
        self.expectations = tracking.Expectations(expectation_ttl)
        self.jobs = shared.informer(informers, client, JOBS)
        self.jobs.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.pods = shared.informer(informers, client, wl.PODS)
        self.pod_index = wl.OwnerIndex("Job", self._on_owned)
        self.pods.add_handler(self.pod_index)
        self.backoff_base = backoff_base
        self._tallies: dict[str, sync.Tally] = {}
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Jobs until `stop` is set."""
        await wl.run_controller(stop, name="job", informers=[self.jobs, self.pods], queue=self.queue,
                                reconcile=self._reconcile, workers=self._workers, recorder=self.recorder)

    def _on_owned(self, key: wl.Key, event_type: str, obj: Obj, old: Obj | None) -> None:
        self.expectations.observe(key, event_type, obj, old)
        self.queue.add(key)

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.jobs.get(key[1], key[0])
        if cached is None or wl.is_terminating(cached):
            # upstream's orphan clean-up: the pods of a Job that is gone (or going) lose the tracking finalizer,
            # so the garbage collector (and a Foreground deletion of the Job) can remove them
            await self._release([p for p in self.pods.list(key[0]) if _job_ref_name(p) == key[1]])
            if cached is None:
                self.expectations.forget(key)
            return None
        job = copy.deepcopy(cached)
        uid = str(wl.meta(job)["uid"])
        owned = (self.pods.get(name, ns) for ns, name in self.pod_index.owned(uid))
        pods = [copy.deepcopy(p) for p in owned if p is not None]
        tally = self._tallies.get(uid)
        if tally is None:
            tally = self._tallies[uid] = sync.Tally.seed(job, pods)
        decision = sync.decide(job, pods, tally, time.time(), wl.now_rfc3339(), self.backoff_base)
        if decision.delete_job:
            await self._delete_job(job)
            self._tallies.pop(uid, None)
            return None
        if self.expectations.satisfied(key):
            await self._apply(key, job, decision)
        if _changed(job.get("status") or {}, decision.status):
            written = await wl.write_status(self.client, JOBS, job, decision.status)
            if written is None:
                return None
        for event_type, reason, message in decision.events:
            self.recorder.event(job, event_type, reason, message)
        # counted in the status just written (or being deleted): the finalizer has done its job
        await self._release([p for p in pods if wl.phase(p) in ("Succeeded", "Failed") or wl.is_terminating(p)])
        return decision.recheck_after

    async def _release(self, pods: list[Obj]) -> None:
        """Remove the job-tracking finalizer from these pods (those that carry it)."""
        for pod in pods:
            m = wl.meta(pod)
            finalizers = list(m.get("finalizers") or ())
            if sync.TRACKING_FINALIZER not in finalizers:
                continue
            # a JSON patch guarded by the list it read, as upstream's removeTrackingFinalizerPatch is
            index = finalizers.index(sync.TRACKING_FINALIZER)
            body = [{"op": "test", "path": f"/metadata/finalizers/{index}", "value": sync.TRACKING_FINALIZER},
                    {"op": "remove", "path": f"/metadata/finalizers/{index}"}]
            try:
                await self.client.patch(wl.PODS, m["name"], body, namespace=m["namespace"], patch_type="json")
            except errors.ApiError as exc:
                if not (exc.is_not_found or exc.is_conflict or exc.status == 422):
                    raise

    async def _apply(self, key: wl.Key, job: Obj, decision: sync.Decision) -> None:
        if decision.create:
            self.expectations.expect(key, adds=decision.create)
            indexes: list[int | None] = [*decision.create_indexes] or [None] * decision.create
            results = await asyncio.gather(*(self._create(key, job, i,
                                                          decision.create_annotations.get(i) if i is not None else None)
                                             for i in indexes), return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                raise failures[0]
        if decision.delete:
            self.expectations.expect(key, delete_uids=[str(wl.meta(p)["uid"]) for p in decision.delete])
            for pod in decision.delete:
                if not await wl.delete_pod(self.client, pod):
                    self.expectations.deletion_observed(key, str(wl.meta(pod)["uid"]))
                    continue
                self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {wl.meta(pod)['name']}")

    async def _create(self, key: wl.Key, job: Obj, index: int | None = None,
                      annotations: dict[str, str] | None = None) -> None:
        template = (job.get("spec") or {}).get("template") or {}
        pod = wl.pod_from_template(template, job, "Job")
        pod["metadata"]["ownerReferences"] = [wl.new_controller_ref(job, "batch/v1", "Job")]
        if index is not None:
            _set_index(pod, str(wl.meta(job)["name"]), index)
            pod["metadata"]["annotations"].update(annotations or {})
        pod["metadata"]["finalizers"] = [*pod["metadata"].get("finalizers", []), sync.TRACKING_FINALIZER]
        try:
            created = await self.client.create(wl.PODS, pod)
        except errors.ApiError as exc:
            self.expectations.creation_observed(key)
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {exc}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {wl.meta(created)['name']}")

    async def _delete_job(self, job: Obj) -> None:
        m = wl.meta(job)
        try:
            await self.client.delete(JOBS, m["name"], namespace=m["namespace"], propagation_policy="Foreground",
                                     preconditions={"uid": m["uid"]})
        except errors.ApiError as exc:
            if not (exc.is_not_found or exc.is_conflict):
                raise


def _changed(old: Obj, new: Obj) -> bool:
    return old != new


def _set_index(pod: Obj, job_name: str, index: int) -> None:
    """An Indexed Job's pod (pkg/controller/job/indexed_job_utils.go `addCompletionIndexEnvVariables` and
    friends): named `<job>-<index>-`, the index as annotation and label, hostname `<job>-<index>`, and
    JOB_COMPLETION_INDEX in every container from the label through the downward API (as 1.37.2 writes it:
    lwsconf fidelity batch/ctl-job-per-index)."""
    m = pod["metadata"]
    m["generateName"] = f"{job_name}-{index}-"
    m.setdefault("annotations", {})[sync.INDEX_KEY] = str(index)
    m["labels"][sync.INDEX_KEY] = str(index)
    spec = pod["spec"]
    spec.setdefault("hostname", f"{job_name}-{index}")
    env = {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.labels['{sync.INDEX_KEY}']"}}}
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in container.get("env") or []):
                container["env"] = [*(container.get("env") or []), dict(env)]


def _job_ref_name(pod: Obj) -> str | None:
    ref = wl.controller_ref(pod)
    return str(ref.get("name")) if ref is not None and ref.get("kind") == "Job" else None
