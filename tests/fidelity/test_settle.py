"""A held-out read of controller-made state is compared once it has stopped changing (issue 33): the converter marks
it `settle`, the replay reads it until it has read the same for SETTLE_SECONDS."""

from __future__ import annotations

from typing import Any

import pytest

from lwsconf.fidelity import compare, convert, heldout, run
from lwsconf.fidelity.model import Answer, Scenario, Step
from tests.fidelity.fake_servers import Changing
from tests.fidelity.test_convert import BASE, rec

UID = "0a1b2c3d-1111-2222-3333-444455556666"


def pod(revision: str, version: str = "1") -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "web-0", "resourceVersion": version, "labels": {"revision": revision},
                         "ownerReferences": [{"kind": "StatefulSet", "name": "web", "uid": UID}]}}


def test_reads_of_controller_state_settle_and_logs_waits_and_writes_do_not() -> None:
    records = [rec(1, "POST", f"{BASE}/statefulsets", body={"metadata": {"name": "web"}}, code=201,
                   answer={"kind": "StatefulSet", "metadata": {"name": "web", "uid": UID}}),
               rec(2, "GET", f"{BASE}/pods/web-0", answer=pod("r1")),
               rec(3, "GET", f"{BASE}/pods/web-0/log", answer="log text"),
               rec(4, "GET", f"{BASE}/pods/web-0:8080/proxy/healthz", answer={"ok": True}),
               rec(5, "GET", f"{BASE}/pods?labelSelector=app", answer={"kind": "PodList", "items": [pod("r1")]}),
               rec(6, "GET", f"{BASE}/services/web", answer={"kind": "Service", "metadata": {"name": "web"}})]
    scenario = convert.convert(records, source="suite").scenarios[0]
    create, get, log, proxy, listed, service = scenario["steps"]
    assert get["settle"] is service["settle"] is True
    assert "until" in listed and "settle" not in listed  # it waits for the recorded last pod already
    assert not any("settle" in step for step in (create, log, proxy))
    _, [loaded] = heldout.scenarios_from({"source": "suite", "scenarios": [scenario]})
    assert [s.settle for s in loaded.steps] == [False, True, False, False, False, True]


READ = Step("read", "GET", "/api/v1/namespaces/${ns}/pods/web-0", settle=True)


def read(bodies: list[dict[str, Any]], step: Step = READ) -> tuple[Answer, int]:
    server = Changing(bodies)
    [record] = run.run_steps(server, [step], {"ns": "fid-x"})
    return record.answer, server.reads


def test_a_settle_read_is_compared_once_a_controllers_change_has_stopped() -> None:
    answer, reads = read([pod("r1"), pod("r1"), pod("r2", "2")])
    assert answer.body["metadata"]["labels"] == {"revision": "r2"}
    assert reads >= 3 + int(run.SETTLE_SECONDS / run.UNTIL_POLL)
    unsettled, once = read([pod("r1"), pod("r1"), pod("r2", "2")], Step("read", "GET", READ.path))
    assert unsettled.body["metadata"]["labels"] == {"revision": "r1"} and once == 1


def test_a_write_that_changes_only_the_resource_version_is_still_a_change() -> None:
    # read as the same once normalised, the third answer would end the wait and r2 would never be seen
    answer, _ = read([pod("r1", "1"), pod("r1", "1"), pod("r1", "2"), pod("r1", "2"), pod("r2", "3")])
    assert answer.body["metadata"]["labels"] == {"revision": "r2"}


def test_a_lists_own_resource_version_moving_with_other_writes_is_no_change() -> None:
    lists = [{"kind": "PodList", "metadata": {"resourceVersion": str(n)}, "items": [pod("r1")]} for n in range(100)]
    answer, reads = read(lists)
    assert reads <= 2 + int(run.SETTLE_SECONDS / run.UNTIL_POLL)


def test_a_read_that_never_settles_is_compared_as_it_stands_when_the_bound_runs_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(run.UNTIL_TIMEOUT_ENV, "0.6")
    server = Changing([pod(f"r{n}", str(n)) for n in range(100)])
    [record] = run.run_steps(server, [READ], {"ns": "fid-x"})
    assert server.reads >= 3 and record.answer.body["metadata"]["labels"] == {"revision": f"r{server.reads - 1}"}
    assert record.ran_out == ("settle",)
    [settled] = run.run_steps(Changing([pod("r1")]), [READ], {"ns": "fid-x"})
    assert settled.ran_out == ()
    scenario = Scenario("t", "s", (READ,))
    results = compare.compare([scenario], {"s": [record]}, {"s": [settled]}, {})
    assert compare.waits_ran_out(results) == "waits that ran out: sim: settle 1"
    assert compare.waits_ran_out(compare.compare([scenario], {"s": [settled]}, {"s": [settled]}, {})) is None


def test_a_create_the_recording_saw_succeed_is_sent_again_while_refused() -> None:
    """The recorded reconciler created its worker StatefulSet once the garbage collector had removed the old one;
    replayed at once, the sim answered 409 AlreadyExists while kube-apiserver's collector had been quicker."""
    records = [rec(1, "POST", f"{BASE}/statefulsets", body={"metadata": {"name": "web"}}, code=201,
                   answer={"kind": "StatefulSet", "metadata": {"name": "web", "uid": UID}}),
               rec(2, "GET", f"{BASE}/pods/web-0", answer=pod("r1")),
               rec(3, "POST", f"{BASE}/configmaps", body={"metadata": {"name": "c"}}, code=409, answer={}),
               rec(4, "DELETE", "/api/v1/namespaces/" + BASE.rsplit("/", 1)[-1], answer={}),
               rec(5, "POST", f"{BASE}/events", body={"metadata": {"name": "e"}}, code=201, answer={})]
    create, _, refused, _, teardown = convert.convert(records, source="suite").scenarios[0]["steps"]
    assert create["until"] == {"path": "code", "value": 201, "timeout": convert.UNTIL_SECONDS}
    assert "until" not in refused and "until" not in teardown  # recorded refused; in a namespace being deleted
    _, [scenario] = heldout.scenarios_from({"source": "suite", "scenarios": [
        {"name": "s", "controllers": True, "steps": [create]}]})
    server = Refusing(2)
    [record] = run.run_steps(server, scenario.steps, {"ns": "fid-x"})
    assert record.answer.code == 201 and server.posts == 3 and record.states == (409, 201)


class Refusing:
    """A server that answers a create 409 AlreadyExists `times` times, then 201."""

    name = "refusing"

    def __init__(self, times: int) -> None:
        self.times, self.posts = times, 0

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        self.posts += 1
        if self.posts <= self.times:
            return Answer(409, {"kind": "Status", "reason": "AlreadyExists"})
        return Answer(201, {"kind": "StatefulSet", "metadata": {"name": "web"}})
