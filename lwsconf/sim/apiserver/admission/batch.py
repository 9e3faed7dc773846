"""batch/v1 Jobs and CronJobs: defaults and validation (the generated selector: `storage.jobs`). Pure: no I/O.

Defaults follow pkg/apis/batch/v1/defaults.go (`SetDefaults_Job`: parallelism 1 and, when neither is set,
completions 1; backoffLimit 6; completionMode NonIndexed; suspend false; podReplacementPolicy
TerminatingOrFailed without a podFailurePolicy, Failed with one; `SetDefaults_CronJob`: concurrencyPolicy
Allow, suspend false, history limits 3 and 1). The selector is the job strategy's `generateSelector`
(pkg/registry/batch/job/strategy.go), run once the object has its uid: unless `manualSelector` is true, the
template gets `batch.kubernetes.io/controller-uid`, `batch.kubernetes.io/job-name` and their legacy twins
`controller-uid` and `job-name` (labels the user already set are kept, and a conflict is then caught by the
selector check), and the selector matches the controller-uid label. A Job without labels of its own shows the
template's (the defaulter copies them when the stored object is read back).

Validation follows pkg/apis/batch/validation: restartPolicy OnFailure or Never, non-negative counts, a
selector that matches the template, Indexed needs completions, and on update an immutable selector,
template, completionMode and (NonIndexed) completions; CronJobs need a schedule the standard cron parser
accepts (`lwsconf.sim.cron`), a known concurrencyPolicy and a name of at most 52 characters (the controller
appends an 11-character suffix to job names).
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim import cron
from lwsconf.sim.apiserver.admission import defaults_pods as pods_defaults
from lwsconf.sim.apiserver.admission.validation import pods
from lwsconf.sim.apiserver.apimachinery import errors, meta
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.storage import jobs

# the Job strategy's names live in storage.jobs; re-exported for defaulting, validation and tests
from lwsconf.sim.apiserver.storage.jobs import CONTROLLER_UID as CONTROLLER_UID
from lwsconf.sim.apiserver.storage.jobs import JOB_NAME as JOB_NAME
from lwsconf.sim.apiserver.storage.jobs import JOBS as JOBS
from lwsconf.sim.apiserver.storage.jobs import dict_at as _dict_at

CRONJOBS = ("batch", "cronjobs")
DEFAULT_BACKOFF_LIMIT = 6
RESTART_POLICIES = ("OnFailure", "Never")
COMPLETION_MODES = ("NonIndexed", "Indexed")
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
CRONJOB_NAME_MAX = 52
MAX_INT32 = 2**31 - 1


def default_job_spec(spec: dict[str, Any]) -> None:
    """`SetDefaults_Job`'s spec part (also used for a CronJob's jobTemplate, minus what Job-only defaulting adds)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:  # with a per-index limit the Job-wide one is out of the way: MaxInt32
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else DEFAULT_BACKOFF_LIMIT
    if not spec.get("completionMode"):
        spec["completionMode"] = "NonIndexed"
    spec.setdefault("suspend", False)
    if not spec.get("podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    spec.setdefault("manualSelector", False)
    template = spec.get("template")
    if isinstance(template, dict):
        template.setdefault("metadata", {})  # PodTemplateSpec.metadata is a struct: read back as `{}`
        if isinstance(template.get("spec"), dict):
            pods_defaults.default_pod_spec(template["spec"])


def default_job(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    obj.setdefault("status", {})  # JobStatus is a struct: an empty Job reads back `status: {}`
    default_job_spec(_dict_at(obj, "spec"))
    jobs.copy_template_labels(obj)


def default_cronjob(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    obj.setdefault("status", {})
    spec = _dict_at(obj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):  # JobTemplateSpec.metadata is a struct: read back as `{}`
        job_template.setdefault("metadata", {})
    template = f.as_dict(f.as_dict(job_template).get("spec"))
    pod_template = template.get("template")
    if isinstance(pod_template, dict):
        pod_template.setdefault("metadata", {})
        if isinstance(pod_template.get("spec"), dict):
            pods_defaults.default_pod_spec(pod_template["spec"])


# --- validation ---------------------------------------------------------------------------------------

def _per_index_limits(spec: dict[str, Any], path: str) -> list[errors.Cause]:
    """backoffLimitPerIndex / maxFailedIndexes as validateJobSpec checks them (kube-apiserver 1.37.2 words:
    lwsconf fidelity batch/ctl-job-per-index)."""
    causes: list[errors.Cause] = []
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if per_index is not None:
        causes += f.nonnegative(f.child(path, "backoffLimitPerIndex"), per_index)
        if spec.get("completionMode") != "Indexed":
            causes.append(f.invalid(f.child(path, "backoffLimitPerIndex"), per_index,
                                    "requires indexed completion mode"))
    if max_failed is not None:
        causes += f.nonnegative(f.child(path, "maxFailedIndexes"), max_failed)
        if per_index is None:
            causes.append(f.required(f.child(path, "backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
        completions = spec.get("completions")
        if f.is_int(max_failed) and f.is_int(completions) and max_failed > completions:
            causes.append(f.invalid(f.child(path, "maxFailedIndexes"), max_failed,
                                    "must be less than or equal to completions"))
    return causes


def _job_spec(spec: dict[str, Any], path: str, *, generated_selector: bool) -> list[errors.Cause]:
    causes: list[errors.Cause] = []
    for field in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
        causes += f.nonnegative(f.child(path, field), spec.get(field))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not f.is_int(deadline) or deadline <= 0):
        causes.append(f.invalid(f.child(path, "activeDeadlineSeconds"), deadline, "must be greater than 0"))
    causes += f.enum(f.child(path, "completionMode"), spec.get("completionMode"), COMPLETION_MODES, optional=True)
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        causes.append(f.required(f.child(path, "completions"), "when completion mode is Indexed"))
    causes += _per_index_limits(spec, path)
    causes += f.enum(f.child(path, "podReplacementPolicy"), spec.get("podReplacementPolicy"),
                     ("TerminatingOrFailed", "Failed"), optional=True)
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(template, dict):
        return [*causes, f.required(f.child(path, "template"))]
    tmeta = f.as_dict(template.get("metadata"))
    if selector is None:
        if not generated_selector:
            causes.append(f.required(f.child(path, "selector")))
    else:
        causes += meta.validate_label_selector(selector, f.child(path, "selector"))
        if not meta.selector_matches(selector, tmeta.get("labels")):
            causes.append(f.invalid(f.child(path, "template", "metadata", "labels"), tmeta.get("labels") or {},
                                    "`selector` does not match template `labels`"))
    causes += meta.validate_labels(tmeta.get("labels"), f.child(path, "template", "metadata", "labels"))
    tspec = template.get("spec")
    causes += pods.validate_pod_spec(tspec, f.child(path, "template", "spec"), template=True)
    restart = f.as_dict(tspec).get("restartPolicy")
    if restart not in RESTART_POLICIES:
        # kube-apiserver 1.37.2 answers Required (not NotSupported) even for "Always" (lwsconf fidelity
        # batch/batch-api/restart-always-refused)
        causes.append(f.required(f.child(path, "template", "spec", "restartPolicy"),
                                 'valid values: "OnFailure", "Never"'))
    return causes


def validate_job(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateJob` and, with `old`, `ValidateJobSpecUpdate`'s immutable fields."""
    if not isinstance(obj.get("spec"), dict):
        return [f.required("spec")]
    spec = obj["spec"]
    # on CREATE the strategy generates the selector after validation sees the uid-less object here
    causes = _job_spec(spec, "spec", generated_selector=old is None and spec.get("manualSelector") is not True)
    if old is not None:
        old_spec = f.as_dict(old.get("spec"))
        causes += f.unchanged("spec.selector", spec.get("selector"), old_spec.get("selector"))
        causes += f.unchanged("spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode"))
        if spec.get("completionMode") != "Indexed":
            causes += f.unchanged("spec.completions", spec.get("completions"), old_spec.get("completions"))
        causes += f.unchanged("spec.template", spec.get("template"), old_spec.get("template"))
    return causes


def validate_cronjob(obj: dict[str, Any], old: dict[str, Any] | None) -> list[errors.Cause]:
    """`ValidateCronJobCreate`/`Update`: name length, schedule, concurrencyPolicy, limits, the job template."""
    causes: list[errors.Cause] = []
    name = f.as_str(f.as_dict(obj.get("metadata")).get("name"))
    if len(name) > CRONJOB_NAME_MAX:
        causes.append(f.invalid("metadata.name", name, f"must be no more than {CRONJOB_NAME_MAX} characters"))
    if not isinstance(obj.get("spec"), dict):
        return [*causes, f.required("spec")]
    spec = obj["spec"]
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule:
        causes.append(f.required("spec.schedule"))
    else:
        try:
            cron.parse(schedule)
        except cron.ScheduleError as exc:
            causes.append(f.invalid("spec.schedule", schedule, str(exc)))
    causes += f.enum("spec.concurrencyPolicy", spec.get("concurrencyPolicy"), CONCURRENCY_POLICIES)
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes += f.nonnegative(f.child("spec", field), spec.get(field))
    job_spec = f.as_dict(f.as_dict(spec.get("jobTemplate")).get("spec"))
    causes += _job_spec(job_spec, "spec.jobTemplate.spec", generated_selector=True)
    return causes
