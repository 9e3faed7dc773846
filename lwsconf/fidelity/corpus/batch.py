"""batch/v1 Jobs and CronJobs: the API's defaults, generated selector and validation, and one Job run by the
Job controller to Complete. As in `controllers`, no kubelet runs: the Job's pod stays unscheduled and the
scenario writes its status (Succeeded) through the status subresource. The Job's uid is saved, so the
generated selector and controller-uid labels compare as `${job}`; the generated pod name is saved too."""

from __future__ import annotations

from typing import Any

from lwsconf.fidelity.corpus._build import NS, create, get, meta, patch, pod_spec
from lwsconf.fidelity.model import MERGE, STRATEGIC, Scenario, Step, Until

BATCH = f"/apis/batch/v1/namespaces/{NS}"
JOBS = f"{BATCH}/jobs"
CRONJOBS = f"{BATCH}/cronjobs"
PODS = f"/api/v1/namespaces/{NS}/pods"


def job(name: str, restart: str = "Never", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name),
            "spec": {"template": {"spec": pod_spec(restartPolicy=restart)}, **spec}}


def cronjob(name: str, schedule: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta(name),
            "spec": {"schedule": schedule, "jobTemplate": {"spec": job(name)["spec"]}}}


API = Scenario("batch", "batch-api", (
    create("create-job", JOBS, job("pi", completions=2, parallelism=2), save={"job": "metadata.uid"}),
    get("get-job", f"{JOBS}/pi"),
    create("restart-always-refused", JOBS, job("bad", restart="Always")),
    create("negative-parallelism-refused", JOBS, job("neg", parallelism=-1)),
    patch("template-immutable", f"{JOBS}/pi", {"spec": {"template": {"metadata": {"labels": {"x": "y"}}}}},
          STRATEGIC),
    patch("parallelism-mutable", f"{JOBS}/pi", {"spec": {"parallelism": 1}}, MERGE),
    create("create-cronjob", CRONJOBS, cronjob("tick", "*/5 * * * *")),
    get("get-cronjob", f"{CRONJOBS}/tick"),
    create("bad-schedule-refused", CRONJOBS, cronjob("bad", "61 * * * *")),
    # robfig/cron's ParseStandard also reads `@every <duration>`; TZ= prefixes go to spec.timeZone
    create("every-schedule", CRONJOBS, cronjob("every", "@every 90s")),
    create("every-bad-duration", CRONJOBS, cronjob("every-bad", "@every ninety")),
    create("every-zero", CRONJOBS, cronjob("every-zero", "@every 0s")),
    create("tz-prefix-refused", CRONJOBS, cronjob("tz", "TZ=UTC 0 * * * *")),
    create("unknown-descriptor", CRONJOBS, cronjob("descr", "@fortnightly")),
))

_SUCCEEDED = {"status": {"phase": "Succeeded", "containerStatuses": [{
    "name": "main", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "2026-01-01T00:00:00Z",
                             "finishedAt": "2026-01-01T00:00:01Z"}}}]}}

_VERDICT = "status.conditions.0.message"
"""The scheduler's Unschedulable message counts the nodes other scenarios of the run registered (and why each
refused), which is no part of what this scenario checks: dropped on both sides."""

RUN = Scenario("batch", "ctl-job", (
    create("create-job", JOBS, job("once"), save={"job": "metadata.uid"}),
    Step("pod-created", "GET", PODS, query={"labelSelector": "job-name=once"},
         until=Until("body.items.0.status.conditions.0.type", "PodScheduled", 90.0),
         save={"pod": "items.0.metadata.name"}, vary=(f"body.items.0.{_VERDICT}",)),
    patch("pod-succeeded", f"{PODS}/${{pod}}/status", _SUCCEEDED, STRATEGIC, vary=(f"body.{_VERDICT}",)),
    # startTime and completionTime are read from the Job controller's clock, at moments of its choosing
    Step("job-complete", "GET", f"{JOBS}/once", until=Until("body.status.conditions.1.type", "Complete", 90.0),
         vary=("body.status.startTime", "body.status.completionTime")),
), controllers=True)

_FAILED = {"status": {"phase": "Failed", "containerStatuses": [{
    "name": "main", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
    "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z",
                             "finishedAt": "2026-01-01T00:00:01Z"}}}]}}
_INDEX = "batch.kubernetes.io/job-completion-index"


def _index_pod(step: str, index: int, name: str) -> Step:
    """The index's pod the controller created and that is still pending (a failed one is no longer)."""
    return Step(step, "GET", PODS,
                query={"labelSelector": f"job-name=pix,{_INDEX}={index}", "fieldSelector": "status.phase=Pending"},
                until=Until("body.items.0.status.conditions.0.type", "PodScheduled", 90.0),
                save={name: "items.0.metadata.name"}, vary=(f"body.items.0.{_VERDICT}",))


# backoffLimitPerIndex (GA in 1.33): each index has its own failure budget, counted on the pods in the
# job-index-failure-count annotation; an index over it is failed (status.failedIndexes) and not retried, and
# the Job fails once every index is finished; the Job-wide backoffLimit defaults to the maximum
PER_INDEX = Scenario("batch", "ctl-job-per-index", (
    create("create-job", JOBS, job("pix", completionMode="Indexed", completions=2, parallelism=2,
                                   backoffLimitPerIndex=1, maxFailedIndexes=1), save={"job": "metadata.uid"}),
    _index_pod("index-0-pod", 0, "first"),
    patch("index-0-fails", f"{PODS}/${{first}}/status", _FAILED, STRATEGIC, vary=(f"body.{_VERDICT}",)),
    _index_pod("index-0-retried", 0, "second"),
    patch("index-0-fails-again", f"{PODS}/${{second}}/status", _FAILED, STRATEGIC, vary=(f"body.{_VERDICT}",)),
    # both failures counted: kube-controller-manager passes through status.uncountedTerminatedPods first, which
    # the sim does not (job_sync.py's departure), so the step waits for the count
    Step("index-0-failed", "GET", f"{JOBS}/pix", until=Until("body.status.failed", 2, 90.0),
         vary=("body.status.startTime",)),
    _index_pod("index-1-pod", 1, "third"),
    patch("index-1-succeeds", f"{PODS}/${{third}}/status", _SUCCEEDED, STRATEGIC, vary=(f"body.{_VERDICT}",)),
    Step("job-failed", "GET", f"{JOBS}/pix", until=Until("body.status.conditions.1.type", "Failed", 90.0),
         vary=("body.status.startTime",)),
    create("per-index-needs-indexed", JOBS, job("nix", backoffLimitPerIndex=1)),
    create("max-failed-over-completions", JOBS, job("mix", completionMode="Indexed", completions=2,
                                                   backoffLimitPerIndex=1, maxFailedIndexes=3)),
    create("max-failed-needs-per-index", JOBS, job("mnx", completionMode="Indexed", completions=2,
                                                   maxFailedIndexes=1)),
), controllers=True)

SCENARIOS: tuple[Scenario, ...] = (API, RUN, PER_INDEX)
