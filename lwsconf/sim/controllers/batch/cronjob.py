"""The CronJob controller (batch/v1): creates a Job at each time of a CronJob's schedule, as
kube-controller-manager's does (pkg/controller/cronjob/cronjob_controllerv2.go `syncCronJob`, utils.go).

Per CronJob: the most recent schedule time after `status.lastScheduleTime` (else the creation time) that
is not in the future is due, unless `suspend`, or more than `startingDeadlineSeconds` late; the Job is
named `<cronjob>-<scheduled Unix time in minutes>` (so a time is never run twice, `getJobName`), carries
the jobTemplate's labels and annotations plus `batch.kubernetes.io/cronjob-scheduled-timestamp`, and a
controller reference to the CronJob. concurrencyPolicy Forbid skips a time while a Job is active, Replace
deletes the active Jobs first. Finished Jobs leave `status.active` (`lastSuccessfulTime` for a Complete
one) and the oldest beyond `successfulJobsHistoryLimit`/`failedJobsHistoryLimit` are deleted. Events on
the CronJob: `SuccessfulCreate` "Created job NAME", `SawCompletedJob` "Saw completed job: NAME, condition:
Complete", `SuccessfulDelete` "Deleted job NAME", Warning `UnparseableSchedule`/`UnknownTimeZone`.
Schedules are evaluated in `spec.timeZone` (zoneinfo), else UTC (kube-controller-manager's local zone on
the sim's machine is taken to be UTC). The schedule arithmetic (`due_time`, `job_name`) is pure.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lwsconf import kubeclient
from lwsconf.kubeclient import client as kc
from lwsconf.kubeclient import errors, shared
from lwsconf.sim import cron
from lwsconf.sim.controllers.batch import job_sync
from lwsconf.sim.controllers.common import workload_tracking as tracking
from lwsconf.sim.controllers.common import workloads as wl

log = logging.getLogger(__name__)

Obj = job_sync.Obj
COMPONENT = "cronjob-controller"
CRONJOBS = kc.GVR("batch", "v1", "cronjobs")
JOBS = kc.GVR("batch", "v1", "jobs")
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
MAX_MISSED = 100
"""Schedule times walked through at most when looking for the most recent due one (upstream warns beyond 100)."""


def zone_of(cronjob: Obj) -> tzinfo:
    name = (cronjob.get("spec") or {}).get("timeZone")
    return ZoneInfo(name) if name else UTC


def due_time(schedule: cron.Schedule, since: datetime, now: datetime) -> datetime | None:
    """The most recent schedule time in (since, now], or None: `mostRecentScheduleTime`."""
    last, t = None, since
    for _ in range(MAX_MISSED * 1000):
        nxt = schedule.next_after(t)
        if nxt is None or nxt > now:
            return last
        last, t = nxt, nxt
    return last


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """`getJobName`: the name plus the scheduled time in minutes since the epoch."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def _naive_in(zone: tzinfo, t: datetime) -> datetime:
    return t.astimezone(zone).replace(tzinfo=None)


class CronJobController:
    """Creates each CronJob's Jobs on schedule and keeps its status.

    Args:
        client: an API client for this controller alone.
        workers: CronJobs synced concurrently.
    """

    def __init__(self, client: kc.Client, *, informers: kubeclient.SharedInformers | None = None,
                 workers: int = 1) -> None:
        self.client = client
        self.recorder = tracking.EventRecorder(client, COMPONENT, kind="CronJob", api_version="batch/v1")
        self.queue: kubeclient.WorkQueue[wl.Key] = kubeclient.WorkQueue(name="cronjob")
        self.cronjobs = shared.informer(informers, client, CRONJOBS)
        self.cronjobs.add_handler(lambda et, obj, old: self.queue.add(wl.key_of(obj)))
        self.jobs = shared.informer(informers, client, JOBS)
        self.job_index = wl.OwnerIndex("CronJob", lambda key, et, obj, old: self.queue.add(key))
        self.jobs.add_handler(self.job_index)
        self._workers = workers

    async def run(self, stop: asyncio.Event) -> None:
        """Sync CronJobs until `stop` is set."""
        await wl.run_controller(stop, name="cronjob", informers=[self.cronjobs, self.jobs], queue=self.queue,
                                reconcile=self._reconcile, workers=self._workers, recorder=self.recorder)

    async def _reconcile(self, key: wl.Key) -> float | None:
        cached = self.cronjobs.get(key[1], key[0])
        if cached is None or wl.is_terminating(cached):
            return None
        cj = copy.deepcopy(cached)
        spec, old_status = cj.get("spec") or {}, cj.get("status") or {}
        status: Obj = copy.deepcopy(old_status)
        owned = [j for ns, name in self.job_index.owned(str(wl.meta(cj)["uid"]))
                 if (j := self.jobs.get(name, ns)) is not None]
        active, finished = self._track(cj, owned, status)
        await self._trim_history(cj, spec, finished)
        recheck = await self._schedule(cj, spec, status, active)
        if status != old_status:
            await wl.write_status(self.client, CRONJOBS, cj, status)
        return recheck

    def _track(self, cj: Obj, owned: list[Obj], status: Obj) -> tuple[list[Obj], list[Obj]]:
        active = [j for j in owned if not job_sync.finished(j.get("status") or {})]
        finished = [j for j in owned if job_sync.finished(j.get("status") or {})]
        was_active = {ref.get("uid") for ref in status.get("active") or ()}
        for job in finished:
            if wl.meta(job).get("uid") in was_active:
                complete = job_sync.has_condition(job.get("status") or {}, "Complete")
                self.recorder.event(cj, "Normal", "SawCompletedJob", f"Saw completed job: {wl.meta(job)['name']}, "
                                    f"condition: {'Complete' if complete else 'Failed'}")
                if complete and (job.get("status") or {}).get("completionTime"):
                    status["lastSuccessfulTime"] = job["status"]["completionTime"]
        kept = {ref.get("uid"): ref for ref in status.get("active") or ()}  # the reference taken at creation
        refs = [kept.get(wl.meta(j).get("uid")) or _reference(j)
                for j in sorted(active, key=lambda j: str(wl.meta(j).get("name")))]
        if refs:
            status["active"] = refs
        else:
            status.pop("active", None)
        return active, finished

    async def _trim_history(self, cj: Obj, spec: Obj, finished: list[Obj]) -> None:
        for condition, limit_field in (("Complete", "successfulJobsHistoryLimit"),
                                       ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(limit_field)
            if limit is None:
                continue
            jobs = sorted((j for j in finished if job_sync.has_condition(j.get("status") or {}, condition)),
                          key=lambda j: str(wl.meta(j).get("creationTimestamp")))
            for job in jobs[:max(0, len(jobs) - int(limit))]:
                await self._delete_job(cj, job)

    async def _schedule(self, cj: Obj, spec: Obj, status: Obj, active: list[Obj]) -> float | None:
        try:
            schedule = cron.parse(str(spec.get("schedule", "")))
            zone = zone_of(cj)
        except cron.ScheduleError as exc:
            self.recorder.event(cj, "Warning", "UnparseableSchedule", f"unparseable schedule: {exc}")
            return None
        except (ZoneInfoNotFoundError, ValueError) as exc:
            self.recorder.event(cj, "Warning", "UnknownTimeZone", f"invalid timeZone: {exc}")
            return None
        now = datetime.now(UTC)
        since = wl.parse_time(status.get("lastScheduleTime")) or wl.parse_time(wl.meta(cj).get("creationTimestamp"))
        since_dt = datetime.fromtimestamp(since or now.timestamp(), UTC)
        naive_due = due_time(schedule, _naive_in(zone, since_dt), _naive_in(zone, now))
        naive_next = schedule.next_after(_naive_in(zone, now))
        recheck = None
        if naive_next is not None:
            recheck = max(0.1, naive_next.replace(tzinfo=zone).timestamp() - now.timestamp() + 0.1)
        if naive_due is None or spec.get("suspend"):
            return recheck
        scheduled = naive_due.replace(tzinfo=zone)
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and now.timestamp() - scheduled.timestamp() > float(deadline):
            return recheck  # missed its starting window: upstream skips it too
        policy = spec.get("concurrencyPolicy", "Allow")
        if active and policy == "Forbid":
            return recheck  # looked at again when the active Job finishes (its events requeue)
        if active and policy == "Replace":
            for job in active:
                await self._delete_job(cj, job)
        created = await self._create_job(cj, spec, scheduled)
        if created is not None:
            status["active"] = [*(status.get("active") or []), _reference(created)]
        status["lastScheduleTime"] = scheduled.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return recheck

    async def _create_job(self, cj: Obj, spec: Obj, scheduled: datetime) -> Obj | None:
        template = copy.deepcopy(spec.get("jobTemplate") or {})
        t_meta = template.get("metadata") or {}
        m = wl.meta(cj)
        annotations = {**(t_meta.get("annotations") or {}), SCHEDULED_ANNOTATION: scheduled.isoformat()}
        job: Obj = {"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": job_name(str(m["name"]), scheduled), "namespace": m["namespace"],
                                 "labels": dict(t_meta.get("labels") or {}), "annotations": annotations,
                                 "ownerReferences": [wl.new_controller_ref(cj, "batch/v1", "CronJob")]},
                    "spec": template.get("spec") or {}}
        try:
            created = await self.client.create(JOBS, job)
        except errors.ApiError as exc:
            if exc.is_already_exists:
                return None  # this time was run already (a stale cache)
            self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {exc}")
            raise
        self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {wl.meta(created)['name']}")
        return created

    async def _delete_job(self, cj: Obj, job: Obj) -> None:
        m = wl.meta(job)
        try:
            await self.client.delete(JOBS, m["name"], namespace=m["namespace"], propagation_policy="Background",
                                     preconditions={"uid": m["uid"]})
        except errors.ApiError as exc:
            if exc.is_not_found or exc.is_conflict:
                return
            raise
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {m['name']}")


def _reference(job: Obj) -> Obj:
    """The ObjectReference `status.active` lists (`ref.GetReference`)."""
    m = wl.meta(job)
    return {"kind": "Job", "namespace": m.get("namespace"), "name": m.get("name"), "uid": m.get("uid"),
            "apiVersion": "batch/v1", "resourceVersion": m.get("resourceVersion")}
