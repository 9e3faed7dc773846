"""The waiting primitives: eventual success, timeout messages with state, convergence streaks."""

from __future__ import annotations

import itertools

import pytest

from lwsconf.waits import core, observe


def test_wait_until_returns_the_first_passing_value() -> None:
    counter = itertools.count()

    def check() -> int:
        n = next(counter)
        if n < 3:
            raise core.NotYet(f"only {n}")
        return n

    assert core.wait_until(check, what="three attempts", timeout=5, poll=0.001) == 3


def test_timeout_message_names_the_wait_the_last_reason_and_the_state() -> None:
    def never() -> None:
        raise core.NotYet("group 1 still on revision abc")

    with pytest.raises(core.WaitTimeout) as err:
        core.wait_until(never, what="LWS demo Available", timeout=0.05, poll=0.01,
                        describe=lambda: "pods: demo-0 Pending")
    text = str(err.value)
    assert "waiting for LWS demo Available" in text and "group 1 still on revision abc" in text
    assert "pods: demo-0 Pending" in text and err.value.attempts >= 2


def test_assertion_errors_count_as_not_yet() -> None:
    with pytest.raises(core.WaitTimeout, match="expected 2 got 1"):
        core.wait_until(lambda: (_ for _ in ()).throw(AssertionError("expected 2 got 1")), what="x", timeout=0.03,
                        poll=0.01)


def test_terminal_stops_early() -> None:
    calls = itertools.count()

    def gone() -> None:
        next(calls)
        raise core.Terminal("LWS was deleted")

    with pytest.raises(core.WaitTimeout, match="gave up early: LWS was deleted"):
        core.wait_until(gone, what="x", timeout=10, poll=0.01)
    assert next(calls) == 1


def test_must_converge_resets_its_streak_on_failure() -> None:
    results = iter([True, True, False, True, True, True])
    seen: list[bool] = []

    def check() -> bool:
        ok = next(results)
        seen.append(ok)
        if not ok:
            raise core.NotYet("a worker answered")
        return ok

    assert core.must_converge(check, what="leaders only", successes=3, within=5, poll=0.001)
    assert seen == [True, True, False, True, True, True]


def test_must_hold_passes_when_the_check_holds_for_the_whole_duration() -> None:
    calls = itertools.count()
    assert core.must_hold(lambda: next(calls), what="no worker sts", duration=0.05, poll=0.01) >= 2


def test_must_hold_fails_at_the_first_violation_with_the_state() -> None:
    results = iter([True, True, False])

    def check() -> bool:
        if not next(results):
            raise core.NotYet("worker sts demo-0 appeared")
        return True

    with pytest.raises(AssertionError, match="no worker sts stopped holding .*demo-0 appeared") as err:
        core.must_hold(check, what="no worker sts", duration=10, poll=0.001, describe=lambda: "sts: demo-0")
    assert "sts: demo-0" in str(err.value)


def test_long_waits_report_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    monkeypatch.setattr(core, "progress", lines.append)
    monkeypatch.setattr(core, "PROGRESS_AFTER", (0.02, 0.04))
    with pytest.raises(core.WaitTimeout):
        core.wait_until(lambda: (_ for _ in ()).throw(core.NotYet("group 1 unready")), what="LWS x Available",
                        timeout=0.1, poll=0.01)
    assert len(lines) == 2 and all("still waiting for LWS x Available" in line for line in lines), lines
    assert "group 1 unready" in lines[0]


def test_a_timed_out_waits_pod_row_counts_sidecar_restarts() -> None:
    """A worker whose native sidecar crashed showed RESTARTS 0 in a timed-out wait's dump (only containerStatuses
    were added up), hiding the very restart that should have recreated its group (contract 4.2)."""
    pod = {"metadata": {"name": "demo-0-1", "uid": "0123456789", "labels": {}},
           "spec": {"nodeName": "node-1"},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
                      "initContainerStatuses": [{"name": "sidecar", "restartCount": 2}],
                      "containerStatuses": [{"name": "probe", "restartCount": 1}]}}
    assert observe.pod_row(pod) == ["demo-0-1", "Running", "False", "3", "node-1", "", "01234567"]


def test_a_container_stuck_on_its_image_is_named_with_what_to_do() -> None:
    """Real kubelets answer an image no node holds with ErrImagePull, then ImagePullBackOff (issue 31: no registry
    is ever contacted); a timed-out wait's state names the pod, the container and the image, and where images come
    from, instead of leaving a Pending pod to be puzzled over."""
    def pod(name: str, reason: str | None, init: bool = False) -> dict[str, object]:
        state = {"waiting": {"reason": reason}} if reason else {"running": {}}
        key = "initContainerStatuses" if init else "containerStatuses"
        return {"metadata": {"name": name}, "status": {key: [{"name": "main", "image": "vllm/vllm:1", "state": state}]}}

    hints = observe.image_pull_hints([pod("a", "ImagePullBackOff"), pod("b", None), pod("c", "ErrImagePull", True),
                                      pod("d", "CrashLoopBackOff")])
    assert len(hints) == 2, hints
    assert hints[0].startswith("a/main: ImagePullBackOff for image 'vllm/vllm:1'") and "lwsconf nodes build" in hints[0]
    assert hints[1].startswith("c/main: ErrImagePull")
