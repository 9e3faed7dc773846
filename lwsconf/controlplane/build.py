"""Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd from their Go modules.

`plan` is pure: which `go build` command lines would run, into which cache directory, and the stamp
that says what was built (Kubernetes and etcd versions, the Go version, hashes of go.mod and go.sum,
the flags). `up_to_date` compares that stamp with the one left by the last build, so an unchanged
checkout skips the build, and a changed go.sum, Go or flag rebuilds. `execute` runs the commands one
component at a time, printing one line per component with its elapsed time and size.

Builds run under `nice -n 19` by default (`nice_prefix`: they share a 2-core machine with test runs;
LWSCONF_BUILD_NICE chooses another niceness, 0 none), with `-trimpath -ldflags=-s -w`
and CGO_ENABLED=0 (static, smaller binaries), GOTOOLCHAIN=local (never fetch a toolchain) and GOWORK=off.
Each binary is written under a temporary name and renamed when complete; the stamp is written last, so an
interrupted build is simply redone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from lwsconf.controlplane.versions import Release, source_root

CACHE_ENV = "LWSCONF_CACHE_DIR"
"""Overrides the cache folder (default: $XDG_CACHE_HOME/lwsconf, else ~/.cache/lwsconf)."""
TIMEOUT_ENV = "LWSCONF_CONTROLPLANE_BUILD_TIMEOUT"
COMPONENT_BUILD_TIMEOUT = 5400.0
"""Seconds one component's `go build` may take (a cold kube-apiserver build on a loaded 2-core machine
takes tens of minutes); overridable by $LWSCONF_CONTROLPLANE_BUILD_TIMEOUT."""
MIN_GO = (1, 26)
"""The go directive of our go.mod files (and of k8s.io/kubernetes 1.36 and 1.37)."""
STAMP_NAME = "stamp.json"
LOG_TAIL_LINES = 30


@dataclass(frozen=True)
class Component:
    name: str
    package: str
    kubernetes: bool
    """Whether it takes Kubernetes' version variables (etcd has its own, compiled in)."""


COMPONENTS = (
    Component("etcd", "go.etcd.io/etcd/server/v3", kubernetes=False),
    Component("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", kubernetes=True),
    Component("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", kubernetes=True),
    Component("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", kubernetes=True),
    # kubectl of the same release: the machines have none, and `kubectl exec/attach/port-forward/logs`
    # against the sim and the local control plane is part of what the suite checks.
    Component("kubectl", "k8s.io/kubernetes/cmd/kubectl", kubernetes=True),
)


class BuildError(Exception):
    """A build that cannot run or failed; the message is one actionable paragraph."""


class GoMissing(BuildError):
    """No usable Go toolchain on PATH."""


def no_go_message(found: str | None = None, purpose: str = "building the real control plane",
                  instead: str = "run the suite on the simulated cluster with --cluster=sim") -> str:
    """The one line shown when Go is absent (or too old): what to install, or the alternative."""
    need = f"Go >= {MIN_GO[0]}.{MIN_GO[1]}"
    what = f"found {found}, " if found else "no `go` on PATH; "
    return (f"{purpose} needs {need} ({what}install it, e.g. from your distribution's "
            f"golang package or go.dev/dl, and put `go` on PATH), or {instead}")


@dataclass(frozen=True)
class Step:
    component: Component
    argv: tuple[str, ...]
    output: Path
    partial: Path


@dataclass(frozen=True)
class GoBuild:
    """`go build` steps in one module into one cache folder, with the stamp that says what they built.

    What `execute` needs; the upstream LWS manager (`lwsconf.upstream.build`) is built through it too."""

    title: str
    """How progress lines name the build ("controlplane 1.37.2")."""
    module: Path
    bin_dir: Path
    stamp_path: Path
    stamp: Mapping[str, str]
    env: Mapping[str, str]
    steps: tuple[Step, ...]

    @property
    def log_path(self) -> Path:
        return self.bin_dir.parent / "build.log"


@dataclass(frozen=True)
class Plan(GoBuild):
    release: Release


@dataclass
class Result:
    """What `execute` did: skipped (stamp matched) or each component's seconds and bytes."""

    skipped: bool
    seconds: float
    components: dict[str, dict[str, float]] = field(default_factory=dict)


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """$LWSCONF_CACHE_DIR, else $XDG_CACHE_HOME/lwsconf, else ~/.cache/lwsconf (outside the repo)."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "lwsconf"


def version_dir(release: Release, root: Path | None = None) -> Path:
    return (root or cache_root()) / "controlplane" / release.kubernetes


def find_go(path: str | None = None, **why: str) -> tuple[str, str]:
    """The `go` executable on PATH (`path` overrides) and its version; GoMissing says what to install.

    `why` (purpose=, instead=) words the message for another build than the control plane's."""
    go = shutil.which("go", path=path)
    if go is None:
        raise GoMissing(no_go_message(None, **why))
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "GOTOOLCHAIN": "local"}, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise GoMissing(no_go_message(f"{go} that does not run: {exc}", **why)) from exc
    match = re.match(r"go(\d+)\.(\d+)", out)
    if match is None or (int(match[1]), int(match[2])) < MIN_GO:
        raise GoMissing(no_go_message(f"{go} reporting {out or 'no version'}", **why))
    return go, out


def ldflags(release: Release, component: Component) -> str:
    """-s -w, plus the version variables Kubernetes' own release build sets (else it reports v0.0.0)."""
    if not component.kubernetes:
        return "-s -w"
    major, minor, _ = release.kubernetes.split(".")
    pairs = {"gitVersion": f"v{release.kubernetes}", "gitMajor": major, "gitMinor": minor,
             "gitTreeState": "clean"}
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{key}={value}" for key, value in pairs.items()]
    return " ".join(flags)


def file_hash(path: Path, *, missing: str) -> str:
    """SHA-256 of a file a build stamp depends on; BuildError saying `missing` (what to do) when it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise BuildError(f"cannot read {path} ({exc.strerror}): {missing}") from exc


def _hash(path: Path) -> str:
    return file_hash(path, missing="the Go module of this Kubernetes version is missing; run from a source checkout "
                                   "of lwsconf or set LWSCONF_CONTROLPLANE_SRC to its controlplane/ folder")


NICE_ENV = "LWSCONF_BUILD_NICE"
DEFAULT_NICENESS = 19


def nice_prefix(nice: str | None, environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """`nice -n N` before a build's command (`nice` the path of the tool, None where there is none), N from
    LWSCONF_BUILD_NICE (0-19, default 19); nothing for 0.

    Why a setting: niceness 19 keeps a build from slowing test runs that share the machine with it, but under
    load from anything at niceness 0 it gets almost no CPU (its weight is 15 against 1024 per busy process):
    `.ci/run` with two busy processes beside it spent 25 minutes on etcd, the first of twelve builds, and was
    stopped (2026-12-07 19:40-20:05). Where the build is what everything waits for (`.ci/run`), it runs at 0."""
    raw = environ.get(NICE_ENV, "").strip()
    try:
        level = int(raw) if raw else DEFAULT_NICENESS
    except ValueError:
        raise BuildError(f"{NICE_ENV}={raw!r}: give a niceness from 0 (none) to 19") from None
    if not 0 <= level <= 19:
        raise BuildError(f"{NICE_ENV}={raw!r}: give a niceness from 0 (none) to 19")
    return (nice, "-n", str(level)) if nice and level else ()


def plan(release: Release, *, go: str, go_version: str, source: Path | None = None,
         cache: Path | None = None, nice: str | None = None) -> Plan:
    """The build of `release`: pure apart from hashing its go.mod and go.sum."""
    module = (source or source_root()) / release.module_dir
    root = version_dir(release, cache)
    bin_dir = root / "bin"
    stamp = {"kubernetes": release.kubernetes, "etcd": release.etcd, "go": go_version,
             "go.mod": _hash(module / "go.mod"), "go.sum": _hash(module / "go.sum"),
             "flags": json.dumps([ldflags(release, c) for c in COMPONENTS])}
    prefix = nice_prefix(nice)
    steps = tuple(
        Step(component=c, output=bin_dir / c.name, partial=bin_dir / f".{c.name}.partial",
             argv=(*prefix, go, "build", "-trimpath", f"-ldflags={ldflags(release, c)}",
                   "-o", str(bin_dir / f".{c.name}.partial"), c.package))
        for c in COMPONENTS)
    env = {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOWORK": "off"}
    return Plan(title=f"controlplane {release.kubernetes}", release=release, module=module, bin_dir=bin_dir,
                stamp_path=root / STAMP_NAME,
                stamp=stamp, env=env, steps=steps)


def up_to_date(p: GoBuild) -> bool:
    """True when the last complete build left the same stamp and every binary is still there."""
    try:
        recorded = json.loads(p.stamp_path.read_text())
    except (OSError, ValueError):
        return False
    return recorded == dict(p.stamp) and all(s.output.is_file() for s in p.steps)


def installed(release: Release, cache: Path | None = None) -> dict[str, Path] | None:
    """The built binaries of `release` by component name, if a complete build is in the cache."""
    root = version_dir(release, cache)
    paths = {c.name: root / "bin" / c.name for c in COMPONENTS}
    if (root / STAMP_NAME).is_file() and all(path.is_file() for path in paths.values()):
        return paths
    return None


def _timeout(environ: Mapping[str, str]) -> float:
    raw = environ.get(TIMEOUT_ENV)
    try:
        return float(raw) if raw else COMPONENT_BUILD_TIMEOUT
    except ValueError as exc:
        raise BuildError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds") from exc


def _run_step(p: GoBuild, step: Step, log: TextIO, timeout: float) -> None:
    log.write(f"$ (cd {p.module} && {' '.join(step.argv)})\n")
    log.flush()
    start = log.tell()
    proc = subprocess.Popen(step.argv, cwd=p.module, env={**os.environ, **p.env}, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    finally:  # Ctrl-C, a timeout: no go build left running, no half-written binary
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if code == 0:
        os.replace(step.partial, step.output)
        return
    step.partial.unlink(missing_ok=True)
    log.flush()
    with open(p.log_path, encoding="utf-8", errors="replace") as f:
        f.seek(start)
        tail = "".join(f.readlines()[-LOG_TAIL_LINES:])
    why = f"timed out after {timeout:g}s ({TIMEOUT_ENV} raises it)" if code is None else f"exit status {code}"
    raise BuildError(f"building {step.component.name} failed ({why}): {' '.join(step.argv)} in {p.module}; "
                     f"full log {p.log_path}; last lines:\n{tail}")


def execute(p: GoBuild, out: TextIO, environ: Mapping[str, str] | None = None) -> Result:
    """Build every component unless `up_to_date`; one progress line each on `out`."""
    version = p.title
    if up_to_date(p):
        print(f"{version}: up to date in {p.bin_dir} (stamp matches; nothing built)", file=out)
        return Result(skipped=True, seconds=0.0)
    timeout = _timeout(os.environ if environ is None else environ)
    p.bin_dir.mkdir(parents=True, exist_ok=True)
    p.stamp_path.unlink(missing_ok=True)
    result = Result(skipped=False, seconds=0.0)
    began = time.monotonic()
    with open(p.log_path, "w", encoding="utf-8") as log:
        for n, step in enumerate(p.steps, 1):
            print(f"{version}: [{n}/{len(p.steps)}] {step.component.name} ...", end="",
                  file=out, flush=True)
            t0 = time.monotonic()
            try:
                _run_step(p, step, log, timeout)
            except BaseException:
                print(" failed", file=out, flush=True)
                raise
            seconds = time.monotonic() - t0
            size = step.output.stat().st_size
            result.components[step.component.name] = {"seconds": round(seconds, 1), "bytes": size}
            print(f" built in {seconds:.1f}s, {size / 2**20:.1f} MiB", file=out, flush=True)
    p.stamp_path.write_text(json.dumps(dict(p.stamp), indent=2) + "\n")
    result.seconds = round(time.monotonic() - began, 1)
    what = "binary" if len(p.steps) == 1 else "binaries"
    print(f"{version}: {len(p.steps)} {what} in {p.bin_dir} ({result.seconds:.1f}s)", file=out)
    return result
