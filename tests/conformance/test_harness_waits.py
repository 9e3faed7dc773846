"""The harness's waits: a test hands them named checks and names its timeout (issue 19 point 4).

No cluster is needed: the harness is built on an ApiClient that is never called, and the checks are
local functions, so what is tested is the harness's own rules (a lambda is refused with a message that
says what to write instead; the named timeout bounds the wait) and the pure "rolled out" judgement that
the controller-restart and serving tests share.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import pytest
from kubernetes import client

from conformance.harness import LWSHarness
from lwsconf import lwsapi
from lwsconf.timeouts import FIELDS, TimeoutName, Timeouts
from lwsconf.waits import core
from lwsconf.waits import lws as lws_waits


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> LWSHarness:
    lws = LWSHarness(client.ApiClient(), "ns", Timeouts(create=0.3, stays_true=0.2, poll_interval=0.01))
    monkeypatch.setattr(lws, "describe", lambda name=None: f"state of {name}")
    return lws


def test_wait_refuses_a_lambda_and_says_what_to_write(harness: LWSHarness) -> None:
    with pytest.raises(TypeError, match=r"lws.wait\(\) was given a lambda; define the check as a named function"):
        harness.wait(lambda: None, what="anything")


def test_hold_refuses_a_lambda(harness: LWSHarness) -> None:
    with pytest.raises(TypeError, match=r"lws.hold\(\) was given a lambda"):
        harness.hold(lambda: None, what="anything")


def test_wait_is_bounded_by_the_named_timeout_and_shows_the_state(harness: LWSHarness) -> None:
    def never() -> None:
        raise core.NotYet("not there")
    with pytest.raises(core.WaitTimeout) as failed:
        harness.wait(never, what="the thing", within="create", name="demo")
    assert failed.value.timeout == 0.3
    assert "state of demo" in str(failed.value) and "not there" in str(failed.value)


def test_a_missing_key_means_not_yet(harness: LWSHarness) -> None:
    answers: list[dict[str, int]] = [{}, {}, {"ready": 1}]

    def key_appears() -> int:
        return answers.pop(0)["ready"]
    assert harness.wait(key_appears, what="a key to appear", within="create") == 1
    assert not answers


def test_hold_fails_at_the_first_violation_with_the_state(harness: LWSHarness) -> None:
    def broken() -> None:
        raise AssertionError("group 1 was replaced")
    with pytest.raises(AssertionError, match="group 1 was replaced") as failed:
        harness.hold(broken, what="groups keep their pods", name="demo")
    assert "state of demo" in str(failed.value)


def test_timeout_names_are_the_timeouts_in_seconds() -> None:
    assert set(get_args(TimeoutName)) == FIELDS - {"required_consecutive_successes", "poll_interval"}
    assert all(isinstance(getattr(Timeouts(), name), float) for name in get_args(TimeoutName))
    assert {f.name for f in dataclasses.fields(Timeouts)} == FIELDS


def _group(index: int, size: int, revision: str, *, ready: bool = True) -> lws_waits.Group:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    pods: dict[int, dict[str, Any]] = {
        j: {"metadata": {"name": f"g-{index}-{j}", "uid": f"{index}-{j}-{revision}",
                         "labels": {lwsapi.TEMPLATE_REVISION_HASH: revision}},
            "status": {"phase": "Running", "conditions": conditions}} for j in range(size)}
    return lws_waits.Group(index, pods)


def test_one_new_revision_when_every_group_is_complete_and_ready_on_it() -> None:
    found = {i: _group(i, 2, "new") for i in range(3)}
    assert lws_waits.one_new_revision(found, replicas=3, size=2, old={"old"}) == "new"


@pytest.mark.parametrize(("found", "why"), [
    ({0: _group(0, 2, "new"), 1: _group(1, 1, "new")}, "group 1 leader up before its workers (CI run of a82b173)"),
    ({0: _group(0, 2, "new"), 1: _group(1, 2, "new", ready=False)}, "group 1 not ready"),
    ({0: _group(0, 2, "new"), 1: _group(1, 2, "old")}, "group 1 still on the old revision"),
    ({0: _group(0, 2, "new"), 2: _group(2, 2, "new")}, "groups 0 and 2, not 0 and 1"),
    ({0: _group(0, 2, ""), 1: _group(1, 2, "")}, "no revision label"),
], ids=["workers-missing", "unready", "old", "wrong-indices", "unlabelled"])
def test_one_new_revision_is_not_yet(found: dict[int, lws_waits.Group], why: str) -> None:
    with pytest.raises(core.NotYet):
        lws_waits.one_new_revision(found, replicas=2, size=2, old={"old"})
