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

SCENARIOS: tuple[Scenario, ...] = (API, RUN)
