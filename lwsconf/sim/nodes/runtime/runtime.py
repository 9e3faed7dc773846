"""The sim's container runtime: real processes for the containers it can run safely.

Most simulated containers are emulated by stages (no process at all). A container whose image is
a Python image (`python*`, or anything containing `lwsconf-probe`) and whose command runs the
Python interpreter on `-c` code, a `-m` module of the standard library (or `lwsconf.*` in the
probe image), or a script inside one of its volumes is run as a real process by the host's Python
interpreter (the sim's own). Nothing else is ever executed: an image's command is otherwise
arbitrary code for another machine.

Every process is made to look as if it were in its pod (see `launcher.py` for how):

* mode "namespaces" (root and a working `unshare`, checked once and logged): a private mount, PID
  and UTS namespace with its volumes at their mountPaths, its own /etc/hosts (kept current by
  `dns.ClusterDNS`) and hostname; the host's files are visible read-only;
* mode "shim" (otherwise): argv paths under a mountPath are rewritten to the host paths and a
  `sitecustomize` (in `pyshim/`) redirects file functions, hostname and name lookups.

In both modes a bind to all addresses goes to the pod IP (each pod shares the host's loopback),
stdout and stderr go to the container's log file, each container is its own process group
(SIGTERM, then SIGKILL after the grace period, to the whole group), and processes die with the
sim: `close()` kills them all, an exit hook does too (`shutdown.at_exit`), and the kernel kills them
should the sim's process die without either (PR_SET_PDEATHSIG). Every process carries the run's
LWSCONF_RUN_ID, so what a run left behind can be found (`shutdown.marked_processes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lwsconf import shutdown
from lwsconf.sim.nodes.runtime import imageruntimes, launcher, netshim

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MODE_NAMESPACES, MODE_SHIM = "namespaces", "shim"
MODE_ENV = "LWSCONF_SIM_RUNTIME_MODE"
LAUNCHER = Path(launcher.__file__).resolve()
PYSHIM = Path(__file__).resolve().parent / "pyshim"
STARTED_MARKER = "started"
"""The file (in a start's scratch folder) where the namespaces-mode launcher writes the workload's pid once it
has forked it (`launcher.forked`); until then a SIGTERM would be lost, so `Process.stop` waits for it."""
_STARTED_POLL = 0.005
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXEC_COMMANDS = ("cat", "ls", "test", "[", "true", "false", "echo", "stat", "grep", "head", "tail")
"""Exec-probe commands run besides Python: harmless readers of the container's own files."""
ROOTED_COMMANDS = ("tar",)
"""Commands that write files, run only where the container has a root of its own (namespaces mode).

`kubectl cp` is `tar` over exec (kubectl pkg/cmd/cp/cp.go: `test -d DEST` first, then `tar -xmf - -C DIR`
with the archive on stdin to copy in, `tar cf - PATH` to copy out), so a sim that refuses `tar` refuses cp.
It is the host's own GNU tar, the one bound read-only into every container root with the rest of /usr
(`launcher.build_root`), run under `nsenter --root` like any exec: every path it opens is the container's
(its private /tmp, its volumes, read-only ones refusing with tar's own "Read-only file system" as on a
real node; the host's directories are read-only binds), so it can change nothing outside the container.
Unlike a real container, whose image layer is writable, a copy into the image's own directories (/usr,
/etc, ...) fails as read-only: they are the host's; /tmp, the root itself and writable volumes take files.
The python images the sim runs (Debian based) carry the same GNU tar, so its messages and exit codes are
what a user of a real cluster sees, which a tar rebuilt on Python's `tarfile` would only imitate. In shim
mode there is no container root (a tar there would read and write the host's /tmp), so tar is refused
there with that reason, as is any command outside these lists (no arbitrary host binary runs).
"""
_EXEC_AS = "import os, sys; os.execv(sys.argv[1], sys.argv[2:])"
"""`python -c _EXEC_AS PROGRAM ARGV0 ARGS...`: exec PROGRAM with its own argv[0]."""


@dataclass(frozen=True)
class ContainerLaunch:
    """Everything needed to start one container process.

    `argv` is the expanded command + args (`env.expand_argv`); `mounts` maps mountPaths to host
    paths (`volumes.materialize`); `read_only` lists mountPaths mounted read-only
    (`volumes.read_only_mounts`); `hosts_path` is the pod's hosts file (`dns.ClusterDNS`).
    """

    namespace: str
    pod_name: str
    pod_uid: str
    container: str
    argv: Sequence[str]
    env: Mapping[str, str]
    pod_ip: str
    hostname: str
    mounts: Mapping[str, Path]
    working_dir: str
    log_path: Path
    hosts_path: Path | None
    read_only: Collection[str] = ()
    stdin: bool = False
    """The container asked for a stdin (`stdin: true`): a pipe that `kubectl attach -i` writes to."""
    stdin_once: bool = False
    """`stdinOnce: true`: the pipe closes when the first attach that sent stdin ends."""
    termination_file: Path | None = None
    """The host file mounted at the container's terminationMessagePath (also in `mounts`), read once it exits."""
    image: str = ""
    """The container's image reference: a mapped one (`imageruntimes`) runs its program from the mapped prefix."""


class UnsupportedCommand(ValueError):
    """An exec command the sim will not run on the host (the caller treats the probe as emulated)."""


# --- what may run ---------------------------------------------------------------------------------

def _image_allowed(image: str) -> bool:
    repo = image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]
    return repo.startswith("python") or "lwsconf-probe" in image


def _program_allowed(args: Sequence[str], mount_paths: Collection[str], image: str) -> bool:
    """Whether the interpreter arguments name something safe to run (see the module docstring)."""
    rest = list(args)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        flag = rest.pop(0)
        if flag == "-c":
            return bool(rest)
        if flag == "-m":
            top = rest[0].split(".")[0] if rest else ""
            return top in sys.stdlib_module_names or (top == "lwsconf" and "lwsconf-probe" in image)
        if flag in ("-W", "-X") and rest:
            rest.pop(0)
    if not rest or rest[0] == "-":
        return True  # the interactive interpreter on an empty stdin: exits at once
    script = os.path.normpath(rest[0])
    return any(script.startswith(m.rstrip("/") + "/") for m in mount_paths)


def runnable(container: Obj, image_runtimes: Mapping[str, imageruntimes.ImageRuntime] | None = None) -> bool:
    """True when the sim runs `container` as a real process (see the module docstring): also a container of a
    mapped image whose command (or the image's entrypoint) names a program the mapped prefix or the host has."""
    image = str(container.get("image") or "")
    mapped = (image_runtimes or {}).get(image)
    if mapped is not None:
        command = mapped.command(container)
        return bool(command) and mapped.program(command[0]) is not None
    if not _image_allowed(image):
        return False
    argv = [str(a) for a in (container.get("command") or container.get("args") or ["python3"])]
    if container.get("command"):
        argv += [str(a) for a in container.get("args") or ()]
    if not launcher.is_python(argv[0]):
        return False
    mount_paths = [str(m.get("mountPath") or "") for m in container.get("volumeMounts") or ()]
    return _program_allowed(argv[1:], [m for m in mount_paths if m], image)


# --- mode detection -------------------------------------------------------------------------------

_detected: str | None = None


def detect_mode() -> str:
    """"namespaces" when root can start a real launcher in fresh namespaces, else "shim" (cached).

    `LWSCONF_SIM_RUNTIME_MODE=shim` forces the fallback (to try it on a root machine).
    """
    global _detected
    if _detected is None:
        forced = os.environ.get(MODE_ENV, "")
        if forced not in ("", MODE_NAMESPACES, MODE_SHIM):
            raise ValueError(f"{MODE_ENV}={forced!r}: use {MODE_NAMESPACES!r} or {MODE_SHIM!r}, or leave it unset")
        reason = f"{MODE_ENV}=shim" if forced == MODE_SHIM else _namespaces_unavailable()
        _detected = MODE_SHIM if reason else MODE_NAMESPACES
        if reason:
            log.info("process runtime: shim mode (%s); volumes and /etc/hosts are emulated in Python", reason)
        else:
            log.info("process runtime: namespaces mode (root, unshare works): private mounts, /etc/hosts, "
                     "hostname and PID namespace per container")
    return _detected


def _namespaces_unavailable() -> str:
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("unshare") is None:
        return "no unshare binary"
    with tempfile.TemporaryDirectory(prefix=shutdown.temp_prefix("runtime-check")) as tmp:
        spec = _spec(MODE_NAMESPACES, [sys.executable, "-c", "pass"], {"PATH": DEFAULT_PATH}, Path(tmp), "check",
                     [], None, "")
        Path(spec["spec_path"]).write_text(json.dumps(spec))
        try:
            done = subprocess.run(launch_command(spec), capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the namespace check failed: {exc}"
        if done.returncode != 0:
            return f"the namespace check exited {done.returncode}: {done.stderr.decode(errors='replace').strip()}"
    return ""


def launch_command(spec: Obj) -> list[str]:
    """The command that starts a container from its spec (written to `spec["spec_path"]`).

    In namespaces mode, when util-linux's `setpriv` is there, `setpriv --pdeathsig KILL` execs `unshare`, which
    runs the launcher's inner stage: the launcher's outer Python stage (PR_SET_PDEATHSIG, then exec unshare) is
    done by a C program, one interpreter start less per container (about 20 ms of CPU on a 2-core machine, and
    that much sooner the workload listens). Otherwise the outer stage does it (`launcher.outer`).
    """
    if spec["mode"] == MODE_NAMESPACES and spec.get("setpriv"):
        return [spec["setpriv"], "--pdeathsig", "KILL", "--", *launcher.unshare_argv(spec, spec["spec_path"])]
    return [sys.executable, "-I", "-S", str(LAUNCHER), spec["spec_path"]]


def _spec(mode: str, argv: Sequence[str], env: Mapping[str, str], cdir: Path, hostname: str,
          mounts: list[tuple[str, str, bool]], hosts: Path | None, cwd: str, program: Path | None = None,
          image_paths: Sequence[str] = ()) -> Obj:
    """`image_paths`: host paths a mapped image's container needs at the same path (its prefix, the bind
    interposer), bound read-only after the volumes, so a volume over a parent (an emptyDir on /root/.cache, where
    the runtimes live by default) does not hide them; a nested mount point is made inside that volume's folder,
    as runc makes it."""
    (cdir / "tmp").mkdir(parents=True, exist_ok=True)
    os.chmod(cdir / "tmp", 0o1777)
    if mode == MODE_NAMESPACES:
        mounts = [*mounts, *_host_paths_under_tmp(), *[(p, p, True) for p in image_paths]]
    return {"program": str(program) if program else None, "mode": mode, "argv": list(argv), "env": dict(env),
            "hostname": hostname, "mounts": mounts,
            "hosts": str(hosts) if hosts else None, "cwd": cwd, "rootfs": str(cdir / "rootfs"),
            "tmp": str(cdir / "tmp"), "python": sys.executable, "parent_pid": os.getpid(),
            "unshare": shutil.which("unshare") or "unshare", "setpriv": shutil.which("setpriv"),
            "spec_path": str(cdir / "spec.json"),
            "started": str(cdir / STARTED_MARKER) if mode == MODE_NAMESPACES else None}


def _host_paths_under_tmp() -> list[tuple[str, str, bool]]:
    """Read-only binds for the interpreter and lwsconf when they live under /tmp.

    Containers get a private /tmp, which would hide a virtualenv or checkout placed there (CI clones
    into temporary folders), so the interpreter could not even start.
    """
    here = str(Path(__file__).resolve().parents[4])
    wanted = {sys.prefix, sys.exec_prefix, sys.base_prefix, here}
    return [(p, p, True) for p in sorted(wanted) if p == "/tmp" or p.startswith("/tmp/")]


def translate(path: str, mounts: Mapping[str, Path]) -> str:
    """A container path under a mountPath as the host path (shim mode); others unchanged."""
    if not path.startswith("/"):
        return path
    for mount_path in sorted(mounts, key=len, reverse=True):
        prefix = mount_path.rstrip("/")
        if path == mount_path or path.startswith(prefix + "/"):
            return str(mounts[mount_path]) + path[len(prefix):]
    return path


# --- processes ------------------------------------------------------------------------------------

_live: set[Process] = set()
"""Processes not yet waited for, killed by the exit hook should the sim end without `close()`."""


def _kill_leftovers() -> None:
    for process in list(_live):
        process.kill()


shutdown.at_exit(_kill_leftovers)  # at exit, and when an interrupted run abandons its cleanup


def exit_code(returncode: int) -> int:
    """A wait status as container runtimes report it: the exit code, or 128+N for signal N."""
    return returncode if returncode >= 0 else 128 - returncode


class Process:
    """One running container process (its own process group)."""

    def __init__(self, launch: ContainerLaunch, proc: asyncio.subprocess.Process, mode: str,
                 env: Mapping[str, str], workdir: Path) -> None:
        self.launch, self.mode, self._proc, self._env = launch, mode, proc, dict(env)
        self.workdir = workdir
        """The runtime's scratch directory for this start (spec, private /tmp); removed at the end."""
        self.pid = proc.pid
        self.started_at = datetime.now(UTC)
        self.finished_at: datetime | None = None
        self._workload_exists = mode != MODE_NAMESPACES
        """In shim mode the launcher execs the workload itself: a signal to the group always reaches it."""
        _live.add(self)

    def __repr__(self) -> str:
        state = "running" if self.returncode is None else f"exited {self.returncode}"
        return (f"Process({self.launch.namespace}/{self.launch.pod_name}/{self.launch.container}, "
                f"pid {self.pid}, {state})")

    @property
    def returncode(self) -> int | None:
        """The exit code once finished (128+N when killed by signal N), else None."""
        code = self._proc.returncode
        return None if code is None else exit_code(code)

    async def wait(self) -> int:
        """Wait for the process to end; kill what is left of its group; the exit code."""
        code = await self._proc.wait()
        if self.finished_at is None:
            self.finished_at = datetime.now(UTC)
            self._signal(signal.SIGKILL)  # a container's leftover processes die with it
            _live.discard(self)
            shutil.rmtree(self.workdir, ignore_errors=True)
        return exit_code(code)

    async def stop(self, grace_seconds: float) -> int:
        """SIGTERM the group, SIGKILL it after `grace_seconds`; the exit code.

        A container still starting gets its SIGTERM once its workload process exists (within the grace period),
        as a runtime stops a task: the signal reaches the workload, or kills it before its handlers are set.
        """
        if self._proc.returncode is None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + max(grace_seconds, 0.0)
            await self._until_workload_exists(deadline)
            self._signal(signal.SIGTERM)
            try:
                return await asyncio.wait_for(self.wait(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                self._signal(signal.SIGKILL)
        return await self.wait()

    async def _until_workload_exists(self, deadline: float) -> None:
        if self._workload_exists:
            return
        marker = self.workdir / STARTED_MARKER
        loop = asyncio.get_running_loop()
        while self._proc.returncode is None and loop.time() < deadline:
            with contextlib.suppress(OSError):
                if marker.stat().st_size > 0:
                    break
            await asyncio.sleep(_STARTED_POLL)
        self._workload_exists = True

    def kill(self) -> None:
        """SIGKILL the whole group now (synchronous; `wait()` collects the status)."""
        self._signal(signal.SIGKILL)

    async def write_stdin(self, data: bytes) -> None:
        """Bytes for the container's stdin (`stdin: true`); ignored without one or once it closed."""
        pipe = self._proc.stdin
        if pipe is None or pipe.is_closing():
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            pipe.write(data)
            await pipe.drain()

    def close_stdin(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    async def exec(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """Run an exec-probe command in the container's view; (exit code, output).

        Raises:
            UnsupportedCommand: not a Python interpreter or one of `EXEC_COMMANDS`.
        """
        command, cwd = self.exec_command(argv)
        proc = await asyncio.create_subprocess_exec(*command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                    stderr=subprocess.STDOUT, env=self._env, cwd=cwd,
                                                    start_new_session=True)
        try:
            output, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return -1, f"command timed out after {timeout}s"
        except BaseException:  # cancelled (the agent stops): the command must not outlive the sim
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        return exit_code(proc.returncode or 0), output[:10240].decode(errors="replace")

    def exec_command(self, argv: Sequence[str]) -> tuple[list[str], str | None]:
        """The host command line (and working directory) that runs `argv` in the container's view.

        Raises:
            UnsupportedCommand: not a Python interpreter, one of `EXEC_COMMANDS` or (namespaces mode only)
                `ROOTED_COMMANDS`, or no way in.
        """
        name = os.path.basename(argv[0]) if argv else ""
        if name in ROOTED_COMMANDS and self.mode != MODE_NAMESPACES:
            raise UnsupportedCommand(f"the sim runs {name!r} (kubectl cp) only in containers with a root of their "
                                     f"own (namespaces mode); in {self.mode} mode it would read and write the "
                                     "host's files: run the sim as root, with a working unshare, to copy files")
        if not argv or not (launcher.is_python(argv[0]) or name in EXEC_COMMANDS or name in ROOTED_COMMANDS):
            allowed = ", ".join(("python", *EXEC_COMMANDS, *ROOTED_COMMANDS))
            raise UnsupportedCommand(f"the sim does not run {list(argv)[:1]} on the host: it runs only "
                                     f"{allowed} in a container")
        command = [sys.executable if launcher.is_python(argv[0]) else argv[0], *argv[1:]]
        if name in ROOTED_COMMANDS:
            # The host's binary by its host path (its /usr is bound read-only into the root), never a file of
            # that name in a volume or elsewhere on the container's PATH; started as plain `name` (exec through
            # the interpreter, as nsenter cannot set argv[0]) so its messages read "tar: ..." as in a container.
            program = shutil.which(name) or ""
            if not program.startswith(("/usr/", "/bin/")):
                raise UnsupportedCommand(f"no {name} binary under /usr or /bin on this host to run in the container")
            command = [sys.executable, "-I", "-S", "-c", _EXEC_AS, program, name, *argv[1:]]
        if self.mode == MODE_NAMESPACES:
            if shutil.which("nsenter") is None:
                raise UnsupportedCommand("no nsenter binary to enter the container's namespaces")
            return ["nsenter", "--target", str(self._init_pid()), "--mount", "--uts", "--pid", "--root",
                    "--wd", "--", *command], None
        mounts = dict(self.launch.mounts)
        if self.launch.hosts_path is not None:
            mounts["/etc/hosts"] = self.launch.hosts_path
        cwd = translate(self.launch.working_dir, mounts) if self.launch.working_dir else None
        return [translate(a, mounts) for a in command], cwd

    @property
    def environment(self) -> dict[str, str]:
        """The container's process environment (what an exec'd command gets too)."""
        return dict(self._env)

    def _init_pid(self) -> int:
        """The container's PID 1 (the launcher's inner stage, unshare's only child)."""
        try:
            children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        except OSError:
            children = []
        if not children:
            raise UnsupportedCommand(f"{self!r} has no running init process to enter")
        return int(children[0])


class ProcessRuntime:
    """Starts container processes under `root` (one directory per container start).

    Args:
        root: scratch space for launch specs, private /tmp and root mount points.
        mode: "namespaces" or "shim"; None picks with `detect_mode()` (tests force "shim").
    """

    def __init__(self, root: Path, *, mode: str | None = None) -> None:
        if mode not in (None, MODE_NAMESPACES, MODE_SHIM):
            raise ValueError(f"mode must be {MODE_NAMESPACES!r}, {MODE_SHIM!r} or None, not {mode!r}")
        self.root = Path(root)
        self.mode = mode or detect_mode()
        self.image_runtimes = imageruntimes.configured()
        """Mapped images (LWSCONF_SIM_IMAGE_RUNTIMES), read at the start: a wrong file stops the start."""
        self._processes: list[Process] = []
        self._starts = 0

    def runnable(self, container: Obj) -> bool:
        return runnable(container, self.image_runtimes)

    @property
    def processes(self) -> list[Process]:
        """Processes started and not yet known to have ended."""
        return [p for p in self._processes if p.finished_at is None]

    def environment(self, launch: ContainerLaunch) -> dict[str, str]:
        """The process environment: image defaults, the container's env, then the sim's variables."""
        env = {"PATH": DEFAULT_PATH, "HOSTNAME": launch.hostname, "HOME": "/root", "LANG": "C.UTF-8"}
        mapped = self.image_runtimes.get(launch.image)
        if mapped is not None:
            env.update(mapped.environment(DEFAULT_PATH))
        env.update(launch.env)
        if mapped is not None:  # the pod's network view for native code too (netshim.c)
            env["LD_PRELOAD"] = " ".join(filter(None, [str(netshim.library()), env.get("LD_PRELOAD")]))
        env["PYTHONPATH"] = str(PYSHIM) + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        if launch.pod_ip:
            env["LWSCONF_SIM_POD_IP"] = launch.pod_ip
        env[shutdown.RUN_ID_ENV] = shutdown.run_id()  # marks the run's processes (shutdown.marked_processes)
        if self.mode == MODE_SHIM:
            mounts = {path: str(host) for path, host in launch.mounts.items()}
            if launch.hosts_path is not None:
                env["LWSCONF_SIM_HOSTS_FILE"] = str(launch.hosts_path)
                mounts["/etc/hosts"] = str(launch.hosts_path)
            env["LWSCONF_SIM_HOSTNAME"] = launch.hostname
            env["LWSCONF_SIM_MOUNTS"] = json.dumps(mounts)
        return env

    async def start(self, launch: ContainerLaunch) -> Process:
        """Start the container's process; its output goes to `launch.log_path` (appended).

        Raises:
            UnsupportedCommand: argv does not start with a Python interpreter.
        """
        mapped = self.image_runtimes.get(launch.image)
        program = mapped.program(launch.argv[0]) if mapped is not None and launch.argv else None
        if mapped is not None and program is None:
            # what runc says when the command is not in the image (a StartError, exit 128)
            raise FileNotFoundError(f'exec: "{launch.argv[0] if launch.argv else ""}": executable file not found '
                                    f"in $PATH (image {launch.image} is mapped to {mapped.prefix})")
        if mapped is None and launch.argv and not launcher.is_python(launch.argv[0]):
            raise UnsupportedCommand(f"the sim runs only the Python interpreter, not {launch.argv[0]!r}: "
                                     "check runnable(container) first and emulate other containers")
        self._starts += 1
        cdir = self.root / (launch.pod_uid or "pod") / f"{launch.container}-{self._starts}"
        env = self.environment(launch)
        argv = list(launch.argv) or ["python3"]
        cwd = launch.working_dir
        if self.mode == MODE_SHIM:
            argv = [translate(a, launch.mounts) for a in argv]
            cwd = translate(cwd, launch.mounts) if cwd else str(cdir / "tmp")
        mounts = [(os.path.normpath(p), str(h), os.path.normpath(p) in {os.path.normpath(r) for r in launch.read_only})
                  for p, h in launch.mounts.items()]
        image_paths = [str(mapped.prefix), *env.get("LD_PRELOAD", "").split()] if mapped is not None else []
        spec = _spec(self.mode, argv, env, cdir, launch.hostname, mounts, launch.hosts_path, cwd, program, image_paths)
        Path(spec["spec_path"]).write_text(json.dumps(spec))
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(launch.log_path, "ab") as log_file:
            proc = await asyncio.create_subprocess_exec(
                *launch_command(spec),
                stdin=subprocess.PIPE if launch.stdin else subprocess.DEVNULL,
                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                env={"PATH": os.environ.get("PATH", DEFAULT_PATH), shutdown.RUN_ID_ENV: shutdown.run_id()})
        process = Process(launch, proc, self.mode, env, cdir)
        self._processes = [*self.processes, process]
        log.debug("started %r (%s mode): %s", process, self.mode, argv)
        return process

    async def close(self, timeout: float = 10.0) -> None:
        """Kill every process this runtime started and wait for them (nothing survives)."""
        live = self.processes
        for process in live:
            process.kill()
        if live:
            await asyncio.wait_for(asyncio.gather(*(p.wait() for p in live)), timeout)
        self._processes.clear()
