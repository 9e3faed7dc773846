"""What `lwsconf fidelity --topics nodes` found the sim's kubelet saying differently from the real kubelet 1.37.2,
each rule pinned here (pure): termination messages, conditions of a terminal pod, their order and
observedGeneration, event names, a refused probe connection's words."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from lwsconf.sim.nodes.kubelet import events, probes, status, termination
from lwsconf.sim.nodes.kubelet import state as st

NOW = "2026-01-01T00:00:00Z"


def _pod(generation: int = 1, policy: str = "Never") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "generation": generation},
            "spec": {"restartPolicy": policy, "containers": [{"name": "a"}]},
            "status": {"conditions": [{"type": "DisruptionTarget", "status": "True"},
                                      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}]}}


def _state(state: str, code: int | None) -> st.PodState:
    pod_state = st.PodState("u", "127.42.0.1", admitted=True, sandbox=True, pod_ip="127.42.1.2")
    pod_state.phase = None if state == "running" else ("Succeeded" if code == 0 else "Failed")
    rec = st.ContainerRecord(spec={"name": "a", "image": "img:1"}, state=state, exit_code=code)
    rec.container_id, rec.started_at = "containerd://x", NOW
    pod_state.containers.append(rec)
    return pod_state


def _conditions(got: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["type"], c["status"], c.get("reason"), c.get("message"), c.get("observedGeneration"))
            for c in got["conditions"]]


def test_conditions_order_generation_and_terminal_reasons() -> None:
    succeeded = status.pod_status(_pod(generation=3), _state("done", 0), now=NOW)
    assert succeeded["observedGeneration"] == 3
    assert _conditions(succeeded) == [
        ("DisruptionTarget", "True", None, None, None),
        ("PodReadyToStartContainers", "False", "PodSandboxNotReady", "pod sandbox is not ready", 3),
        ("Initialized", "True", "PodCompleted", None, 3),
        ("Ready", "False", "PodCompleted", None, 3),
        ("ContainersReady", "False", "PodCompleted", None, 3),
        ("PodScheduled", "True", None, None, 3)]
    # the scheduler's PodScheduled keeps its transition time: it did not change status
    assert succeeded["conditions"][-1]["lastTransitionTime"] == "t0"
    failed = status.pod_status(_pod(), _state("done", 2), now=NOW)
    assert [c[:4] for c in _conditions(failed)][2:5] == [
        ("Initialized", "True", None, None), ("Ready", "False", "PodFailed", None),
        ("ContainersReady", "False", "PodFailed", None)]


def test_termination_message_from_the_file_or_the_logs_tail(tmp_path: Path) -> None:
    spec: dict[str, Any] = {"name": "a"}
    message = termination.file_for(tmp_path / "containers" / "a")
    assert message.stat().st_mode & 0o777 == 0o666 and termination.message_path(spec) == "/dev/termination-log"
    log = tmp_path / "0.log"
    log.write_text("".join(f"2026-01-01T00:00:00.000000000Z stdout F line {i}\n" for i in range(100)))
    assert termination.read(spec, message, exit_code=1, reason="", log_path=log) == ""
    fallback = {**spec, "terminationMessagePolicy": "FallbackToLogsOnError"}
    tail = termination.read(fallback, message, exit_code=1, reason="", log_path=log)
    assert tail.splitlines()[0] == "line 20" and len(tail.splitlines()) == termination.MAX_LOG_LINES
    assert termination.read(fallback, message, exit_code=0, reason="", log_path=log) == ""
    message.write_text("x" * 5000 + "said")
    assert termination.read(fallback, message, exit_code=1, reason="", log_path=log).endswith("said")
    assert len(termination.read(spec, message, exit_code=0, reason="", log_path=log)) == termination.MAX_FILE_BYTES
    assert termination.message_path({"name": "a", "terminationMessagePath": ""}) == ""


def test_event_names_sort_in_the_order_recorded() -> None:
    assert events.event_name("p", 0x18eec09f42bd4db8) == "p.18eec09f42bd4db8"
    assert events.event_name("p", 1_700_000_000_000_000_001) > events.event_name("p", 1_700_000_000_000_000_000)


def test_a_refused_probe_connection_is_worded_as_go_does() -> None:
    refused = OSError(errno.ECONNREFUSED, "Connect call failed ('127.0.0.1', 9)")
    assert probes._dial_error(refused) == "connection refused"
