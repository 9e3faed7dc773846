"""Interrupted runs leave nothing behind: real runs signalled at points spread over their life.

Each `Point` starts a real run as a user or CI would (`lwsconf sim up`, `pytest conformance`
with and without xdist workers, `lwsconf run`, `make conformance`, a run against an existing cluster
through `--cluster=kubeconfig`, a run on the real control plane with `--cluster=local` when it is built),
waits for a progress line marking a phase (starting, cluster up,
implementation installed, test running, teardown), then a random delay drawn from the point's range
with a fixed seed, and sends SIGINT, SIGTERM or SIGHUP, to the process alone or to its whole group
as a terminal's Ctrl-C does; some points signal again during teardown, one three times (abandon);
the local ones send SIGINT and SIGTERM 50 ms apart, as `timeout` passing on a `pkill -INT` does.
After the run exits (at most `EXIT_TIMEOUT`), it counts what is left:

* processes carrying the run's LWSCONF_RUN_ID (`lwsconf.shutdown.marked_processes`): the run, its
  xdist workers, the reconciler, device plugins, every container process and exec probe;
* anything in the run's private TMPDIR except the machine-wide pod-network lock folder (and pytest's
  own `pytest-of-*` base folder), and any pod-network lock still held;
* `lwsconf sim up`'s kubeconfig; with `--cluster=kubeconfig`, test namespaces not being deleted;
* the terminal: the attributes of the pseudo-terminal the run had as stdin must be unchanged.

`tests/test_interrupts.py` runs the points and asserts zero leftovers; `make bench` records the
figures (points tried, leftovers found, seconds from signal to exit) in the "interrupts" section.

    python -m bench.interrupts --out bench/results.json [--seed N] [--group NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config

from bench._simproc import BenchError, SimProcess, load_average, machine, wait_for, write_results
from lwsconf import shutdown
from lwsconf.waits import observe

REPO = Path(__file__).resolve().parents[1]
QUICK_TEST = "EnvVarsInEveryContainer"
"""A conformance test with real container processes (2 groups of 3 probe pods) that runs in seconds."""
EXIT_TIMEOUT = 150.0
"""Seconds a signalled run may take to clean up and exit."""
MARKER_TIMEOUT = 120.0
"""Seconds to wait for the progress line a point is signalled after."""
SETTLE = 5.0
"""Seconds for processes the kernel is already killing (parent-death signal) to disappear."""
SECOND_AFTER = 0.8
"""Seconds between repeated signals (more than `shutdown.SAME_PRESS`: each counts as a press)."""
DEFAULT_SEED = 1313
ATTEMPTS = 3
"""Tries of a point whose run ended before its signal (each with half the delay)."""

SIM_UP_READY = "kubeconfig written to"
CLUSTER_STARTING = "cluster sim: starting or connecting ..."
CLUSTER_UP = "cluster sim: starting or connecting: done"
INSTALLED = "installing and waiting until it serves: done"
TEARDOWN = "cluster sim: stopping or disconnecting ..."
LOCAL_STARTING = "cluster local: starting or connecting ..."
LOCAL_TEARDOWN = "cluster local: stopping or disconnecting ..."
PAIR_APART = 0.05
"""Seconds between the SIGINT and the SIGTERM of a pair (one press: within `shutdown.SAME_PRESS`)."""
KUBECONFIG_UP = "cluster kubeconfig: starting or connecting: done"
WORKERS_UP = "created: 2/2 workers"
COLLECTED = "workers ["

INT, TERM, HUP = signal.SIGINT, signal.SIGTERM, signal.SIGHUP


@dataclass(frozen=True)
class Point:
    """One interruption: what runs, after which progress line and how long, which signals to whom."""

    name: str
    command: str
    """sim-up, pytest, pytest-n2, lwsconf-run, make, or kubeconfig (pytest against an existing cluster)."""
    after: str | None
    delay: tuple[float, float]
    signals: tuple[signal.Signals, ...] = (INT,)
    to_group: bool = True
    """True: the whole process group (a terminal's Ctrl-C); False: the top process only (`kill PID`)."""
    pod: bool = False
    """sim-up: run a container process first and signal once it runs."""
    apart: float = SECOND_AFTER
    """Seconds between this point's signals."""


GROUPS: dict[str, list[Point]] = {
    "sim-up": [
        Point("starting-sigint-group", "sim-up", None, (0.3, 1.2)),
        Point("starting-sigterm", "sim-up", None, (1.0, 2.0), (TERM,), to_group=False),
        Point("serving-sigterm", "sim-up", SIM_UP_READY, (0.0, 0.5), (TERM,), to_group=False),
        Point("serving-sighup", "sim-up", SIM_UP_READY, (0.0, 0.5), (HUP,), to_group=False),
        Point("pod-running-sigint-group", "sim-up", SIM_UP_READY, (0.0, 0.3), pod=True),
        Point("pod-running-sigterm", "sim-up", SIM_UP_READY, (0.0, 0.3), (TERM,), to_group=False, pod=True),
        Point("pod-running-sigint-twice", "sim-up", SIM_UP_READY, (0.0, 0.3), (INT, INT), pod=True),
        Point("pod-running-abandon", "sim-up", SIM_UP_READY, (0.0, 0.3), (TERM, TERM, TERM), to_group=False,
              pod=True),
    ],
    "pytest": [
        Point("collecting-sigint-group", "pytest", None, (0.5, 2.0)),
        Point("cluster-starting-sigterm", "pytest", CLUSTER_STARTING, (0.0, 1.0), (TERM,), to_group=False),
        Point("installing-sigint-group", "pytest", CLUSTER_UP, (0.0, 0.6)),
        Point("installing-sigterm-group", "pytest", CLUSTER_UP, (0.0, 0.6), (TERM,)),
        Point("test-running-sigterm", "pytest", INSTALLED, (0.5, 3.0), (TERM,), to_group=False),
        Point("test-running-sigint-twice", "pytest", INSTALLED, (0.5, 3.0), (INT, INT)),
        Point("teardown-sigint-group", "pytest", TEARDOWN, (0.0, 0.2)),
        Point("teardown-sigterm", "pytest", TEARDOWN, (0.0, 0.2), (TERM,), to_group=False),
    ],
    "xdist": [
        Point("workers-starting-sigint-group", "pytest-n2", WORKERS_UP, (0.0, 1.5)),
        Point("clusters-starting-sigterm-controller", "pytest-n2", COLLECTED, (0.5, 2.0), (TERM,), to_group=False),
        Point("test-running-sigterm-group", "pytest-n2", COLLECTED, (3.0, 6.0), (TERM,)),
        Point("test-running-sigint-twice", "pytest-n2", COLLECTED, (3.0, 6.0), (INT, INT)),
    ],
    "wrappers": [
        Point("lwsconf-run-test-running-sigterm", "lwsconf-run", INSTALLED, (0.5, 2.5), (TERM,), to_group=False),
        Point("lwsconf-run-installing-sigint-group", "lwsconf-run", CLUSTER_UP, (0.0, 0.6)),
        Point("make-conformance-sigterm-make", "make", COLLECTED, (2.0, 5.0), (TERM,), to_group=False),
        Point("make-conformance-sigint-group", "make", COLLECTED, (2.0, 5.0)),
    ],
    "kubeconfig": [
        Point("test-running-sigterm", "kubeconfig", INSTALLED, (0.5, 2.5), (TERM,), to_group=False),
        Point("test-running-sigint-group", "kubeconfig", INSTALLED, (1.5, 3.5)),
    ],
    "local": [  # only where `lwsconf controlplane build` has built the default release (`local_built`)
        Point("cluster-starting-sigint-sigterm-pair", "pytest-local", LOCAL_STARTING, (2.0, 8.0), (INT, TERM),
              to_group=False, apart=PAIR_APART),
        Point("test-running-sigint-sigterm-pair", "pytest-local", INSTALLED, (0.5, 3.0), (INT, TERM),
              to_group=False, apart=PAIR_APART),
        Point("teardown-sigint-group", "pytest-local", LOCAL_TEARDOWN, (0.0, 0.3)),
    ],
}


def local_built() -> bool:
    """The default release's control plane is built (the `local` group needs it; Go builds it)."""
    from lwsconf.controlplane import build, versions

    return build.installed(versions.resolve(None)) is not None


@dataclass
class Outcome:
    """What one interruption did and left."""

    group: str
    point: str
    delay: float
    signalled_at: float
    """Seconds from the start of the run to the first signal."""
    exit_code: int | None
    exit_seconds: float
    """Seconds from the first signal to the run's exit."""
    marked_at_signal: int
    """Processes of the run alive when the first signal was sent (the run itself, workers, containers)."""
    leftovers: list[str] = field(default_factory=list)
    output_tail: list[str] = field(default_factory=list)

    def describe(self) -> str:
        left = "\n  ".join(self.leftovers) or "nothing"
        tail = "\n    ".join(self.output_tail)
        return (f"{self.group}/{self.point}: signalled {self.signalled_at:.1f}s after start (+{self.delay:.2f}s "
                f"past its marker), exit {self.exit_code} {self.exit_seconds:.1f}s later, "
                f"{self.marked_at_signal} process(es) of the run at the signal; left:\n  {left}\n"
                f"  output tail:\n    {tail}")


# --- running one point -----------------------------------------------------------------------------

def command(point: Point, case_dir: Path, kubeconfig: Path | None = None) -> list[str]:
    """The argv of a point's run; reports and kubeconfigs go under `case_dir`, apart from its TMPDIR."""
    py = sys.executable
    suite = ["--all-features", f"--run-test={QUICK_TEST}", f"--lwsconf-reports={case_dir / 'reports'}"]
    pytest_args = ["-p", "no:cacheprovider", *suite]
    if point.command == "sim-up":
        return [py, "-m", "lwsconf.cli", "sim", "up", "--kubeconfig", str(case_dir / "sim" / "kubeconfig"),
                "--gpu-nodes", "1", "--cpu-nodes", "1"]
    if point.command in ("pytest", "pytest-n2"):
        workers = "0" if point.command == "pytest" else "2"
        return [py, "-m", "pytest", str(REPO / "conformance"), "--rootdir", str(REPO), "-n", workers, *pytest_args]
    if point.command == "pytest-local":
        return [py, "-m", "pytest", str(REPO / "conformance"), "--rootdir", str(REPO), "-n", "0", *pytest_args,
                "--cluster=local"]
    if point.command == "kubeconfig":
        assert kubeconfig is not None
        return [py, "-m", "pytest", str(REPO / "conformance"), "--rootdir", str(REPO), "-n", "0", *pytest_args,
                "--cluster=kubeconfig", f"--kubeconfig={kubeconfig}"]
    if point.command == "lwsconf-run":
        return [py, "-m", "lwsconf.cli", "run", "-n", "0", *pytest_args]
    if point.command == "make":
        return ["make", "-s", "-C", str(REPO), "-o", ".venv/.installed-stamp", "conformance",
                f"PY={py}", "PYTEST_WORKERS=2", f"CONFORMANCE_CLAIMS={' '.join(suite)}"]
    raise ValueError(f"unknown command {point.command!r}")


class Output:
    """A run's merged stdout/stderr, read by a thread, with the time each line arrived."""

    def __init__(self, stream: Any) -> None:
        self.start = time.monotonic()
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(f"{time.monotonic() - self.start:6.1f}s {line.rstrip()}")
            self._new.put(line)
        self._new.put(None)

    def wait_for(self, marker: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._new.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise BenchError(f"no line with {marker!r} within {timeout:g}s; output:\n" + self.tail(40)) from None
            if line is None:
                raise BenchError(f"the run ended before printing {marker!r}; output:\n" + self.tail(40))
            if marker in line:
                return

    def tail(self, count: int = 12) -> str:
        return "\n".join(self.lines[-count:])


def start_pod(kubeconfig: Path) -> None:
    """A pod whose container is a real process on the sim (python image, `python -c`), Running."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    core = client.CoreV1Api(api)
    try:
        core.create_namespaced_pod("default", {  # type: ignore[arg-type]
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"},
            "spec": {"terminationGracePeriodSeconds": 30, "containers": [{
                "name": "sleep", "image": "python:3.12-slim",
                "command": ["python", "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                            "time.sleep(3600)"]}]}})
        wait_for(lambda: observe.raw(core.read_namespaced_pod("sleeper", "default", _preload_content=False))
                 .get("status", {}).get("phase") == "Running",
                 what="pod default/sleeper Running", timeout=60, poll=0.1)
    finally:
        api.close()


def interrupt_in_phase(group: str, point: Point, rng: random.Random, base: Path,
                       kubeconfig: Path | None = None) -> Outcome:
    """`interrupt`, again with half the delay when the run had already ended at the signal (at most `ATTEMPTS`).

    Why: a run that ended before its signal did not test the point (CI's faster machine finished the quick test
    inside the drawn delay: "0 process(es) of the run at the signal").
    """
    scale = 1.0
    for _ in range(ATTEMPTS):
        outcome = interrupt(group, point, rng, base, kubeconfig, scale=scale)
        if outcome.marked_at_signal > 0:
            break
        scale /= 2
    return outcome


def interrupt(group: str, point: Point, rng: random.Random, base: Path, kubeconfig: Path | None = None,
              scale: float = 1.0) -> Outcome:
    """Run `point` once: start, wait for its phase, signal (`scale` times the drawn delay), wait, count leftovers."""
    case_dir = Path(tempfile.mkdtemp(prefix="p", dir=base))  # short: unix socket paths under it are capped
    tmpdir = case_dir / "tmp"
    tmpdir.mkdir()
    rid = f"interrupt-{os.getpid()}-{case_dir.name}"
    env = {**os.environ, "TMPDIR": str(tmpdir), shutdown.RUN_ID_ENV: rid, "PYTHONUNBUFFERED": "1"}
    delay = round(rng.uniform(*point.delay) * scale, 2)
    with _terminal() as (stdin, attrs_before):
        proc = subprocess.Popen(command(point, case_dir, kubeconfig), cwd=REPO, env=env, stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True)
        output = Output(proc.stdout)
        try:
            signalled, marked = _signal_at_phase(proc, point, output, delay, case_dir, rid)
            exit_code, exit_seconds = _wait_exit(proc, signalled)
        except BaseException:
            _kill_group(proc)
            raise
        leftovers = _leftovers(rid, case_dir, kubeconfig if point.command == "kubeconfig" else None)
        if exit_code is None:
            leftovers.insert(0, f"the run did not exit within {EXIT_TIMEOUT:g}s of the signal")
        if termios.tcgetattr(stdin) != attrs_before:
            leftovers.append("the terminal's attributes changed (stdin was a pseudo-terminal)")
    _kill_group(proc)
    for left in shutdown.marked_processes(rid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(left.pid, signal.SIGKILL)
    return Outcome(group, point.name, delay, round(signalled - output.start, 2), exit_code, exit_seconds, marked,
                   leftovers, output.lines[-60:])


@contextlib.contextmanager
def _terminal() -> Iterator[tuple[int, list[Any]]]:
    """A pseudo-terminal for the run's stdin and its attributes before the run."""
    leader, follower = os.openpty()
    try:
        yield follower, termios.tcgetattr(follower)
    finally:
        os.close(follower)
        os.close(leader)


def _signal_at_phase(proc: subprocess.Popen[str], point: Point, output: Output, delay: float, case_dir: Path,
                     rid: str) -> tuple[float, int]:
    if point.after is not None:
        output.wait_for(point.after, MARKER_TIMEOUT)
    if point.pod:
        start_pod(case_dir / "sim" / "kubeconfig")
    time.sleep(delay)  # the point's random offset into its phase (not a wait for a condition)
    marked = len(shutdown.marked_processes(rid))
    signalled = time.monotonic()
    for index, signum in enumerate(point.signals):
        if index:
            time.sleep(point.apart)  # SECOND_AFTER: a later press, apart from the first (shutdown.SAME_PRESS)
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            (os.killpg if point.to_group else os.kill)(proc.pid, signum)
    return signalled, marked


def _wait_exit(proc: subprocess.Popen[str], signalled: float) -> tuple[int | None, float]:
    """The exit code (None: still running after `EXIT_TIMEOUT`) and the seconds since the first signal."""
    try:
        code: int | None = proc.wait(max(signalled + EXIT_TIMEOUT - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        code = None
    return code, round(time.monotonic() - signalled, 2)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


# --- counting what is left ------------------------------------------------------------------------

def _leftovers(rid: str, case_dir: Path, kubeconfig: Path | None) -> list[str]:
    found = [f"process {p}" for p in _settled_processes(rid)]
    tmpdir = case_dir / "tmp"
    found += [f"temp entry {tmpdir / e.name}" for e in sorted(tmpdir.iterdir())
              if e.name != "lwsconf-podnet" and not e.name.startswith("pytest-of-")]
    found += [f"pod network lock still held: {lock}" for lock in _held_locks(tmpdir / "lwsconf-podnet")]
    sim_kubeconfig = case_dir / "sim" / "kubeconfig"
    if sim_kubeconfig.exists():
        found.append(f"sim up's kubeconfig {sim_kubeconfig}")
    if kubeconfig is not None:
        found += [f"namespace {n}" for n in live_test_namespaces(kubeconfig)]
    return found


def _settled_processes(rid: str) -> list[shutdown.MarkedProcess]:
    """The run's processes still alive once those the kernel is killing had `SETTLE` seconds to go."""
    deadline = time.monotonic() + SETTLE
    while True:
        left = shutdown.marked_processes(rid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)  # polling /proc: processes have no event to wait on from here


def _held_locks(folder: Path) -> list[Path]:
    held = []
    for lock in sorted(folder.glob("*.lock")) if folder.is_dir() else []:
        with lock.open("ab") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                held.append(lock)
            else:
                fcntl.flock(handle, fcntl.LOCK_UN)
    return held


def live_test_namespaces(kubeconfig: Path) -> list[str]:
    """Namespaces a conformance run created (label lwsconf.dev/test=true) that are not being deleted."""
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    try:
        items = observe.raw(client.CoreV1Api(api).list_namespace(label_selector="lwsconf.dev/test=true",
                                                                 _preload_content=False))["items"]
    finally:
        api.close()
    return sorted(str(ns["metadata"]["name"]) for ns in items if not ns["metadata"].get("deletionTimestamp"))


# --- groups and the figures -------------------------------------------------------------------------

def run_group(group: str, rng: random.Random, base: Path) -> list[Outcome]:
    """Every point of one group (the kubeconfig group shares one `lwsconf sim up` cluster, never signalled)."""
    points = GROUPS[group]
    if group != "kubeconfig":
        return [interrupt_in_phase(group, point, rng, base) for point in points]
    with SimProcess(gpu_nodes=0, cpu_nodes=2) as sim:
        outcomes = [interrupt_in_phase(group, point, rng, base, sim.kubeconfig) for point in points]
        assert sim.proc is not None
        if sim.proc.poll() is not None:
            raise BenchError(f"the cluster the kubeconfig points used stopped during the runs:\n{sim.log_tail()}")
        return outcomes


def summary(outcomes: Sequence[Outcome], seed: int) -> dict[str, Any]:
    exits = sorted(o.exit_seconds for o in outcomes if o.exit_code is not None)
    return {
        "seed": seed, "points": len(outcomes), "points_with_leftovers": sum(1 for o in outcomes if o.leftovers),
        "leftovers": sum(len(o.leftovers) for o in outcomes),
        "signal_to_exit_s": {"median": exits[len(exits) // 2] if exits else None, "max": exits[-1] if exits else None},
        "commands": sorted({p.command for points in GROUPS.values() for p in points}),
        "per_point": [{k: v for k, v in asdict(o).items() if k != "output_tail"} for o in outcomes],
        "machine": machine(), "load_average": load_average(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--group", action="append", choices=sorted(GROUPS), help="only these groups (repeatable)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"interrupts: seed {args.seed}", flush=True)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="lwsi-", dir="/tmp") as base:
        for group in args.group or [g for g in GROUPS if g != "local" or local_built()]:
            for outcome in run_group(group, rng, Path(base)):
                outcomes.append(outcome)
                state = f"{len(outcome.leftovers)} leftover(s)" if outcome.leftovers else "clean"
                print(f"  {group}/{outcome.point}: {state}, exit {outcome.exit_code} "
                      f"{outcome.exit_seconds:.1f}s after the signal", flush=True)
                if outcome.leftovers:
                    print(outcome.describe(), flush=True)
    result = summary(outcomes, args.seed)
    write_results(args.out, "interrupts", result)
    print(f"interrupts: {result['points']} points, {result['leftovers']} leftover(s); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
