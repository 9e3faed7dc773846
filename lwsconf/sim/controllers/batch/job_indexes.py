"""Indexed Jobs' bookkeeping: completion indexes, and per-index failure limits (`backoffLimitPerIndex`).

Follows kube-controller-manager 1.37.2's pkg/controller/job/indexed_job_utils.go (read in the k8s.io/kubernetes
module): every pod of an index carries `job-index-failure-count` (failures of that index before it: "0" on the
first pod) and, when a podFailurePolicy Ignore rule matched earlier failures, `job-index-ignored-failure-count`;
the replacement of a failed pod counts one more (`getNewIndexFailureCounts`). An index fails when a pod of it
fails with its count already at the limit, or matched a FailIndex rule (`isIndexFailed`); failed indexes are
never retried, are listed in `status.failedIndexes` (written, "" included, whenever the Job has a per-index limit)
and end the Job: more than `maxFailedIndexes` fails it with MaxFailedIndexesExceeded at once, otherwise once every
index succeeded or failed with FailedIndexes. A retry waits 10 s doubled per failure of that index, counted from
the failed pod's finish (`getRemainingTimePerIndex`). lwsconf fidelity batch/ctl-job-per-index compares it with the
real controller. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.controllers.common import workloads as wl

Obj = dict[str, Any]
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
"""The annotation (and label) carrying an Indexed Job pod's completion index (`JobCompletionIndexAnnotation`)."""
FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-failure-count"
IGNORED_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-ignored-failure-count"
MAX_INT32 = 2**31 - 1
"""`backoffLimit` when only `backoffLimitPerIndex` is set (API defaulting, pkg/apis/batch/v1/defaults.go)."""


def completion_index(pod: Obj) -> int | None:
    value = (wl.meta(pod).get("annotations") or {}).get(INDEX_KEY)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def parse_indexes(text: Any) -> set[int]:
    """`completedIndexes` / `failedIndexes` ("1,3-5") as a set."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """Ascending, consecutive runs as ranges ("1,3-5"), as upstream's `OrderedIntervals.String`."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def per_index_limit(job: Obj) -> int | None:
    """`spec.backoffLimitPerIndex` of an Indexed Job, or None (the Job-wide limit applies)."""
    spec = job.get("spec") or {}
    limit = spec.get("backoffLimitPerIndex")
    return int(limit) if spec.get("completionMode") == "Indexed" and isinstance(limit, int) else None


def _count(pod: Obj, key: str) -> int:
    """An index-failure annotation as a number; 0 when missing or not a non-negative int32 (as upstream reads it)."""
    value = (wl.meta(pod).get("annotations") or {}).get(key)
    return int(value) if isinstance(value, str) and value.isdigit() and int(value) <= MAX_INT32 else 0


@dataclass
class PolicyVerdicts:
    """What the podFailurePolicy said of failed pods, by uid: ignored (not counted) or failing their index."""

    ignored: set[str] = field(default_factory=set)
    fail_index: set[str] = field(default_factory=set)


def failed_indexes(job: Obj, pods: list[Obj], verdicts: PolicyVerdicts) -> set[int]:
    """The Job's failed indexes: those already in its status and those a failed pod now fails."""
    limit = per_index_limit(job)
    completions = int((job.get("spec") or {}).get("completions") or 0)
    out = {i for i in parse_indexes((job.get("status") or {}).get("failedIndexes")) if i < completions}
    if limit is None:
        return out
    for pod in pods:
        index, uid = completion_index(pod), str(wl.meta(pod).get("uid"))
        if wl.phase(pod) != "Failed" or index is None or index >= completions:
            continue
        if uid in verdicts.fail_index or (uid not in verdicts.ignored and _count(pod, FAILURE_COUNT_KEY) >= limit):
            out.add(index)
    return out


def last_failed(pods: list[Obj], index: int) -> Obj | None:
    """The failed pod of `index` the next pod replaces: the most failures counted, then the latest finish."""
    failed = [p for p in pods if wl.phase(p) == "Failed" and completion_index(p) == index]
    return max(failed, key=lambda p: (_count(p, FAILURE_COUNT_KEY) + _count(p, IGNORED_FAILURE_COUNT_KEY),
                                      _finished_at(p) or 0.0), default=None)


def replacement_annotations(replaced: Obj | None, verdicts: PolicyVerdicts) -> dict[str, str]:
    """The failure-count annotations of the pod that replaces `replaced` (the first pod of an index: "0")."""
    if replaced is None:
        return {FAILURE_COUNT_KEY: "0"}
    failures, ignored = _count(replaced, FAILURE_COUNT_KEY), _count(replaced, IGNORED_FAILURE_COUNT_KEY)
    if str(wl.meta(replaced).get("uid")) in verdicts.ignored:
        ignored += 1
    else:
        failures += 1
    out = {FAILURE_COUNT_KEY: str(failures)}
    if ignored:
        out[IGNORED_FAILURE_COUNT_KEY] = str(ignored)
    return out


def retry_wait(replaced: Obj | None, now: float, base: float, cap: float) -> float:
    """Seconds before `replaced`'s index may get a new pod: base doubled per failure of the index, from its finish."""
    if replaced is None:
        return 0.0
    finished = _finished_at(replaced)
    if finished is None:
        return 0.0
    failures = _count(replaced, FAILURE_COUNT_KEY) + _count(replaced, IGNORED_FAILURE_COUNT_KEY) + 1
    delay: float = min(base * 2.0 ** (failures - 1), cap)
    return max(0.0, finished + delay - now)


def _finished_at(pod: Obj) -> float | None:
    times = [wl.parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
             for s in (pod.get("status") or {}).get("containerStatuses") or ()]
    known: list[float] = [float(t) for t in times if t is not None]
    return max(known) if known else None
