"""What the Job controller decides for one Job from its pods: the pure core of `controllers/job.py`.

Follows kube-controller-manager's `pkg/controller/job/job_controller.go` (`syncJob`, `manageJob`) as 1.37
runs it with its default feature gates:

* active pods are created until `parallelism` run at once and, with `completions`, no more than the
  completions still missing (`completions - succeeded`); without `completions` (a work queue) none is
  created once one pod succeeded. With podReplacementPolicy TerminatingOrFailed a pod being deleted still
  holds its place until it is gone;
* a failed pod is replaced after an exponential back-off (10 s, 20 s, 40 s... capped at 6 minutes,
  `DefaultJobPodFailureBackOff`/`MaxJobPodFailureBackOff`) counted from the last failure;
* more failures than `backoffLimit` (with restartPolicy OnFailure, container restarts of active pods count
  too) make the Job fail: the `FailureTarget` condition (reason `BackoffLimitExceeded`, "Job has reached
  the specified backoff limit"), active pods deleted, then `Failed` with the same reason once no pod is
  left running or terminating (1.37 delays terminal conditions that way, `delayTerminalCondition`);
  `activeDeadlineSeconds` past `startTime` does the same with reason `DeadlineExceeded`;
* reaching `completions` adds `SuccessCriteriaMet` (reason `CompletionsReached`, "Reached expected number
  of succeeded pods"), deletes what still runs, then `Complete` with `completionTime`;
* `podFailurePolicy` rules (onExitCodes, onPodConditions) judge each newly failed pod: FailJob fails the Job
  (reason `PodFailurePolicy`), Ignore leaves the pod out of the failure count, Count counts it;
* `suspend: true` deletes active pods and sets `Suspended` (JobSuspended); resuming sets it False
  (JobResumed) and restarts the clock (`startTime`);
* status carries `active`, `ready`, `terminating`, `succeeded`, `failed`, `startTime`,
  `uncountedTerminatedPods: {}` as 1.37 writes them (zero counts omitted, as `omitempty` does).

Pods carry the `batch.kubernetes.io/job-tracking` finalizer as upstream's do, removed (by `controllers/job.py`)
once the status that counts them is written, when they are being deleted, or when their Job is gone.
**Departure**: upstream records finished pods in `status.uncountedTerminatedPods` before removing the
finalizer, so a count survives a controller restart between the two writes; the sim keeps the uids it
counted in memory (`Tally`), seeded from the stored counts, and a pod deleted before reaching a terminal
phase is not counted as failed. Indexed completion mode runs one pod per missing index (see
`completion_index`, `status.completedIndexes`), with per-index back-off limits and FailIndex in `job_indexes`.
No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.controllers.batch import job_indexes as ix
from lwsconf.sim.controllers.batch.job_indexes import (
    INDEX_KEY as INDEX_KEY,
)
from lwsconf.sim.controllers.batch.job_indexes import (
    completion_index as completion_index,
)
from lwsconf.sim.controllers.batch.job_indexes import (
    format_indexes as format_indexes,
)
from lwsconf.sim.controllers.batch.job_indexes import (
    parse_indexes as parse_indexes,
)
from lwsconf.sim.controllers.common import workloads as wl

Obj = dict[str, Any]
BACKOFF_BASE = 10.0
"""Seconds before the first failed pod is replaced (`DefaultJobPodFailureBackOff`); doubles per failure."""
BACKOFF_MAX = 360.0
"""`MaxJobPodFailureBackOff`: the back-off never exceeds 6 minutes."""

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
"""On each pod the controller creates; removed once the pod is counted in the Job's status, or is being
deleted, or its Job is gone (`batch/v1` `JobTrackingFinalizer`)."""

BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE = "Job was active longer than specified deadline"
COMPLETIONS_MESSAGE = "Reached expected number of succeeded pods"


@dataclass
class Tally:
    """The pods of one Job already counted in its status (by uid), and the counts they add to."""

    base_succeeded: int = 0
    base_failed: int = 0
    succeeded: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)
    """Failed pods a podFailurePolicy `Ignore` rule matched: not counted against backoffLimit."""
    fail_index: set[str] = field(default_factory=set)
    """Failed pods a `FailIndex` rule matched: their index fails whatever its count (backoffLimitPerIndex)."""

    @classmethod
    def seed(cls, job: Obj, pods: list[Obj]) -> Tally:
        """First sight of a Job: counts already in its status are taken to include the finished pods present."""
        status = job.get("status") or {}
        tally = cls(int(status.get("succeeded") or 0), int(status.get("failed") or 0))
        if tally.base_succeeded or tally.base_failed:
            tally.base_succeeded -= sum(1 for p in pods if wl.phase(p) == "Succeeded")
            tally.base_failed -= sum(1 for p in pods if wl.phase(p) == "Failed")
            tally.observe(pods)
        return tally

    def observe(self, pods: list[Obj]) -> None:
        for pod in pods:
            uid = str(wl.meta(pod).get("uid"))
            if wl.phase(pod) == "Succeeded":
                self.succeeded.add(uid)
            elif wl.phase(pod) == "Failed" and uid not in self.ignored:
                self.failed.add(uid)

    @property
    def succeeded_count(self) -> int:
        return max(0, self.base_succeeded + len(self.succeeded))

    @property
    def failed_count(self) -> int:
        return max(0, self.base_failed + len(self.failed))


@dataclass
class Decision:
    """One pass's outcome: pods to create and delete, the status to write, events, when to look again."""

    create: int = 0
    create_indexes: list[int] = field(default_factory=list)
    """For an Indexed Job: the completion index of each pod to create (`create` of them)."""
    create_annotations: dict[int, dict[str, str]] = field(default_factory=dict)
    """Per index to create: the index-failure counts its pod carries (Jobs with backoffLimitPerIndex)."""
    delete: list[Obj] = field(default_factory=list)
    status: Obj = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    recheck_after: float | None = None
    delete_job: bool = False


def has_condition(status: Obj, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in status.get("conditions") or ())


def finished(status: Obj) -> bool:
    return has_condition(status, "Complete") or has_condition(status, "Failed")


def _set_condition(conditions: list[Obj], type_: str, status: str, reason: str, message: str, now: str) -> bool:
    """Add or update a condition (lastProbeTime/lastTransitionTime now); True if anything changed."""
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") == status and cond.get("reason") == reason:
                return False
            cond.update(status=status, reason=reason, message=message, lastProbeTime=now, lastTransitionTime=now)
            return True
    conditions.append({"type": type_, "status": status, "lastProbeTime": now, "lastTransitionTime": now,
                       "reason": reason, "message": message})
    return True


def _restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses if isinstance(s, dict))


def _last_failure(pods: list[Obj]) -> float | None:
    times = []
    for pod in pods:
        if wl.phase(pod) != "Failed":
            continue
        for s in (pod.get("status") or {}).get("containerStatuses") or []:
            t = wl.parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            if t is not None:
                times.append(t)
    return max(times) if times else None


def decide(job: Obj, pods: list[Obj], tally: Tally, now: float, now_text: str,
           backoff_base: float = BACKOFF_BASE) -> Decision:
    """`syncJob` for one Job: what to create, delete and write, given its pods and what was counted.

    An empty `conditions` list is left out of the status, as JobStatus's omitempty does (kube-controller-manager
    writes none before the first condition: lwsconf fidelity batch/ctl-job-per-index)."""
    out = _decide(job, pods, tally, now, now_text, backoff_base)
    if not out.status.get("conditions"):
        out.status.pop("conditions", None)
    return out


def _decide(job: Obj, pods: list[Obj], tally: Tally, now: float, now_text: str, backoff_base: float) -> Decision:
    spec, old_status = job.get("spec") or {}, job.get("status") or {}
    status: Obj = {k: v for k, v in old_status.items() if k not in ("active", "ready", "terminating")}
    status["conditions"] = [dict(c) for c in old_status.get("conditions") or ()]
    status.setdefault("uncountedTerminatedPods", {})
    out = Decision(status=status)
    policy_failure = _apply_failure_policy(job, pods, tally)
    tally.observe(pods)
    active = [p for p in pods if wl.is_active(p)]
    terminating = [p for p in pods if wl.is_terminating(p) and wl.phase(p) not in ("Succeeded", "Failed")]
    succeeded, failed = tally.succeeded_count, tally.failed_count
    _counts(status, active, terminating, succeeded, failed)
    indexed = spec.get("completionMode") == "Indexed"
    completed: set[int] = set()
    if indexed:
        completed = parse_indexes(old_status.get("completedIndexes")) | {
            i for p in pods if wl.phase(p) == "Succeeded" and (i := completion_index(p)) is not None}
        completed = {i for i in completed if i < int(spec.get("completions") or 0)}
        if completed:
            status["completedIndexes"] = format_indexes(completed)
        succeeded = len(completed)  # completion is judged on indexes, not pods
    per_index = ix.per_index_limit(job)
    verdicts = ix.PolicyVerdicts(tally.ignored, tally.fail_index)
    failed_indexes: set[int] = set()
    if per_index is not None:
        failed_indexes = ix.failed_indexes(job, pods, verdicts) - completed
        status["failedIndexes"] = format_indexes(failed_indexes)  # "" too: written whenever the limit is set
    if finished(old_status):
        out.delete = active
        _ttl(spec, old_status, now, out)
        return out
    conds = status["conditions"]
    suspended = bool(spec.get("suspend"))
    if suspended:
        if _set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended", now_text):
            out.events.append(("Normal", "Suspended", "Job suspended"))
        out.delete = active
        return out
    if has_condition(old_status, "Suspended"):
        _set_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now_text)
        out.events.append(("Normal", "Resumed", "Job resumed"))
        status["startTime"] = now_text
    status.setdefault("startTime", now_text)
    start = wl.parse_time(status["startTime"]) or now
    terminal = _failure(spec, status, active, failed, start, now)
    if terminal is None and policy_failure is not None:
        terminal = ("FailureTarget", "PodFailurePolicy", policy_failure)
    if terminal is None and per_index is not None:
        terminal = _index_failure(spec, failed_indexes, completed)
    if terminal is None and _complete(spec, succeeded, active):
        terminal = ("SuccessCriteriaMet", "CompletionsReached", COMPLETIONS_MESSAGE)
    if terminal is not None:
        target, reason, message = terminal
        if _set_condition(conds, target, "True", reason, message, now_text) and target == "FailureTarget":
            out.events.append(("Warning", reason, message))
        out.delete = active
        if not active and not terminating:  # 1.37: the terminal condition once no pod runs any more
            if target == "FailureTarget":
                _set_condition(conds, "Failed", "True", reason, message, now_text)
            else:
                _set_condition(conds, "Complete", "True", reason, message, now_text)
                status["completionTime"] = now_text
                out.events.append(("Normal", "Completed", "Job completed"))
            _ttl(spec, status, now, out)
        return out
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None:
        out.recheck_after = max(0.05, start + float(deadline) - now + 0.05)
    out.create = _wanted(spec, succeeded, active, terminating)
    if indexed and out.create:
        held = {completion_index(p) for p in active + terminating}
        missing = [i for i in range(int(spec.get("completions") or 0))
                   if i not in completed and i not in held and i not in failed_indexes]
        if per_index is not None:
            missing = _due_indexes(missing, pods, verdicts, now, backoff_base, out)
        out.create_indexes = missing[:out.create]
        out.create = len(out.create_indexes)
    if out.create and failed and per_index is None:  # with per-index limits each index waits on its own
        last = _last_failure(pods)
        if last is not None:
            wait = last + min(backoff_base * 2 ** (failed - 1), BACKOFF_MAX) - now
            if wait > 0:
                out.create = 0
                out.recheck_after = min(wait + 0.05, out.recheck_after or wait + 0.05)
    return out


def _index_failure(spec: Obj, failed_indexes: set[int], completed: set[int]) -> tuple[str, str, str] | None:
    """The Job's end by its indexes (job_controller.go, `hasBackoffLimitPerIndex`): too many failed, or all done."""
    max_failed = spec.get("maxFailedIndexes")
    if isinstance(max_failed, int) and len(failed_indexes) > max_failed:
        return ("FailureTarget", "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes")
    if failed_indexes and len(failed_indexes) + len(completed) >= int(spec.get("completions") or 0):
        return ("FailureTarget", "FailedIndexes", "Job has failed indexes")
    return None


def _due_indexes(missing: list[int], pods: list[Obj], verdicts: ix.PolicyVerdicts, now: float, base: float,
                 out: Decision) -> list[int]:
    """The missing indexes whose retry back-off is over (the others are looked at again when theirs ends), each
    with the failure counts its new pod carries."""
    due = []
    for index in missing:
        replaced = ix.last_failed(pods, index)
        wait = ix.retry_wait(replaced, now, base, BACKOFF_MAX)
        if wait > 0:
            out.recheck_after = min(wait + 0.05, out.recheck_after or wait + 0.05)
            continue
        due.append(index)
        out.create_annotations[index] = ix.replacement_annotations(replaced, verdicts)
    return due


def _apply_failure_policy(job: Obj, pods: list[Obj], tally: Tally) -> str | None:
    """`podFailurePolicy` on failed pods not seen before: the first matching rule decides (`matchPodFailurePolicy`
    in pkg/controller/job/pod_failure_policy.go). Ignore: the pod is not counted; FailJob: the message of the
    Job's failure, returned; FailIndex: counted, and its index fails (`job_indexes`); Count (or no match):
    counted as usual."""
    rules = ((job.get("spec") or {}).get("podFailurePolicy") or {}).get("rules") or []
    failing: str | None = None
    for pod in pods:
        uid = str(wl.meta(pod).get("uid"))
        if wl.phase(pod) != "Failed" or uid in tally.failed or uid in tally.ignored:
            continue
        for index, rule in enumerate(rules):
            why = _rule_matches(rule, pod)
            if why is None:
                continue
            action = rule.get("action")
            if action == "Ignore":
                tally.ignored.add(uid)
            elif action == "FailIndex":
                tally.fail_index.add(uid)
            elif action == "FailJob" and failing is None:
                failing = f"{why} matching FailJob rule at index {index}"
            break
    return failing


def _rule_matches(rule: Obj, pod: Obj) -> str | None:
    """Why `rule` matches the failed `pod` (the start of upstream's message), or None."""
    m = wl.meta(pod)
    on_codes = rule.get("onExitCodes")
    if isinstance(on_codes, dict):
        values = set(on_codes.get("values") or ())
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if on_codes.get("containerName") not in (None, status.get("name")):
                continue
            code = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
            if code in (None, 0):  # containers that succeeded are left out of the check
                continue
            if (code in values) == (on_codes.get("operator") == "In"):
                return (f"Container {status.get('name')} for pod {m.get('namespace')}/{m.get('name')} failed with "
                        f"exit code {code}")
        return None
    for pattern in rule.get("onPodConditions") or ():
        for cond in (pod.get("status") or {}).get("conditions") or ():
            if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get("status", "True"):
                return f"Pod {m.get('namespace')}/{m.get('name')} has condition {cond.get('type')}"
    return None


def _counts(status: Obj, active: list[Obj], terminating: list[Obj], succeeded: int, failed: int) -> None:
    status["ready"] = sum(1 for p in active if wl.is_ready(p))
    status["terminating"] = len(terminating)
    for key, value in (("active", len(active)), ("succeeded", succeeded), ("failed", failed)):
        if value:
            status[key] = value
        else:
            status.pop(key, None)


def _failure(spec: Obj, status: Obj, active: list[Obj], failed: int, start: float,
             now: float) -> tuple[str, str, str] | None:
    if has_condition(status, "FailureTarget"):
        cond = next(c for c in status["conditions"] if c.get("type") == "FailureTarget")
        return "FailureTarget", str(cond.get("reason")), str(cond.get("message"))
    restart_policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    failures = failed + (sum(_restarts(p) for p in active) if restart_policy == "OnFailure" else 0)
    if failures > int(spec.get("backoffLimit", 6)):
        return "FailureTarget", "BackoffLimitExceeded", BACKOFF_MESSAGE
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and now - start >= float(deadline):
        return "FailureTarget", "DeadlineExceeded", DEADLINE_MESSAGE
    return None


def _complete(spec: Obj, succeeded: int, active: list[Obj]) -> bool:
    completions = spec.get("completions")
    if completions is not None:
        return succeeded >= int(completions)
    return succeeded > 0 and not active  # a work queue: done once one succeeded and the rest finished


def _wanted(spec: Obj, succeeded: int, active: list[Obj], terminating: list[Obj]) -> int:
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    if completions is None:
        target = 0 if succeeded else parallelism
    else:
        target = min(parallelism, int(completions) - succeeded)
    held = len(active) + (len(terminating) if spec.get("podReplacementPolicy") != "Failed" else 0)
    return max(0, target - held)


def _ttl(spec: Obj, status: Obj, now: float, out: Decision) -> None:
    """The TTL-after-finished controller's part: delete the Job `ttlSecondsAfterFinished` after it finished."""
    ttl = spec.get("ttlSecondsAfterFinished")
    if ttl is None:
        return
    times = [wl.parse_time(c.get("lastTransitionTime")) for c in status.get("conditions") or ()
             if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"]
    done = max((t for t in times if t is not None), default=None)
    if done is None:
        return
    left = done + float(ttl) - now
    if left <= 0:
        out.delete_job = True
    else:
        out.recheck_after = left + 0.05
