"""What the sim benchmarks share: `lwsconf sim up` in a subprocess, a pod watch, RSS, the results file.

The cluster runs as users run it (`lwsconf sim up`, its own process) and the benchmarks drive it
with the official Kubernetes client, so a figure here is what a test run or a demo sees. Waits are
bounded and fail with the observed state; nothing here asserts a target (README.md, Benchmarks).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, config

from lwsconf.waits import observe

Obj = dict[str, Any]


class BenchError(RuntimeError):
    """A benchmark could not measure what it set out to; the message says what was observed."""


def machine() -> Obj:
    """The facts a figure depends on: CPUs usable by this process, CPU model, memory, Python."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_gb = float("nan")
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
    return {"cpus": len(os.sched_getaffinity(0)), "cpu_model": model, "memory_gb": mem_gb,
            "python": platform.python_version(), "platform": platform.platform(terse=True)}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def rss_mb(pid: int) -> float:
    """Resident memory of one process in MiB (0 when it has gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_rss(pid: int) -> tuple[float, float, int]:
    """(RSS of `pid`, RSS of it plus all descendants, number of descendants), in MiB."""
    tree, seen, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        seen.append(current)
        todo.extend(tree.get(current, []))
    own = rss_mb(pid)
    return round(own, 1), round(own + sum(rss_mb(p) for p in seen[1:]), 1), len(seen) - 1


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (0 when it has gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every figure here."""
    return [round(x, 2) for x in os.getloadavg()]


def write_results(out: Path, key: str, results: Obj) -> None:
    """Merge `results` into the JSON file under `key`, keeping the other benchmarks' sections."""
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(out.read_text()) if out.exists() else {}
    existing[key] = results
    out.write_text(json.dumps(existing, indent=2) + "\n")


def wait_for(check: Callable[[], Any], *, what: str, timeout: float, poll: float = 0.02,
             describe: Callable[[], str] | None = None) -> Any:
    """Poll `check` until it returns something truthy; BenchError with `describe()` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            state = describe() if describe else ""
            raise BenchError(f"timed out after {timeout:g}s waiting for {what}\n{state}")
        time.sleep(poll)


class SimProcess:
    """`lwsconf sim up` in a subprocess with its own kubeconfig; `api` is an official client of it."""

    def __init__(self, *, gpu_nodes: int = 0, cpu_nodes: int = 8, stages: str = "fast",
                 start_timeout: float = 60) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lwsconf-bench-")
        self.kubeconfig = Path(self._tmp.name) / "kubeconfig"
        self.log = Path(self._tmp.name) / "sim.log"
        self.nodes = gpu_nodes + cpu_nodes
        self.argv = [sys.executable, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(self.kubeconfig),
                     "--gpu-nodes", str(gpu_nodes), "--cpu-nodes", str(cpu_nodes), "--stages", stages]
        self.command = shlex.join(["lwsconf", *self.argv[3:5], "--gpu-nodes", str(gpu_nodes),
                                   "--cpu-nodes", str(cpu_nodes), "--stages", stages])
        self._start_timeout = start_timeout
        self.proc: subprocess.Popen[str] | None = None
        self.api: client.ApiClient | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def __enter__(self) -> SimProcess:
        with self.log.open("w") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=log, text=True)
        self._await_line("kubeconfig written to")
        self.api = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        core = client.CoreV1Api(self.api)

        def nodes() -> list[dict[str, Any]]:
            return list(observe.raw(core.list_node(_preload_content=False))["items"])

        def nodes_ready() -> bool:
            items = nodes()
            ready = [n for n in items if any(c["type"] == "Ready" and c["status"] == "True"
                                             for c in (n.get("status") or {}).get("conditions") or [])]
            return len(ready) >= self.nodes

        wait_for(nodes_ready, what=f"{self.nodes} Ready nodes", timeout=self._start_timeout, poll=0.1,
                 describe=lambda: f"nodes: {[n['metadata']['name'] for n in nodes()]}\n{self.log_tail()}")
        return self

    def _await_line(self, marker: str) -> None:
        """Read the sim's stdout (in a thread: a pipe read cannot time out) until a line has `marker`."""
        assert self.proc is not None and self.proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.proc.stdout

        def pump() -> None:
            for line in stdout:
                lines.put(line)
        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + self._start_timeout
        seen = []
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(queue.Empty):
                line = lines.get(timeout=0.2)
                seen.append(line.rstrip())
                if marker in line:
                    return
        self.__exit__()
        raise BenchError(f"`{self.command}` did not print {marker!r} within {self._start_timeout:g}s; "
                         f"stdout: {seen}\nlog tail:\n{self.log_tail()}")

    def __exit__(self, *exc: object) -> None:
        if self.api is not None:
            self.api.close()  # type: ignore[no-untyped-call]
            self.api = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                print(f"sim (pid {self.proc.pid}) did not stop within 60 s of SIGTERM; killing it", file=sys.stderr)
                self.proc.kill()
                self.proc.wait(10)
        self._tmp.cleanup()


def pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class PodWatch:
    """A watch on one namespace's pods (official client, raw JSON lines) in a thread.

    Records, per pod UID (a recreated pod counts apart), the first time it was seen, bound to a
    node, Running and Ready, and when it was deleted.
    """

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.ready: dict[str, float] = {}
        self.deleted: dict[str, float] = {}
        self.names: dict[str, str] = {}
        self.events = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._cond = threading.Condition()
        listing = observe.raw(self.core.list_namespaced_pod(namespace, _preload_content=False))
        self._rv = listing["metadata"]["resourceVersion"]
        for pod in listing["items"]:
            self._record("ADDED", pod, time.perf_counter())
        self._thread = threading.Thread(target=self._run, name=f"watch-{namespace}", daemon=True)
        self._thread.start()

    def _record(self, kind: str, pod: Obj, now: float) -> None:
        uid = pod["metadata"]["uid"]
        self.names[uid] = pod["metadata"]["name"]
        self.added.setdefault(uid, now)
        if (pod.get("spec") or {}).get("nodeName"):
            self.bound.setdefault(uid, now)
        if (pod.get("status") or {}).get("phase") == "Running":
            self.running.setdefault(uid, now)
        if pod_ready(pod):
            self.ready.setdefault(uid, now)
        if kind == "DELETED":
            self.deleted.setdefault(uid, now)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                reply: Any = self.core.list_namespaced_pod(self.namespace, watch=True, resource_version=self._rv,
                                                           allow_watch_bookmarks=True, timeout_seconds=30,
                                                           _preload_content=False)
                try:
                    for line in _lines(reply):
                        if self._stop.is_set():
                            break
                        self._handle(json.loads(line))
                finally:
                    reply.release_conn()
        except BaseException as exc:  # noqa: BLE001 - reported to the waiter, which raises BenchError
            self.error = exc
        with self._cond:
            self._cond.notify_all()

    def _handle(self, event: Obj) -> None:
        now = time.perf_counter()
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            raise BenchError(f"pod watch failed: {obj}")
        self._rv = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            return
        with self._cond:
            self.events += 1
            self._record(kind, obj, now)
            self._cond.notify_all()

    def wait(self, predicate: Callable[[PodWatch], bool], *, what: str, timeout: float) -> None:
        """Block until `predicate(self)` holds; BenchError saying what was counted after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                if self.error is not None:
                    raise BenchError(f"pod watch on {self.namespace} stopped: {self.error!r}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"timed out after {timeout:g}s waiting for {what} in {self.namespace}: "
                                     f"{self.summary()}")
                self._cond.wait(min(left, 0.5))

    def summary(self) -> str:
        return (f"pods seen {len(self.added)}, bound {len(self.bound)}, Running {len(self.running)}, "
                f"Ready {len(self.ready)}, "
                f"deleted {len(self.deleted)} ({self.events} watch events)")

    def close(self) -> None:
        self._stop.set()


def _lines(reply: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a streaming urllib3 response."""
    pending = b""
    for chunk in reply.stream(64 * 1024):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending
