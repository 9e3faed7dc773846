"""batch/v1 Jobs on a whole simulated cluster: the Job controller, the scheduler and real pod processes.

A Job's pods run `python -c ...` as real processes on the sim's nodes; the Job controller counts them as
kube-controller-manager's does (pkg/controller/job/job_controller.go). Waits are bounded by the named
`JOB_FINISHED_TIMEOUT` (LWSCONF_TEST_JOB_TIMEOUT overrides it) and fail with the Job and its pods.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from lwsconf.waits import core, observe
from tests import sim_e2e

Obj = dict[str, Any]
TRACKING = "batch.kubernetes.io/job-tracking"
JOB_FINISHED_TIMEOUT = float(os.environ.get("LWSCONF_TEST_JOB_TIMEOUT", "90"))
"""Seconds a test Job may take to finish: a few short processes, plus one 10 s failure back-off."""


@pytest.fixture(scope="module")
def sim() -> Iterator[sim_e2e.Sim]:
    with sim_e2e.running_cluster() as running:
        yield running


def python_job(name: str, code: str, **spec: Any) -> Any:
    """A Job body (typed Any: the official client takes dicts as well as its V1Job models)."""
    container = {"name": "work", "image": "python:3.12-slim", "command": ["python", "-c", code]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}, **spec}}


def get_job(api: client.ApiClient, ns: str, name: str) -> Obj:
    return observe.raw(client.BatchV1Api(api).read_namespaced_job(name, ns, _preload_content=False))


def job_pods(api: client.ApiClient, ns: str, name: str) -> list[Obj]:
    return [p for p in observe.pods(api, ns) if p["metadata"].get("labels", {}).get("job-name") == name]


def wait_condition(sim: sim_e2e.Sim, ns: str, name: str, type_: str) -> Obj:
    def check() -> Obj:
        job = get_job(sim.api, ns, name)
        conds = {c["type"]: c for c in job.get("status", {}).get("conditions") or []}
        if conds.get(type_, {}).get("status") != "True":
            raise core.NotYet(f"job {name} status {json.dumps(job.get('status'))}")
        return job

    def describe() -> str:
        pods = [(p["metadata"]["name"], p.get("status", {}).get("phase")) for p in job_pods(sim.api, ns, name)]
        return f"pods: {pods}"
    return core.wait_until(check, what=f"job {name} to be {type_}", timeout=JOB_FINISHED_TIMEOUT,
                           poll=sim.t.poll_interval, describe=describe)


def test_job_runs_three_completions_two_at_a_time(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-complete", probe_configmap=False) as ns:
        batch = client.BatchV1Api(sim.api)
        batch.create_namespaced_job(ns, python_job("work", "import time; time.sleep(1); print('done')",
                                                   completions=3, parallelism=2))
        job = wait_condition(sim, ns, "work", "Complete")
        status = job["status"]
        assert (status["succeeded"], status.get("failed", 0), status.get("active", 0)) == (3, 0, 0), status
        assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        assert {c["reason"] for c in status["conditions"]} == {"CompletionsReached"}
        assert status["completionTime"] >= status["startTime"]
        pods = job_pods(sim.api, ns, "work")
        assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * 3

        def finalizers_released() -> None:
            held = [p["metadata"]["name"] for p in job_pods(sim.api, ns, "work")
                    if TRACKING in (p["metadata"].get("finalizers") or [])]
            if held:
                raise core.NotYet(f"{TRACKING} still on {held}")
        core.wait_until(finalizers_released, what="counted pods to lose the tracking finalizer",
                        timeout=JOB_FINISHED_TIMEOUT, poll=sim.t.poll_interval)
        for pod in pods:
            [ref] = pod["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["uid"], ref["controller"]) == ("Job", job["metadata"]["uid"], True)
        # never more than `parallelism` at once: the third pod started after one of the first two ended
        starts = sorted(p["status"]["startTime"] for p in pods)
        ends = sorted(p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] for p in pods)
        assert starts[2] >= ends[0], (starts, ends)
        events = sim_e2e.events_for(sim.api, ns, "work")
        reasons = [e["reason"] for e in events]
        assert reasons.count("SuccessfulCreate") == 3 and "Completed" in reasons, reasons
        logs = client.CoreV1Api(sim.api).read_namespaced_pod_log(pods[0]["metadata"]["name"], ns)
        assert logs.strip() == "done"


def test_failing_job_stops_at_its_backoff_limit(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-fail", probe_configmap=False) as ns:
        client.BatchV1Api(sim.api).create_namespaced_job(ns, python_job("boom", "raise SystemExit(3)",
                                                                        backoffLimit=1))
        job = wait_condition(sim, ns, "boom", "Failed")
        status = job["status"]
        assert status["failed"] == 2 and "succeeded" not in status, status
        assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
            ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
        pods = job_pods(sim.api, ns, "boom")
        assert sorted(p["status"]["phase"] for p in pods) == ["Failed", "Failed"]
        reasons = [e["reason"] for e in sim_e2e.events_for(sim.api, ns, "boom")]
        assert reasons.count("SuccessfulCreate") == 2 and "BackoffLimitExceeded" in reasons, reasons


def test_indexed_job_gives_each_pod_its_completion_index(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-indexed", probe_configmap=False) as ns:
        code = "import os, socket; print(os.environ['JOB_COMPLETION_INDEX'], socket.gethostname())"
        client.BatchV1Api(sim.api).create_namespaced_job(ns, python_job("idx", code, completions=3, parallelism=3,
                                                                        completionMode="Indexed"))
        job = wait_condition(sim, ns, "idx", "Complete")
        assert job["status"]["completedIndexes"] == "0-2", job["status"]
        core_api = client.CoreV1Api(sim.api)
        printed = sorted(core_api.read_namespaced_pod_log(p["metadata"]["name"], ns).strip()
                         for p in job_pods(sim.api, ns, "idx"))
        assert printed == ["0 idx-0", "1 idx-1", "2 idx-2"], printed


def test_pod_failure_policy_fails_the_job_on_an_exit_code(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-policy", probe_configmap=False) as ns:
        policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "work", "operator": "In",
                                                                   "values": [42]}}]}
        client.BatchV1Api(sim.api).create_namespaced_job(ns, python_job("exit42", "raise SystemExit(42)",
                                                                        podFailurePolicy=policy))
        job = wait_condition(sim, ns, "exit42", "Failed")
        [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
        [pod] = job_pods(sim.api, ns, "exit42")
        assert failed["reason"] == "PodFailurePolicy"
        assert failed["message"] == (f"Container work for pod {ns}/{pod['metadata']['name']} failed with exit code 42 "
                                     "matching FailJob rule at index 0")


def test_deleting_a_job_deletes_its_pods(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-cascade", probe_configmap=False) as ns:
        batch = client.BatchV1Api(sim.api)
        batch.create_namespaced_job(ns, python_job("long", "import time; time.sleep(600)", parallelism=2,
                                                   completions=4))

        def two_running() -> None:
            phases = [p.get("status", {}).get("phase") for p in job_pods(sim.api, ns, "long")]
            if phases != ["Running", "Running"]:
                raise core.NotYet(f"pods {phases}")
        core.wait_until(two_running, what="2 running pods", timeout=JOB_FINISHED_TIMEOUT, poll=sim.t.poll_interval)
        # running pods hold the finalizer; the controller lets them go once their Job is deleted
        assert all(p["metadata"]["finalizers"] == [TRACKING] for p in job_pods(sim.api, ns, "long"))
        batch.delete_namespaced_job("long", ns, propagation_policy="Background")

        def gone() -> None:
            left = [p["metadata"]["name"] for p in job_pods(sim.api, ns, "long")]
            if left:
                raise core.NotYet(f"pods left: {left}")
        core.wait_until(gone, what="the job's pods to be deleted", timeout=JOB_FINISHED_TIMEOUT,
                        poll=sim.t.poll_interval)


def test_ttl_after_finished_deletes_the_job(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "job-ttl", probe_configmap=False) as ns:
        batch = client.BatchV1Api(sim.api)
        batch.create_namespaced_job(ns, python_job("brief", "print(1)", ttlSecondsAfterFinished=1))

        def deleted() -> None:
            names = [j["metadata"]["name"] for j in observe.raw(
                batch.list_namespaced_job(ns, _preload_content=False))["items"]]
            if names:
                raise core.NotYet(f"jobs still there: {names}")
        core.wait_until(deleted, what="job brief deleted after its TTL", timeout=JOB_FINISHED_TIMEOUT,
                        poll=sim.t.poll_interval)


CRONJOB_TIMEOUT = float(os.environ.get("LWSCONF_TEST_CRONJOB_TIMEOUT", "150"))
"""Seconds for a `* * * * *` CronJob to start a Job (up to a minute) and for that Job to complete."""


def test_cronjob_creates_a_job_at_the_next_minute(sim: sim_e2e.Sim) -> None:
    with sim_e2e.fresh_namespace(sim, "cronjob", probe_configmap=False) as ns:
        batch = client.BatchV1Api(sim.api)
        body: Any = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
                     "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 1,
                              "jobTemplate": {"spec": python_job("x", "print('tick')")["spec"]}}}
        batch.create_namespaced_cron_job(ns, body)

        def completed_job() -> Obj:
            jobs = observe.raw(batch.list_namespaced_job(ns, _preload_content=False))["items"]
            done = [j for j in jobs if any(c["type"] == "Complete" for c in j["status"].get("conditions") or [])]
            if not done:
                raise core.NotYet(f"jobs {[(j['metadata']['name'], j['status']) for j in jobs]}")
            return done[0]
        job = core.wait_until(completed_job, what="the CronJob's first Job to complete", timeout=CRONJOB_TIMEOUT,
                              poll=sim.t.poll_interval)
        [ref] = job["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("CronJob", "tick", True)
        scheduled = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        assert job["metadata"]["name"].startswith("tick-") and scheduled.endswith("+00:00")
        reasons = [e["reason"] for e in sim_e2e.events_for(sim.api, ns, "tick")]
        assert "SuccessfulCreate" in reasons, reasons

        def seen_complete() -> Obj:
            cj = observe.raw(batch.read_namespaced_cron_job("tick", ns, _preload_content=False))
            if not cj["status"].get("lastSuccessfulTime"):
                raise core.NotYet(f"cronjob status {cj['status']}")
            return cj
        cj = core.wait_until(seen_complete, what="the CronJob to record its successful Job", timeout=CRONJOB_TIMEOUT,
                             poll=sim.t.poll_interval)
        assert cj["status"]["lastScheduleTime"] and cj["spec"]["suspend"] is False
