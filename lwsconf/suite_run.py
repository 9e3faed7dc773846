"""`lwsconf run`: the conformance suite, taking the same options as `pytest conformance/`.

The suite (`conformance/`) and its pytest plugin (`fixtures/`) live beside the `lwsconf` package in the
source tree: they are test code, run by pytest, and are not importable packages of the installation. A
source checkout installed in editable mode (what `make` creates) runs them in place; a wheel carries the
same files in `lwsconf/_suite/` (copied there by `setup.py` at build time), so `pip install lwsconf` then
`lwsconf run` works from any directory. Either way the suite's folder is pytest's rootdir, which puts it
on `sys.path`, so the suite imports `conformance` and `fixtures` the same way. `lwsconf run` runs pytest
on the suite in a child process with the user's arguments, and returns pytest's exit status (0 passed,
1 tests failed, 2 interrupted, 4 usage error). Reports go to `reports/` under the current directory.

Ctrl-C reaches the child too (same process group), and every SIGINT, SIGTERM or SIGHUP sent to this
process alone is passed on to it (the child counts a signal it gets both ways once, `lwsconf.shutdown`):
pytest then tears the session down (namespaces, the simulated cluster, the reference reconciler) while
this process waits for it instead of exiting first and leaving it behind.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import lwsconf
from lwsconf import project_files, shutdown

DEFAULT_WORKERS = "2"
"""pytest-xdist workers when the arguments choose none, as `make conformance` uses on 2 cores."""

USAGE = """usage: lwsconf run [SUITE OR PYTEST OPTIONS ...]

Runs the LeaderWorkerSet conformance suite (pytest conformance/) and exits with pytest's status.
Suite options (see conformance/README.md; every other pytest option works too):
  --cluster=sim|local|kind|kubeconfig where to run (default sim: an embedded cluster for this run)
  --kubeconfig=PATH --context=NAME
  --lws-impl={implementations}
  --controller-deployment=NS/NAME  --allow-controller-restart   (LWSControllerRestart tests)
  --profiles=LWS-CORE,LWS-EXTENDED,LWS-SERVING  --supported-features=...  --exempt-features=...
  --all-features  --skip-tests=A,B  --run-test=NAME  --fail-fast  --keep-namespaces
  --timeout-config=FILE  --timeout-overrides="Name:seconds;..."  --lwsconf-options=FILE
  --serving-server=emulator|vllm  --vllm-model=...  --vllm-image=...  (GPU acceptance: README, GPU section)
  -n N                            parallel workers (default 2; -n 0 runs in this process)
Reports go to reports/<run>/ and reports/latest/ (junit.xml, conformance-report.yaml, summary.md, report.html).
"""




def _holds_suite(root: Path) -> bool:
    return (root / "conformance" / "conftest.py").is_file() and (root / "fixtures" / "plugin.py").is_file()


def suite_root(package_file: str | None = None) -> Path | None:
    """Where `conformance/` and `fixtures/` are: the source checkout lwsconf runs from, else the copy a
    wheel installed in `lwsconf/_suite/`; None when neither holds them (a broken or partial install)."""
    package = Path(package_file or lwsconf.__file__).resolve().parent
    for root in project_files.roots(package):
        if _holds_suite(root):
            return root
    return None


def is_installed_suite(root: Path) -> bool:
    """Whether `root` is a wheel's copy of the suite (in site-packages) rather than a source checkout."""
    return root.name == project_files.INSTALLED_SUITE and root.parent.name == "lwsconf"


def pytest_command(root: Path, args: Sequence[str], python: str = sys.executable) -> list[str]:
    """The pytest invocation for the suite: the user's arguments, plus `-n 2` when they choose no workers.

    An installed suite also runs without pytest's cache plugin, which would otherwise write
    `.pytest_cache/` into site-packages (often read-only), and with `-p no:...` nothing else changes.
    """
    chooses_workers = any(a == "-n" or a.startswith(("-n", "--numprocesses")) or a == "no:xdist"
                          for a in args)
    workers = [] if chooses_workers else ["-n", DEFAULT_WORKERS]
    installed = ["-p", "no:cacheprovider"] if is_installed_suite(root) else []
    return [python, "-m", "pytest", str(root / "conformance"), "--rootdir", str(root), *installed, *workers, *args]


def implementation_usages(root: Path | None) -> list[str]:
    """Every way to write --lws-impl, read from the suite's registry (`fixtures/implementations`) so that the
    usage never forgets one; imported from the suite's folder, as pytest will import it. lwsconf itself never
    imports the suite: this is the one place it reads it, for -h."""
    if root is None:
        return ["IMPLEMENTATION (the suite is not installed with this lwsconf)"]
    sys.path.insert(0, str(root))
    try:
        registry = importlib.import_module("fixtures.implementations")
        return list(registry.usages())
    finally:
        sys.path.remove(str(root))


def usage(root: Path | None) -> str:
    return USAGE.replace("{implementations}", "|".join(implementation_usages(root)))


def main(args: Sequence[str]) -> int:
    root = suite_root()
    if list(args[:1]) in (["-h"], ["--help"]):
        print(usage(root), end="")
        return 0
    if root is None:
        print("lwsconf run: the conformance suite is not installed with this lwsconf (no lwsconf/_suite/ beside "
              "the package and no source checkout around it): reinstall from a wheel built by `python -m build` "
              "or `pip wheel .`, or use a source checkout (git clone the lwsconf repository, then `make "
              "conformance`)", file=sys.stderr)
        return 2
    shutdown.run_id()  # one LWSCONF_RUN_ID for this process and everything pytest starts
    child = subprocess.Popen(pytest_command(root, args))

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in shutdown.SIGNALS}
    try:
        code = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - code if code < 0 else code
