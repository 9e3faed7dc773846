"""Starts one container process for `runtime.ProcessRuntime`. Stdlib only; run as a script:

    python -I -S launcher.py SPEC.json            (outer stage, started by the runtime)
    python -I -S launcher.py SPEC.json inner      (inner stage, started by unshare)

In namespaces mode the runtime skips the outer stage when util-linux's `setpriv` is there: it starts
`setpriv --pdeathsig KILL -- unshare ... launcher.py SPEC.json inner` itself (`runtime.launch_command`).

Outer stage: asks the kernel to SIGKILL this process when the sim's thread that started it dies
(PR_SET_PDEATHSIG, which survives exec), so nothing outlives a crashed sim. Then:

* mode "shim" (not root, or no usable `unshare`): exec the workload directly; the runtime has
  already rewritten paths and set the sitecustomize variables.
* mode "namespaces" (root): exec `unshare --mount --uts --pid --fork --kill-child` running this
  script again as the inner stage.

Inner stage, PID 1 of a fresh PID, mount and UTS namespace, like a container's init:

1. make every mount private, set the pod's hostname;
2. build a root on a tmpfs: each top-level host directory bind-mounted read-only (so the host's
   interpreter and libraries are there, and nothing on the host can be changed), a private /tmp,
   a fresh /proc, a /dev as a container runtime makes it (`make_dev`: the OCI default devices, not the
   host's disks), every volume bind-mounted at its mountPath (read-only when asked) and the pod's
   hosts file on /etc/hosts. A mountPath whose directory does not exist on the host is created
   on a tmpfs that shadows its parent (the parent's entries are bind-mounted back), never on the
   host;
3. chroot there, fork the workload, write its pid to the spec's `started` file (the runtime holds a
   SIGTERM until then: before it, the signal would reach no process that acts on it), and reap every
   orphan until the workload ends, then exit with its code (128+N for signal N, as container runtimes
   report). When PID 1 exits the kernel kills
   whatever is left in the namespace: no process escapes, not even one that left its group.

A failure before the workload runs prints why to the container log and exits 128 (StartError).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
from typing import Any

START_ERROR = 128
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PYTHON_NAMES = ("python", "python3")
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _enc(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = _enc
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source} on {target}")


def umount(target: str) -> None:
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def is_python(argv0: str) -> bool:
    name = os.path.basename(argv0)
    return name in PYTHON_NAMES or (name.startswith("python3.") and name[8:].isdigit())


def executable(argv0: str, env: dict[str, str], python: str) -> str:
    """The program to exec: the sim's interpreter for any python, else argv0 searched on PATH."""
    if is_python(argv0):
        return python
    if "/" in argv0:
        return argv0
    for directory in env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":"):
        candidate = os.path.join(directory, argv0)
        if os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(f"{argv0!r} not found on PATH")


# --- the root filesystem --------------------------------------------------------------------------

class Root:
    """A container root under construction at `path` (host side, before chroot)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.host_binds: set[str] = set()
        """Container directories that are (read-only) binds of the same host directory."""

    def populate(self, cdir: str, skip: tuple[str, ...] = ()) -> None:
        """Fill the (tmpfs) container dir `cdir` with binds of the host dir of the same path."""
        for name in sorted(os.listdir(cdir)):
            if name in skip:
                continue
            src = os.path.join(cdir, name)
            dst = self.path + src
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            elif os.path.isdir(src):
                os.mkdir(dst, 0o755)
                mount(src, dst, None, MS_BIND | MS_REC)
                mount(None, dst, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
                self.host_binds.add(src)
            elif os.path.isfile(src):
                open(dst, "a").close()
                mount(src, dst, None, MS_BIND)

    def shadow(self, cdir: str) -> None:
        """Replace the host bind at `cdir` by a tmpfs holding binds of its entries."""
        full = self.path + cdir
        umount(full)
        mount("tmpfs", full, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        self.host_binds.discard(cdir)
        self.populate(cdir)

    def ensure(self, cpath: str, is_dir: bool, depth: int = 0) -> str:
        """Create the mount point `cpath` (following symlinks inside the root); its final path."""
        if depth > 20:
            raise OSError(f"too many symlinks resolving {cpath}")
        parts = [p for p in cpath.split("/") if p]
        current = ""
        for index, part in enumerate(parts):
            nxt = f"{current}/{part}"
            full = self.path + nxt
            if os.path.islink(full):
                target = os.readlink(full)
                base = target if target.startswith("/") else os.path.join(current or "/", target)
                rest = "/".join(parts[index + 1:])
                return self.ensure(os.path.normpath(os.path.join(base, rest)), is_dir, depth + 1)
            if not os.path.exists(full):
                if (current or "/") in self.host_binds:
                    self.shadow(current or "/")
                if index == len(parts) - 1 and not is_dir:
                    open(full, "a").close()
                else:
                    os.mkdir(full, 0o755)
            current = nxt
        return current or "/"


def _mount_point(root: Root, earlier: list[tuple[str, str, bool]], cpath: str, is_dir: bool) -> str:
    """Create `cpath`'s mount point: inside an earlier volume that contains it (on that volume's
    host directory, which the sim owns, as runc does), else in the root."""
    for outer_path, host, _ro in reversed(earlier):
        prefix = outer_path.rstrip("/") + "/"
        if cpath.startswith(prefix) and os.path.isdir(host):
            inside = os.path.join(host, cpath[len(prefix):])
            if is_dir:
                os.makedirs(inside, exist_ok=True)
            elif not os.path.lexists(inside):
                os.makedirs(os.path.dirname(inside), exist_ok=True)
                open(inside, "a").close()
            return cpath
    return root.ensure(cpath, is_dir)


OCI_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
"""The device nodes every OCI container gets (runtime-spec config-linux.md, "Default Devices"; runc's
AllowedDevices), bound here from the host's: the host's other devices (disks, loop, kvm, consoles) stay out."""
SHM_SIZE = "65536k"
"""/dev/shm's size when no volume is mounted there: containerd's and Docker's default (64 MiB)."""


def make_dev(root: Root) -> None:
    """The container's /dev, as a container runtime makes it: a tmpfs with the OCI default devices, the
    /proc/self/fd links, the host's pts, and a /dev/shm of its own (a volume may be mounted over it later)."""
    dev = root.path + "/dev"
    os.mkdir(dev, 0o755)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=0755")
    for name in OCI_DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(f"{dev}/{name}", "a").close()
            mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")):
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(f"{dev}/pts", 0o755)
    if os.path.isdir("/dev/pts"):
        mount("/dev/pts", f"{dev}/pts", None, MS_BIND | MS_REC)
    os.mkdir(f"{dev}/shm", 0o1777)
    mount("shm", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"mode=1777,size={SHM_SIZE}")


def build_root(spec: dict[str, Any]) -> str:
    root = Root(spec["rootfs"])
    os.makedirs(root.path, exist_ok=True)
    mount("tmpfs", root.path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    root.populate("/", skip=("proc", "tmp", "dev"))
    make_dev(root)
    for special in ("/proc", "/tmp"):
        os.mkdir(root.path + special, 0o755)
    mount("proc", root.path + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount(spec["tmp"], root.path + "/tmp", None, MS_BIND)
    binds = [(cpath, host, bool(ro)) for cpath, host, ro in spec["mounts"]]
    if spec.get("hosts"):
        binds.append(("/etc/hosts", spec["hosts"], False))
    binds.sort(key=lambda item: item[0].rstrip("/").count("/"))
    # All mount points first (creating one may shadow a host directory, which would drop mounts
    # already made inside it), then the mounts, parents before children.
    targets = [(_mount_point(root, binds[:index], cpath, os.path.isdir(host)), host, ro)
               for index, (cpath, host, ro) in enumerate(binds)]
    if spec.get("cwd"):
        _mount_point(root, binds, spec["cwd"], True)
    for target, host, ro in targets:
        mount(host, root.path + target, None, MS_BIND | MS_REC)
        if ro:
            mount(None, root.path + target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    return root.path


# --- stages ---------------------------------------------------------------------------------------

def exec_workload(spec: dict[str, Any]) -> None:
    env = dict(spec["env"])
    # a mapped image's program was found by the runtime (`imageruntimes`); otherwise the sim's interpreter or PATH
    program = spec.get("program") or executable(spec["argv"][0], env, spec["python"])
    # Python finds its standard library (and a venv its pyvenv.cfg) from argv[0]: give it the program's path.
    argv = [program, *spec["argv"][1:]] if is_python(spec["argv"][0]) else list(spec["argv"])
    os.execve(program, argv, env)


def outer(spec: dict[str, Any], spec_path: str) -> int:
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != spec["parent_pid"]:
        return START_ERROR  # the sim died between fork and prctl
    if spec["mode"] == "namespaces":
        argv = unshare_argv(spec, spec_path)
        os.execv(argv[0], argv)
    if spec.get("cwd"):
        os.chdir(spec["cwd"])
    exec_workload(spec)
    return START_ERROR


def unshare_argv(spec: dict[str, Any], spec_path: str) -> list[str]:
    """`unshare` running this script's inner stage in fresh mount, UTS and PID namespaces."""
    return [spec["unshare"], "--mount", "--uts", "--pid", "--fork", "--kill-child", "--",
            spec["python"], "-I", "-S", os.path.abspath(__file__), spec_path, "inner"]


def inner(spec: dict[str, Any]) -> int:
    # Opened before the chroot hides the host path; written once the workload's process exists (see `forked`).
    started = os.open(spec["started"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600) \
        if spec.get("started") else None
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    hostname = spec.get("hostname", "").encode()
    _check(_libc.sethostname(hostname, len(hostname)), "sethostname")
    os.chroot(build_root(spec))
    os.chdir(spec.get("cwd") or "/")
    child = os.fork()
    if child == 0:
        try:
            exec_workload(spec)
        except BaseException as exc:  # noqa: BLE001 - report any failure to start, then leave
            print(f"lwsconf runtime: cannot exec {spec['argv'][0]!r}: {exc}", file=sys.stderr, flush=True)
        os._exit(START_ERROR)
    if started is not None:
        forked(started, child)
    return reap(child)


def forked(fd: int, child: int) -> None:
    """Tell the runtime the workload's process exists: from now on a SIGTERM to the container's group reaches it.

    Until then a SIGTERM to the group reaches only `unshare`, which waits with it blocked, and this stage, the
    PID namespace's init, for which the kernel drops a signal it has no handler for: a container stopped while
    starting kept running until the grace period's SIGKILL. The runtime holds such a SIGTERM until this file
    has the workload's pid (`runtime.Process.stop`).
    """
    os.write(fd, str(child).encode())
    os.close(fd)


def reap(child: int) -> int:
    """Wait for `child`, reaping orphans; forward signals the child's group did not get itself."""
    def forward(signum: int, _frame: Any) -> None:
        try:
            if os.getpgid(child) != os.getpgrp():
                os.kill(child, signum)
        except ProcessLookupError:
            pass
    for signum in FORWARDED:
        signal.signal(signum, forward)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return START_ERROR
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    try:
        with open(argv[1], encoding="utf-8") as handle:
            spec = json.load(handle)
        if len(argv) > 2 and argv[2] == "inner":
            return inner(spec)
        return outer(spec, argv[1])
    except Exception as exc:  # noqa: BLE001 - the container log is the only place to say why
        print(f"lwsconf runtime: cannot start container: {exc}", file=sys.stderr, flush=True)
        return START_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
