"""The Job controller's pure decisions (`job_sync.decide`), pass by pass, as job_controller.go's syncJob makes them."""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.batch import job_sync as sync

Obj = dict[str, Any]
NOW = 1_000_000.0
NOW_TEXT = "1970-01-12T13:46:40Z"


def job(**spec: Any) -> Obj:
    base = {"parallelism": 1, "completions": 1, "backoffLimit": 6, "podReplacementPolicy": "TerminatingOrFailed",
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    return {"metadata": {"name": "j", "namespace": "default", "uid": "u"}, "spec": {**base, **spec}, "status": {}}


def pod(name: str, phase: str = "Running", *, finished: str = "1970-01-12T13:46:30Z", deleting: bool = False,
        ready: bool = False, restarts: int = 0) -> Obj:
    status: Obj = {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                   "containerStatuses": [{"name": "c", "restartCount": restarts, "state": {}}]}
    if phase in ("Failed", "Succeeded"):
        status["containerStatuses"][0]["state"] = {"terminated": {"finishedAt": finished}}
    meta: Obj = {"name": name, "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = NOW_TEXT
    return {"metadata": meta, "status": status}


def decide(j: Obj, pods: list[Obj], tally: sync.Tally | None = None, now: float = NOW) -> sync.Decision:
    return sync.decide(j, pods, tally or sync.Tally(), now, NOW_TEXT)


def types(d: sync.Decision) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in d.status.get("conditions", [])]


def test_creates_up_to_parallelism_and_never_more_than_missing_completions() -> None:
    d = decide(job(parallelism=2, completions=3), [])
    assert d.create == 2 and d.status["startTime"] == NOW_TEXT and "active" not in d.status
    d = decide(job(parallelism=2, completions=3), [pod("a", "Succeeded"), pod("b", "Succeeded"), pod("c")])
    assert d.create == 0 and d.status["active"] == 1 and d.status["succeeded"] == 2


def test_work_queue_without_completions_stops_creating_after_a_success() -> None:
    j = job(parallelism=3, completions=None)
    assert decide(j, []).create == 3
    assert decide(j, [pod("a", "Succeeded"), pod("b")]).create == 0


def test_terminating_pod_holds_its_place_unless_policy_is_failed() -> None:
    pods = [pod("a", deleting=True)]
    assert decide(job(), pods).create == 0
    assert decide(job(podReplacementPolicy="Failed"), pods).create == 1
    assert decide(job(), pods).status["terminating"] == 1


def test_completion_sets_success_criteria_then_complete_with_an_event() -> None:
    d = decide(job(completions=2, parallelism=2), [pod("a", "Succeeded"), pod("b", "Succeeded")])
    assert types(d) == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert d.status["completionTime"] == NOW_TEXT and ("Normal", "Completed", "Job completed") in d.events
    assert d.status["uncountedTerminatedPods"] == {} and d.status["ready"] == 0


def test_completion_with_a_pod_still_running_deletes_it_before_complete() -> None:
    running = pod("b")
    d = decide(job(completions=1, parallelism=2), [pod("a", "Succeeded"), running])
    assert types(d) == [("SuccessCriteriaMet", "CompletionsReached")] and d.delete == [running]


def test_failures_beyond_backoff_limit_fail_the_job() -> None:
    j = job(backoffLimit=1)
    d = decide(j, [pod("a", "Failed")])
    assert d.status["failed"] == 1 and "conditions" not in d.status
    d = decide(j, [pod("a", "Failed"), pod("b", "Failed")])
    assert types(d) == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    assert ("Warning", "BackoffLimitExceeded", sync.BACKOFF_MESSAGE) in d.events
    assert "completionTime" not in d.status


def test_failed_pod_is_replaced_after_the_exponential_back_off() -> None:
    j = job(backoffLimit=6)
    failed_at = "1970-01-12T13:46:35Z"  # 5 s before NOW
    d = decide(j, [pod("a", "Failed", finished=failed_at)])
    assert d.create == 0 and d.recheck_after is not None and 4.9 < d.recheck_after < 5.2
    assert decide(j, [pod("a", "Failed", finished=failed_at)], now=NOW + 6).create == 1
    two = [pod("a", "Failed", finished=failed_at), pod("b", "Failed", finished=failed_at)]
    assert decide(j, two, now=NOW + 6).create == 0  # 20 s after the second failure


def test_on_failure_restarts_count_against_the_backoff_limit() -> None:
    j = job(backoffLimit=2)
    j["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    running = pod("a", restarts=3)
    d = decide(j, [running])
    assert types(d) == [("FailureTarget", "BackoffLimitExceeded")] and d.delete == [running]


def test_active_deadline_fails_the_job() -> None:
    j = job(activeDeadlineSeconds=10)
    j["status"]["startTime"] = "1970-01-12T13:46:20Z"  # 20 s before NOW
    running = pod("a")
    d = decide(j, [running])
    assert types(d) == [("FailureTarget", "DeadlineExceeded")] and d.delete == [running]
    j["status"]["startTime"] = NOW_TEXT
    d = decide(j, [running])
    assert "conditions" not in d.status and d.recheck_after is not None and 9.9 < d.recheck_after < 10.2


def test_suspend_deletes_active_pods_and_resume_restarts_the_clock() -> None:
    j = job(suspend=True)
    running = pod("a")
    d = decide(j, [running])
    assert types(d) == [("Suspended", "JobSuspended")] and d.delete == [running] and d.create == 0
    j["status"] = d.status
    j["spec"]["suspend"] = False
    d = decide(j, [])
    assert [(c["type"], c["status"]) for c in d.status["conditions"]] == [("Suspended", "False")]
    assert d.create == 1 and ("Normal", "Resumed", "Job resumed") in d.events


def test_ttl_after_finished_deletes_the_job_when_due() -> None:
    j = job(ttlSecondsAfterFinished=30)
    j["status"] = {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": NOW_TEXT}]}
    d = decide(j, [], now=NOW + 10)
    assert not d.delete_job and d.recheck_after is not None and 19.9 < d.recheck_after < 20.2
    assert decide(j, [], now=NOW + 31).delete_job


def test_tally_keeps_counts_of_pods_that_were_deleted_after_being_counted() -> None:
    tally = sync.Tally()
    decide(job(completions=3), [pod("a", "Succeeded")], tally)
    d = decide(job(completions=3), [], tally)  # the counted pod is gone
    assert d.status["succeeded"] == 1


def test_tally_seeded_from_stored_counts_does_not_count_present_pods_twice() -> None:
    j = job(completions=3)
    j["status"] = {"succeeded": 2}
    pods = [pod("a", "Succeeded"), pod("b", "Succeeded")]
    tally = sync.Tally.seed(j, pods)
    assert decide(j, pods, tally).status["succeeded"] == 2


def _exited(name: str, code: int) -> Obj:
    p = pod(name, "Failed")
    p["metadata"]["namespace"] = "default"
    p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = code
    return p


def test_pod_failure_policy_fail_job_on_exit_code() -> None:
    j = job(podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]})
    assert "conditions" not in decide(j, [_exited("a", 1)]).status  # exit 1: counted, retried
    d = decide(j, [_exited("b", 42)])
    assert types(d) == [("FailureTarget", "PodFailurePolicy"), ("Failed", "PodFailurePolicy")]
    assert d.status["conditions"][0]["message"] == (
        "Container c for pod default/b failed with exit code 42 matching FailJob rule at index 0")


def test_pod_failure_policy_ignore_does_not_count_against_backoff_limit() -> None:
    j = job(backoffLimit=0, podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    evicted = pod("a", "Failed")
    evicted["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True"})
    d = decide(j, [evicted])
    assert "conditions" not in d.status and "failed" not in d.status and d.create == 1


def _indexed(name: str, index: int, phase: str = "Running") -> Obj:
    p = pod(name, phase)
    p["metadata"]["annotations"] = {sync.INDEX_KEY: str(index)}
    return p


def test_indexed_job_creates_the_missing_indexes_and_completes_on_all_indexes() -> None:
    j = job(completionMode="Indexed", completions=4, parallelism=2)
    assert decide(j, []).create_indexes == [0, 1]
    d = decide(j, [_indexed("a", 0, "Succeeded"), _indexed("b", 1)])
    assert d.create_indexes == [2] and d.status["completedIndexes"] == "0"
    done = [_indexed(n, i, "Succeeded") for n, i in (("a", 0), ("b", 1), ("c", 2), ("d", 3))]
    d = decide(j, done)
    assert d.status["completedIndexes"] == "0-3" and ("Complete", "CompletionsReached") in types(d)


def test_completed_indexes_format_and_parse() -> None:
    assert sync.format_indexes({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert sync.parse_indexes("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
