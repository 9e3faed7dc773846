"""The emulated inference server (lwsconf/emulator/emulator.py) as real leader and worker processes.

Why real processes on 127.0.0.1: the emulator's job is process behaviour (who listens, who exits with
which code, what the log says) that only a real rendezvous over TCP shows; no cluster is involved.
Every wait polls through lwsconf.waits.core.wait_until with the named timeouts below.
"""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lwsconf import emulator
from lwsconf.ports import reserve_port
from lwsconf.waits.core import NotYet, wait_until

HOST = "127.0.0.1"
LISTEN_TIMEOUT = float(os.environ.get("LWSCONF_TEST_EMULATOR_LISTEN_TIMEOUT", "10"))
"""A started emulator answers HTTP within this. Machine-speed-dependent (a Python interpreter's start and imports):
measured from Popen to the first /health answer on a 2-core machine at load 24, one start at a time: 1.7-3.1 s
(6 starts); under -n 2 two such starts compete for the cores (about twice that), so 10 s. The former 5 s ran out
at that load ("timed out after 5.1s ... waiting for demo-0-1 to answer HTTP")."""
GROUP_TIMEOUT = float(os.environ.get("LWSCONF_TEST_EMULATOR_GROUP_TIMEOUT", "5"))
"""A group whose members all run completes its rendezvous within this."""
EXIT_TIMEOUT = float(os.environ.get("LWSCONF_TEST_EMULATOR_EXIT_TIMEOUT", "5"))
"""A process whose reason to exit has happened (peer gone, bad join, drain done) exits within this."""
HEARTBEAT = {"LWSCONF_HEARTBEAT_INTERVAL": "0.1", "LWSCONF_HEARTBEAT_TIMEOUT": "2", "LWSCONF_DRAIN_TIMEOUT": "5"}
MODEL = "lwsconf/emulated-model"


def call(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, str], str]:
    """GET (or POST `body` as JSON): status, headers and text, HTTP errors included."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - our own process on loopback
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


@dataclass
class Member:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        code, _, text = call(self.url + path, body)
        return code, json.loads(text)

    def logged(self) -> str:
        return self.log.read_text()

    def must_exit(self) -> int:
        def exited() -> int:
            code = self.proc.poll()
            if code is None:
                raise NotYet(f"pid {self.proc.pid} still running")
            return code
        return wait_until(exited, what=f"{self.url} to exit", timeout=EXIT_TIMEOUT, poll=0.05,
                          describe=self.logged)


class Group:
    """Starts one LWS group's processes (leader and workers) sharing a rendezvous port.

    Its ports are held (lwsconf/ports.py) until stop(), not picked and released: a released port can be
    taken by another xdist worker's process or an outgoing connection before the emulator binds it.
    """

    def __init__(self, tmp_path: Path, size: int) -> None:
        self.tmp_path, self.size = tmp_path, size
        self._held = [reserve_port(HOST)]
        self.rendezvous_port = self._held[0].port
        self.members: list[Member] = []

    def start(self, index: int, *, size: int | None = None, pod: str | None = None,
              env: dict[str, str] | None = None, wait: bool = True) -> Member:
        held = reserve_port(HOST)
        self._held.append(held)
        port = held.port
        pod = pod or f"demo-0{'' if index == 0 else f'-{index}'}"
        log = self.tmp_path / f"{pod}-{len(self.members)}.log"
        full_env = {**os.environ, **HEARTBEAT, "LWSCONF_BIND": HOST, "POD_NAME": pod, "LWS_LEADER_ADDRESS": HOST,
                    "LWS_WORKER_INDEX": str(index), "LWS_GROUP_SIZE": str(size or self.size), **(env or {})}
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, str(emulator.PROGRAM), "--port", str(port),
                                     "--rendezvous-port", str(self.rendezvous_port)],
                                    env=full_env, stdout=out, stderr=subprocess.STDOUT)
        member = Member(proc, f"http://{HOST}:{port}", log)
        self.members.append(member)
        if wait:
            wait_until(lambda: self.listening(member), what=f"{pod} to answer HTTP", timeout=LISTEN_TIMEOUT,
                       poll=0.05, describe=member.logged)
        return member

    @staticmethod
    def listening(member: Member) -> int:
        if member.proc.poll() is not None:
            raise AssertionError(f"exited {member.proc.returncode} during startup:\n{member.logged()}")
        try:
            return member.get("/health")[0]
        except OSError as exc:
            raise NotYet(str(exc)) from None

    def complete(self, env: dict[str, str] | None = None) -> list[Member]:
        """The whole group started; returns once the leader's /health is 200."""
        members = [self.start(i, env=env) for i in range(self.size)]
        leader_healthy(members[0])
        return members

    def stop(self) -> None:
        for member in self.members:
            if member.proc.poll() is None:
                member.proc.kill()
            member.proc.wait()
        for held in self._held:
            held.release()


def leader_healthy(leader: Member) -> dict[str, Any]:
    def healthy() -> dict[str, Any]:
        code, body = leader.get("/health")
        assert code == 200, f"/health {code}: {body.get('reason')}"
        return dict(body)
    return wait_until(healthy, what="the group to complete", timeout=GROUP_TIMEOUT, poll=0.05,
                      describe=leader.logged)


def metric(member: Member, name: str) -> float:
    code, _, text = call(member.url + "/metrics")
    assert code == 200
    for line in text.splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample of {name} in /metrics:\n{text}")


def health_is(member: Member, code: int) -> None:
    assert member.get("/health")[0] == code


def log_has(member: Member, text: str) -> None:
    assert text in member.logged(), f"not in the log yet: {text}"


def joined_is(leader: Member, count: int) -> None:
    assert leader.get("/group")[1]["joined"] == count


def running_is(member: Member, value: float) -> None:
    assert metric(member, "vllm:num_requests_running") == value


@pytest.fixture
def group_of(tmp_path: Path) -> Iterator[Any]:
    groups: list[Group] = []

    def make(size: int) -> Group:
        groups.append(Group(tmp_path, size))
        return groups[-1]
    yield make
    for group in groups:
        group.stop()


def test_health_is_503_until_every_worker_has_joined(group_of: Any) -> None:
    group = group_of(3)
    leader = group.start(0)
    code, body = leader.get("/health")
    assert code == 503 and "0/2 workers joined" in body["reason"]
    group.start(1)
    wait_until(lambda: joined_is(leader, 1), what="worker 1 to join", timeout=GROUP_TIMEOUT, poll=0.05,
               describe=leader.logged)
    assert leader.get("/health")[0] == 503
    assert leader.get("/v1/completions", {"prompt": "hi"})[0] == 503
    group.start(2)
    health = leader_healthy(leader)
    assert health["complete"] and health["group_size"] == 3
    assert [(m["index"], m["pod"], m["address"]) for m in health["members"][1:]] == [
        (1, "demo-0-1", HOST), (2, "demo-0-2", HOST)]


def test_stray_connections_to_the_rendezvous_port_do_not_break_the_group(group_of: Any) -> None:
    """A tcpSocket probe or a misdirected HTTP client must not count as a (bad) member."""
    group = group_of(2)
    leader = group.start(0)
    socket.create_connection((HOST, group.rendezvous_port), timeout=5).close()
    with socket.create_connection((HOST, group.rendezvous_port), timeout=5) as stray:
        stray.sendall(b"GET /health HTTP/1.1\r\n\r\n")
        assert stray.recv(100) == b"", "the leader closes a connection that is not a join"
    group.start(1)
    assert leader_healthy(leader)["joined"] == 1
    assert "ignored a rendezvous connection from 127.0.0.1" in leader.logged()


def test_a_worker_started_before_its_leader_keeps_trying_and_joins(group_of: Any) -> None:
    group = group_of(2)
    worker = group.start(1)
    assert worker.get("/health")[0] == 503, "a worker is not healthy before it has joined"
    leader = group.start(0)
    assert leader_healthy(leader)["joined"] == 1
    wait_until(lambda: health_is(worker, 200), what="the worker to see the welcome", timeout=GROUP_TIMEOUT,
               poll=0.05, describe=worker.logged)


def test_completions_are_deterministic_openai_answers_naming_pod_and_revision(group_of: Any) -> None:
    leader, _ = group_of(2).complete(env={"LWSCONF_REVISION": "rev-1234"})
    request = {"model": MODEL, "prompt": "the quick brown fox", "max_tokens": 7}
    code, headers, text = call(leader.url + "/v1/completions", request)
    first, second = json.loads(text), leader.get("/v1/completions", request)[1]
    assert code == 200 and first["object"] == "text_completion" and first["model"] == MODEL
    assert first["usage"] == {"prompt_tokens": 4, "completion_tokens": 7, "total_tokens": 11}
    assert len(first["choices"][0]["text"].split()) == 7 and first["choices"][0]["finish_reason"] == "length"
    assert second["choices"] == first["choices"] and second["usage"] == first["usage"]
    other = leader.get("/v1/completions", {**request, "prompt": "another prompt"})[1]
    assert other["choices"][0]["text"] != first["choices"][0]["text"]
    assert first["lwsconf"]["pod"] == "demo-0" and first["lwsconf"]["revision"] == "rev-1234"
    assert (headers["X-Lwsconf-Pod"], headers["X-Lwsconf-Revision"]) == ("demo-0", "rev-1234")
    code, chat = leader.get("/v1/chat/completions", {"model": MODEL, "max_tokens": 3,
                                                      "messages": [{"role": "user", "content": "hello there"}]})
    assert code == 200 and chat["object"] == "chat.completion"
    message, usage = chat["choices"][0]["message"], chat["usage"]
    assert message["role"] == "assistant" and len(message["content"].split()) == 3
    assert usage["completion_tokens"] == 3 and usage["total_tokens"] == usage["prompt_tokens"] + 3
    assert leader.get("/v1/models")[1]["data"][0]["id"] == MODEL


def test_unknown_model_streaming_and_requests_sent_to_a_worker_are_refused_with_the_reason(group_of: Any) -> None:
    leader, worker = group_of(2).complete()
    code, body = leader.get("/v1/completions", {"model": "other/model", "prompt": "hi"})
    assert code == 404 and "`other/model` does not exist" in body["error"]["message"]
    code, body = leader.get("/v1/completions", {"prompt": "hi", "stream": True})
    assert code == 400 and "stream=true is not emulated" in body["error"]["message"]
    code, body = worker.get("/v1/completions", {"model": MODEL, "prompt": "hi"})
    assert code == 503 and "send them to the leader" in body["error"]["message"]


def test_metrics_use_vllm_names_and_count_a_running_request(group_of: Any) -> None:
    leader, _ = group_of(2).complete()
    code, headers, text = call(leader.url + "/metrics")
    assert code == 200 and headers["Content-Type"].startswith("text/plain")
    assert "# TYPE vllm:num_requests_running gauge" in text and "# TYPE vllm:num_requests_waiting gauge" in text
    assert f'vllm:num_requests_waiting{{model_name="{MODEL}"}} 0.0' in text
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(leader.get, "/v1/completions", {"prompt": "slow", "lwsconf_delay": 1.0})
        wait_until(lambda: running_is(leader, 1.0), what="one running request", timeout=GROUP_TIMEOUT, poll=0.05)
        assert slow.result(timeout=EXIT_TIMEOUT)[0] == 200
    running_is(leader, 0.0)
    assert metric(leader, "vllm:request_success_total") == 1.0


def test_requests_beyond_max_running_are_counted_as_waiting(group_of: Any) -> None:
    leader, _ = group_of(2).complete(env={"LWSCONF_MAX_RUNNING": "1"})
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        slow = [pool.submit(leader.get, "/v1/completions", {"prompt": f"slow {i}", "lwsconf_delay": 1.0})
                for i in range(2)]

        def one_running_one_waiting() -> None:
            running_is(leader, 1.0)
            assert metric(leader, "vllm:num_requests_waiting") == 1.0
        wait_until(one_running_one_waiting, what="1 running and 1 waiting", timeout=GROUP_TIMEOUT, poll=0.05)
        assert [future.result(timeout=EXIT_TIMEOUT)[0] for future in slow] == [200, 200]
    assert metric(leader, "vllm:num_requests_waiting") == 0.0


def test_a_leader_whose_group_never_completes_gives_up_naming_the_missing_workers(group_of: Any) -> None:
    leader = group_of(3).start(0, env={"LWSCONF_RENDEZVOUS_TIMEOUT": "0.5"}, wait=False)
    assert leader.must_exit() == 2
    assert "did not complete within 0.5s (--rendezvous-timeout): workers [1, 2] never joined" in leader.logged()


def test_a_worker_that_cannot_reach_its_leader_gives_up_after_the_join_timeout(group_of: Any,
                                                                              closed_port: int) -> None:
    """The leader's port refuses connections for the whole join timeout (tests/conftest.py's closed_port).

    Why not a port picked and released: another xdist worker's leader took one, answered the join and rejected
    it (a CI failure of the unit suite: "the leader rejected this worker").
    """
    group = group_of(2)
    group.rendezvous_port = closed_port
    worker = group.start(1, env={"LWSCONF_JOIN_TIMEOUT": "0.5"}, wait=False)
    assert worker.must_exit() == 2
    assert "could not reach the leader at 127.0.0.1:" in worker.logged() and "(--join-timeout)" in worker.logged()


@pytest.mark.parametrize(("second_size", "reason"), [
    (3, "duplicate worker index 1: pod demo-0-1b from 127.0.0.1, but pod demo-0-1 from 127.0.0.1 already joined"),
    (4, "worker 1 (pod demo-0-1b from 127.0.0.1) has group size 4, the leader has 3: "
        "every pod of a group must see the same LWS_GROUP_SIZE"),
], ids=["duplicate-index", "wrong-group-size"])
def test_a_bad_join_fails_leader_and_worker_loudly(group_of: Any, second_size: int, reason: str) -> None:
    group = group_of(3)
    leader = group.start(0)
    group.start(1)
    wait_until(lambda: joined_is(leader, 1), what="worker 1 to join", timeout=GROUP_TIMEOUT, poll=0.05,
               describe=leader.logged)
    bad = group.start(1, size=second_size, pod="demo-0-1b", wait=False)
    assert bad.must_exit() == 2 and leader.must_exit() == 2
    assert f"FATAL (exit 2): the leader rejected this worker: {reason}" in bad.logged()
    assert f"FATAL (exit 2): rendezvous failed: {reason}" in leader.logged()


@pytest.mark.parametrize(("env", "reason"), [
    ({"LWS_WORKER_INDEX": "2", "LWS_GROUP_SIZE": "2"}, "worker index 2 is out of range for group size 2 (valid: 0..1)"),
    ({"LWS_WORKER_INDEX": ""}, "must be integers: run this in a LeaderWorkerSet pod or pass --worker-index"),
    ({"LWS_LEADER_ADDRESS": ""}, "a worker needs LWS_LEADER_ADDRESS (or --leader-address)"),
    ({"LWSCONF_HEARTBEAT_TIMEOUT": "soon"}, "$LWSCONF_HEARTBEAT_TIMEOUT='soon' is not a valid float: fix the "
                                            "variable or pass --heartbeat-timeout"),
], ids=["index-out-of-range", "no-lws-env", "no-leader-address", "bad-option-variable"])
def test_a_misconfigured_pod_fails_at_startup_saying_why(group_of: Any, env: dict[str, str], reason: str) -> None:
    member = group_of(2).start(1, env=env, wait=False)
    assert member.must_exit() == 2
    assert reason in member.logged()


def test_a_killed_worker_fails_the_leader_and_then_the_other_workers(group_of: Any) -> None:
    leader, worker1, worker2 = group_of(3).complete()
    worker2.proc.kill()
    assert leader.must_exit() == 3
    assert "worker 2 (pod demo-0-2 at 127.0.0.1) went away" in leader.logged()
    assert worker1.must_exit() == 3
    assert "the leader at 127.0.0.1:" in worker1.logged() and "the group is broken" in worker1.logged()


def test_a_crash_requested_through_http_exits_with_that_code_and_fails_the_group(group_of: Any) -> None:
    leader, worker = group_of(2).complete()
    assert worker.get("/fault/crash?code=abc", {})[0] == 400
    code, body = worker.get("/fault/crash?code=9", {})
    assert (code, body) == (202, {"crashing": "demo-0-1", "code": 9})
    assert worker.must_exit() == 9
    assert "crashed on request (POST /fault/crash)" in worker.logged()
    assert leader.must_exit() == 3


def test_a_worker_of_another_revision_is_turned_away_and_the_leader_keeps_waiting(group_of: Any) -> None:
    group = group_of(2)
    leader = group.start(0, env={"LWSCONF_REVISION": "new"})
    stale = group.start(1, env={"LWSCONF_REVISION": "old"}, pod="demo-0-1-old", wait=False)
    assert stale.must_exit() == 2
    assert "is of revision old, this leader of new: a member of a previous incarnation" in stale.logged()
    health_is(leader, 503)
    group.start(1, env={"LWSCONF_REVISION": "new"})
    assert leader_healthy(leader)["complete"]


def test_a_frozen_worker_is_found_by_the_heartbeat_timeout(group_of: Any) -> None:
    leader, worker = group_of(2).complete()
    os.kill(worker.proc.pid, signal.SIGSTOP)
    try:
        assert leader.must_exit() == 3
    finally:
        os.kill(worker.proc.pid, signal.SIGCONT)
    assert "no heartbeat for 2s" in leader.logged()


def test_a_worker_exits_when_its_leader_is_killed(group_of: Any) -> None:
    leader, worker = group_of(2).complete()
    leader.proc.kill()
    assert worker.must_exit() == 3
    # How the kernel closes a killed process's socket depends on timing: FIN (the worker reads EOF: "connection
    # closed") or, when the worker's last heartbeat was still unread in the leader's receive buffer, RST
    # ("Connection reset by peer"; tcp_close sends a reset for unread data). Seen under load. Both are the leader
    # going away; any other reason is not.
    assert re.search(r"the leader at \S+ went away \((connection closed|\[Errno 104\] Connection reset by peer)\): "
                     r"the group is broken", worker.logged()), worker.logged()


def test_sigterm_finishes_the_in_flight_request_refuses_new_ones_and_exits_zero(group_of: Any) -> None:
    leader, worker = group_of(2).complete()
    port = int(leader.url.rsplit(":", 1)[1])
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(leader.get, "/v1/completions", {"prompt": "drain me", "max_tokens": 4, "lwsconf_delay": 1.5})
        wait_until(lambda: running_is(leader, 1.0), what="the slow request to run", timeout=GROUP_TIMEOUT, poll=0.05)
        leader.proc.send_signal(signal.SIGTERM)

        def refused() -> None:
            try:
                socket.create_connection((HOST, port), timeout=1).close()
            except (ConnectionRefusedError, ConnectionResetError):  # reset: queued as the listener closed
                return
            raise NotYet("the leader still accepts connections")
        wait_until(refused, what="the draining leader to refuse connections", timeout=EXIT_TIMEOUT, poll=0.02)
        assert not slow.done(), "the slow request finished before the drain could be observed"
        code, answer = slow.result(timeout=EXIT_TIMEOUT)
    assert code == 200 and answer["usage"]["completion_tokens"] == 4
    assert leader.must_exit() == 0 and worker.must_exit() == 0
    # at least the slow one; a just-answered /metrics poll may still be closing its connection
    assert re.search(r"SIGTERM: draining [1-9]\d* in-flight request", leader.logged()), leader.logged()


def test_a_terminated_worker_stays_in_the_group_until_its_drain_timeout(group_of: Any) -> None:
    """Why: deleted with its group, a worker must outlive its draining leader; deleted alone, it leaves in time."""
    leader, worker = group_of(2).complete(env={"LWSCONF_DRAIN_TIMEOUT": "1"})
    worker.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: log_has(worker, "SIGTERM: draining"), what="the worker to start draining",
               timeout=EXIT_TIMEOUT, poll=0.05, describe=worker.logged)
    assert leader.get("/health")[0] == 200, "the group still serves while the worker drains"
    assert worker.must_exit() == 0
    assert "the leader was still up after 1s (--drain-timeout); leaving the group" in worker.logged()
    assert leader.must_exit() == 3


def test_program_imports_only_the_standard_library() -> None:
    """It is mounted alone into arbitrary python images: a third-party or lwsconf import would fail there."""
    tree = ast.parse(emulator.PROGRAM.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


# --- ranks and a slow start, in vLLM's shape (issue 32) ---------------------------------------------

RANK_LINE = re.compile(r"rank (\d+) in world size (\d+) is assigned as DP rank 0, PP rank (\d+), TP rank (\d+)")


def ranks_logged(member: Member) -> list[tuple[int, ...]]:
    return [tuple(map(int, m)) for m in RANK_LINE.findall(member.logged())]


def test_every_member_logs_the_ranks_it_holds_once_its_group_has_formed(group_of: Any) -> None:
    """TP 2 x PP 3 over a group of 3: member i holds ranks 2i and 2i+1, TP fastest, as vLLM lays them out."""
    group = group_of(3)
    leader = group.start(0, env={"LWSCONF_TENSOR_PARALLEL": "2", "LWSCONF_PIPELINE_PARALLEL": "3"})
    first = group.start(1, env={"LWSCONF_TENSOR_PARALLEL": "2", "LWSCONF_PIPELINE_PARALLEL": "3"})
    wait_until(lambda: health_is(first, 200), what="worker 1 to join", timeout=GROUP_TIMEOUT, poll=0.05,
               describe=first.logged)
    assert ranks_logged(leader) == [], "the leader's ranks are not up before its whole group is"
    second = group.start(2, env={"LWSCONF_TENSOR_PARALLEL": "2", "LWSCONF_PIPELINE_PARALLEL": "3"})
    leader_healthy(leader)
    for member, want in ((leader, [(0, 6, 0, 0), (1, 6, 0, 1)]), (first, [(2, 6, 1, 0), (3, 6, 1, 1)]),
                         (second, [(4, 6, 2, 0), (5, 6, 2, 1)])):
        wait_until(lambda m=member: log_has(m, "in world size 6"), what="the member's rank lines",
                   timeout=GROUP_TIMEOUT, poll=0.05, describe=member.logged)
        assert ranks_logged(member) == want, member.logged()
    assert leader.get("/group")[1]["ranks"] == [0, 1]


def test_a_world_the_group_cannot_split_evenly_is_a_loud_startup_failure(group_of: Any) -> None:
    leader = group_of(2).start(0, env={"LWSCONF_PIPELINE_PARALLEL": "3"}, wait=False)
    assert leader.must_exit() == 2
    assert "a world of TP 1 x PP 3 = 3 ranks cannot be split evenly over a group of 2" in leader.logged()


def test_a_slow_start_keeps_health_503_while_the_model_loads_then_serves(group_of: Any) -> None:
    group = group_of(2)
    leader, worker = group.start(0, env={"LWSCONF_LOAD_SECONDS": "600"}), group.start(1)
    wait_until(lambda: log_has(leader, "Loading safetensors checkpoint shards:   0% Completed | 0/4"),
               what="the leader to start loading", timeout=GROUP_TIMEOUT, poll=0.05, describe=leader.logged)
    code, body = leader.get("/health")
    assert code == 503 and body["complete"] and not body["loaded"], body
    assert body["reason"] == "the model is still loading (0/4 checkpoint shards)", body
    assert leader.get("/v1/completions", {"model": MODEL, "prompt": "x"})[0] == 503
    assert ranks_logged(leader) == [(0, 2, 0, 0)], "ranks come before the weights, as in vLLM"
    assert leader_healthy(worker)["loaded"], "the worker loads in no time (its own --load-seconds is 0)"


def test_a_short_load_ends_in_a_server_that_answers(group_of: Any) -> None:
    group = group_of(2)
    leader = group.start(0, env={"LWSCONF_LOAD_SECONDS": "0.4"})
    group.start(1)
    health = leader_healthy(leader)
    assert health["loaded"] and "Loading safetensors checkpoint shards: 100% Completed | 4/4" in leader.logged()
    assert leader.get("/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 2})[0] == 200
