"""batch/v1 Jobs and CronJobs on the sim's API server: served, defaulted, selector generated, validated, printed.

Behaviour checked against pkg/apis/batch/v1/defaults.go, pkg/registry/batch/job/strategy.go
(`generateSelector`), pkg/apis/batch/validation and pkg/printers/internalversion/printers.go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lwsconf.sim.apiserver.admission import batch
from lwsconf.sim.apiserver.tables import columns as table_columns
from tests.conftest import SimAPI
from tests.sim.apiserver.test_kubectl import Kubectl, kubectl  # noqa: F401 (fixture)

JOBS = "/apis/batch/v1/namespaces/default/jobs"
CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"


def job(name: str = "demo", **spec: Any) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "python:3.12-slim"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": pod}, **spec}}


def test_discovery_lists_jobs_and_cronjobs_with_status(sim_api: SimAPI) -> None:
    doc = sim_api.request("GET", "/apis/batch/v1").json()
    names = {r["name"]: r for r in doc["resources"]}
    assert {"jobs", "jobs/status", "cronjobs", "cronjobs/status"} <= set(names)
    assert names["cronjobs"]["shortNames"] == ["cj"] and names["jobs"]["categories"] == ["all"]


def test_created_job_has_defaults_and_generated_selector(sim_api: SimAPI) -> None:
    created = sim_api.request("POST", JOBS, json=job())
    assert created.status_code == 201, created.text
    got = created.json()
    uid, spec = got["metadata"]["uid"], got["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["podReplacementPolicy"]) == (
        "NonIndexed", False, "TerminatingOrFailed")
    assert spec["selector"] == {"matchLabels": {batch.CONTROLLER_UID: uid}}
    expected = {batch.CONTROLLER_UID: uid, batch.JOB_NAME: "demo", "controller-uid": uid, "job-name": "demo"}
    assert spec["template"]["metadata"]["labels"] == expected
    assert got["metadata"]["labels"] == expected
    assert got["status"] == {}


def test_parallelism_alone_leaves_completions_unset(sim_api: SimAPI) -> None:
    got = sim_api.request("POST", JOBS, json=job(parallelism=3)).json()
    assert "completions" not in got["spec"] and got["spec"]["parallelism"] == 3


def test_restart_policy_must_be_never_or_on_failure(sim_api: SimAPI) -> None:
    body = job()
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    bad = sim_api.request("POST", JOBS, json=body)
    assert bad.status_code == 422, bad.text
    causes = bad.json()["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.template.spec.restartPolicy"]
    assert causes[0]["message"] == 'Required value: valid values: "OnFailure", "Never"'  # as kube-apiserver 1.37.2


def test_negative_counts_and_indexed_without_completions_are_refused(sim_api: SimAPI) -> None:
    bad = sim_api.request("POST", JOBS, json=job(parallelism=-1, backoffLimit=-2, completionMode="Indexed"))
    assert bad.status_code == 422, bad.text
    fields = sorted(c["field"] for c in bad.json()["details"]["causes"])
    assert fields == ["spec.backoffLimit", "spec.completions", "spec.parallelism"]


def test_template_and_selector_are_immutable(sim_api: SimAPI) -> None:
    got = sim_api.request("POST", JOBS, json=job()).json()
    got["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    bad = sim_api.request("PUT", f"{JOBS}/demo", json=got)
    assert bad.status_code == 422, bad.text
    assert [c["field"] for c in bad.json()["details"]["causes"]] == ["spec.template"]


def test_manual_selector_must_match_template(sim_api: SimAPI) -> None:
    body = job(manualSelector=True, selector={"matchLabels": {"app": "x"}})
    bad = sim_api.request("POST", JOBS, json=body)
    assert bad.status_code == 422 and "does not match template" in bad.text, bad.text
    body["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    ok = sim_api.request("POST", JOBS, json=body)
    assert ok.status_code == 201, ok.text
    assert ok.json()["spec"]["template"]["metadata"]["labels"] == {"app": "x"}


def test_cronjob_defaults_and_schedule_validation(sim_api: SimAPI) -> None:
    body: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": job()["spec"]}}}
    created = sim_api.request("POST", CRONJOBS, json=body)
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"], spec["jobTemplate"]["metadata"]) == ("Allow", False, 3, 1, {})
    body["metadata"]["name"] = "bad"
    body["spec"]["schedule"] = "61 * * * *"
    bad = sim_api.request("POST", CRONJOBS, json=body)
    assert bad.status_code == 422 and "spec.schedule" in bad.text, bad.text


def test_job_columns_follow_print_job() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    start = (now - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    running = {"spec": {"completions": 3, "parallelism": 2}, "status": {"succeeded": 1, "startTime": start}}
    cols = {c.name: c for c in table_columns.BUILTIN_COLUMNS[("batch", "jobs")]}
    assert cols["Status"].cell(running, now) == "Running"
    assert cols["Completions"].cell(running, now) == "1/3"
    assert cols["Duration"].cell(running, now) == "30s"
    done = {"spec": {"parallelism": 4}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert (cols["Status"].cell(done, now), cols["Completions"].cell(done, now)) == ("Complete", "0/1 of 4")


def test_kubectl_create_and_get_job(kubectl: Kubectl) -> None:  # noqa: F811 (fixture)
    kubectl("create", "job", "demo", "--image=python:3.12-slim", "--", "python", "-c", "print(1)")
    out = kubectl("get", "jobs")
    assert out.split()[:5] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], out
    assert "demo" in out and "0/1" in out, out
    kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *")
    out = kubectl("get", "cronjobs")
    assert out.split()[:7] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE"], out
