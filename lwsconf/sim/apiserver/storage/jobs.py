"""The part of batch/v1's Job strategy that runs when a Job is stored: `generateSelector`. Pure: no I/O.

kube-apiserver's Job strategy (pkg/registry/batch/job/strategy.go) generates the selector in
`PrepareForCreate`, once the object has its uid, so `storage.storage` calls `generate_selector` on create;
`admission.batch` (defaults and validation) reads the label names from here. See `admission.batch` for what
the selector is.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.apimachinery import fields as f

JOBS = ("batch", "jobs")
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"


def dict_at(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """`obj[key]` as a dict, created empty when absent (a non-dict value gives a detached `{}`)."""
    value = obj.setdefault(key, {})
    return value if isinstance(value, dict) else {}


def generate_selector(job: dict[str, Any]) -> None:
    """The job strategy's `generateSelector`, once `metadata.uid` and `name` are known (CREATE only)."""
    spec, m = dict_at(job, "spec"), dict_at(job, "metadata")
    template = dict_at(spec, "template")
    labels = dict_at(dict_at(template, "metadata"), "labels")
    if spec.get("manualSelector") is True:
        copy_template_labels(job)
        return
    name, uid = str(m.get("name", "")), str(m.get("uid", ""))
    for key, value in ((LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name), (CONTROLLER_UID, uid),
                       (JOB_NAME, name)):
        labels.setdefault(key, value)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.setdefault("matchLabels", {})
    if isinstance(match, dict):
        match.setdefault(CONTROLLER_UID, uid)
    copy_template_labels(job)


def copy_template_labels(job: dict[str, Any]) -> None:
    """`SetDefaults_Job`: a Job without labels takes its template's (again when read back from storage)."""
    m = dict_at(job, "metadata")
    labels = f.as_dict(f.as_dict(f.as_dict(job.get("spec")).get("template")).get("metadata")).get("labels")
    if not m.get("labels") and isinstance(labels, dict) and labels:
        m["labels"] = dict(labels)
