"""Per-index failure limits of Indexed Jobs (`backoffLimitPerIndex`, `maxFailedIndexes`, FailIndex), decided as
kube-controller-manager 1.37.2 does (job_indexes.py; lwsconf fidelity batch/ctl-job-per-index runs the same
sequence against the real controller)."""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.batch import job_indexes as ix
from lwsconf.sim.controllers.batch import job_sync as sync
from tests.sim.controllers.batch.test_job_sync import NOW, decide, job, pod, types

Obj = dict[str, Any]
FINISHED = "1970-01-12T13:46:30Z"
"""10 s before NOW: the first retry (10 s back-off) is due exactly now."""


def indexed_job(**spec: Any) -> Obj:
    return job(**{"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimitPerIndex": 1,
                  "backoffLimit": ix.MAX_INT32, **spec})


def index_pod(name: str, index: int, phase: str = "Running", *, failures: int | None = None,
              exit_code: int = 1) -> Obj:
    p = pod(name, phase, finished=FINISHED)
    p["metadata"]["annotations"] = {sync.INDEX_KEY: str(index)}
    if failures is not None:
        p["metadata"]["annotations"][ix.FAILURE_COUNT_KEY] = str(failures)
    if phase == "Failed":
        p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = exit_code
    return p


def test_first_pods_carry_failure_count_zero_and_failed_indexes_is_written_empty() -> None:
    d = decide(indexed_job(), [])
    assert d.create_indexes == [0, 1]
    assert d.create_annotations == {0: {ix.FAILURE_COUNT_KEY: "0"}, 1: {ix.FAILURE_COUNT_KEY: "0"}}
    assert d.status["failedIndexes"] == ""


def test_a_failure_under_the_limit_is_retried_with_one_more_after_its_back_off() -> None:
    pods = [index_pod("a", 0, "Failed", failures=0), index_pod("b", 1, failures=0)]
    early = decide(indexed_job(), pods, now=NOW - 5)
    assert early.create_indexes == [] and early.recheck_after is not None and 4.9 < early.recheck_after < 5.2
    d = decide(indexed_job(), pods)
    assert d.create_indexes == [0] and d.create_annotations[0] == {ix.FAILURE_COUNT_KEY: "1"}
    assert d.status["failedIndexes"] == "" and d.status["failed"] == 1 and "conditions" not in d.status


def test_a_failure_at_the_limit_fails_the_index_for_good() -> None:
    pods = [index_pod("a", 0, "Failed", failures=0), index_pod("a2", 0, "Failed", failures=1),
            index_pod("b", 1, failures=0)]
    d = decide(indexed_job(), pods)
    assert d.status["failedIndexes"] == "0" and d.create_indexes == [] and types(d) == []
    done = [*pods[:2], index_pod("b", 1, "Succeeded", failures=0)]
    d = decide(indexed_job(), done)
    assert d.status["completedIndexes"] == "1" and d.status["failedIndexes"] == "0"
    assert ("FailureTarget", "FailedIndexes") in types(d) and ("Failed", "FailedIndexes") in types(d)


def test_more_failed_indexes_than_allowed_fails_the_job_at_once() -> None:
    pods = [index_pod("a", 0, "Failed", failures=1), index_pod("b", 1, failures=0)]
    d = decide(indexed_job(maxFailedIndexes=0), pods)
    assert types(d)[0] == ("FailureTarget", "MaxFailedIndexesExceeded") and d.delete == [pods[1]]
    assert d.status["conditions"][0]["message"] == "Job has exceeded the specified maximal number of failed indexes"


def test_fail_index_rule_fails_the_index_whatever_its_count_and_ignore_counts_apart() -> None:
    rules = [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}},
             {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]
    j = indexed_job(backoffLimitPerIndex=3, podFailurePolicy={"rules": rules})
    d = decide(j, [index_pod("a", 0, "Failed", failures=0, exit_code=42), index_pod("b", 1, "Failed", failures=0,
                                                                                        exit_code=7)])
    assert d.status["failedIndexes"] == "0" and d.create_indexes == [1]
    assert d.create_annotations[1] == {ix.FAILURE_COUNT_KEY: "0", ix.IGNORED_FAILURE_COUNT_KEY: "1"}


def test_back_off_doubles_per_failure_of_the_index() -> None:
    failed = index_pod("a", 0, "Failed", failures=2)
    finished = ix._finished_at(failed)
    assert finished is not None
    assert ix.retry_wait(failed, finished, 10.0, 360.0) == 40.0  # third failure: 10 s * 2^2
    assert ix.retry_wait(None, finished, 10.0, 360.0) == 0.0
