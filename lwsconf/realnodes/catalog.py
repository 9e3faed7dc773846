"""The images real nodes hold: what each is made of, made once and cached (issue 31: images built offline).

- `registry.k8s.io/pause:3.10`: our pause program (nodes/pause), the sandbox image containerd runs for every pod.
- `registry.k8s.io/coredns/coredns:v1.15.0`: our build of CoreDNS v1.15.0 (nodes/coredns: its module, our main.go
  with only the plugins the cluster's DNS uses), alone in the image as `/coredns`; `dns` runs it. Upstream's
  reference and tag, so manifests written for a real cluster name it; the binary is ours, the report says so.
- `python:3.12-slim` (`docker.io/library/python:3.12-slim`, the reference the suite's workloads name,
  `lwsconf.workloads.PROBE_IMAGE`): a Debian bookworm root filesystem with Debian's python3, made with
  `debootstrap --variant=minbase` from the Debian archive this machine's apt uses. Its Python is Debian's (3.11),
  not 3.12: the probe and emulator workloads are stdlib-only Python 3 (the report records the digest and what
  each image holds, so nothing pretends otherwise).

A pod naming any other image gets the real kubelet's ErrImagePull/ImagePullBackOff: no node has a route to a
registry. The root filesystem and the archives are cached under <cache>/images/, keyed by what they are made of.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lwsconf.controlplane import build as gobuild
from lwsconf.realnodes import images
from lwsconf.realnodes.build import NodeBinaries

PAUSE = "registry.k8s.io/pause:3.10"
COREDNS = "registry.k8s.io/coredns/coredns:v1.15.0"
PYTHON = "docker.io/library/python:3.12-slim"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_TIMEOUT = 1800.0
DEBOOTSTRAP_ATTEMPTS = 3
ROOTFS_PACKAGES = ("python3",)
ROOTFS_LINKS = {"usr/local/bin/python": "/usr/bin/python3"}
"""What the python image's users expect beyond Debian's packages: the official python images have `python` (the
suite's workloads run `python /lwsconf/probe.py`; without it the real kubelet reported `exec: "python": executable
file not found in $PATH`). Part of the cache key."""


class ImageBuildError(Exception):
    """An image that cannot be made; the message says what to install or where the log is."""


class ToolMissing(ImageBuildError):
    """A tool the build needs is not installed (debootstrap); the message names the package."""


@dataclass(frozen=True)
class CatalogEntry:
    reference: str
    made_of: str
    """What is in it, in words, for the report."""
    built: images.BuiltImage


def images_dir(cache: Path | None = None) -> Path:
    return (cache or gobuild.cache_root()) / "images"


def python_rootfs(cache: Path | None = None) -> Path:
    """Debian `DEBIAN_SUITE` minbase with `ROOTFS_PACKAGES`, made once by debootstrap (a few minutes) and reused."""
    return debootstrap_rootfs("python3", ROOTFS_PACKAGES, ROOTFS_LINKS, cache)


def debootstrap_rootfs(label: str, packages: Sequence[str], links: Mapping[str, str],
                       cache: Path | None = None) -> Path:
    """Debian `DEBIAN_SUITE` minbase with `packages` (and `links`: path in the root -> target), made once by
    debootstrap and reused; <cache>/images/rootfs-<suite>-<label>-<key>, the key hashing what it is made of.

    One maker at a time per key (a file lock: xdist workers and runs side by side share the cache). A failed attempt
    is tried again up to DEBOOTSTRAP_ATTEMPTS times, each attempt's output kept in the log: a Debian mirror in the
    middle of a sync once served a Release its Release.gpg did not sign ("Invalid Release signature"), which
    passed a minute later. Root filesystems of other keys are left alone: an older checkout may be using one.
    The kind node image (`lwsconf.kindnode`) makes its own root filesystem through this too."""
    key = hashlib.sha256(json.dumps([DEBIAN_SUITE, DEBIAN_MIRROR, list(packages), dict(links)]).encode()
                         ).hexdigest()[:12]
    root = images_dir(cache) / f"rootfs-{DEBIAN_SUITE}-{label}-{key}"
    done = root.with_name(root.name + ".done")
    if done.exists() and root.is_dir():
        return root
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ToolMissing(f"making the {label} root filesystem needs debootstrap (apt-get install debootstrap)")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and root.is_dir():  # made by another process while this one waited
            return root
        partial = root.with_name(root.name + ".partial")
        log = root.with_name(root.name + ".log")
        log.write_text("")
        for attempt in range(1, DEBOOTSTRAP_ATTEMPTS + 1):
            shutil.rmtree(partial, ignore_errors=True)
            with open(log, "a") as out:
                out.write(f"--- attempt {attempt} of {DEBOOTSTRAP_ATTEMPTS}\n")
                out.flush()
                result = subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(packages)}",
                                         DEBIAN_SUITE, str(partial), DEBIAN_MIRROR], stdout=out,
                                        stderr=subprocess.STDOUT, check=False, timeout=DEBOOTSTRAP_TIMEOUT)
            if result.returncode == 0:
                break
        else:
            shutil.rmtree(partial, ignore_errors=True)
            last = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-1:]
            raise ImageBuildError(f"debootstrap of {DEBIAN_SUITE} from {DEBIAN_MIRROR} failed {DEBOOTSTRAP_ATTEMPTS} "
                                  f"times (last: {last[0] if last else 'no output'}); log: {log}")
        for cached in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (partial / cached).glob("*"):
                if item.is_file():
                    item.unlink()
        for link, target in links.items():
            (partial / link).parent.mkdir(parents=True, exist_ok=True)
            (partial / link).unlink(missing_ok=True)
            (partial / link).symlink_to(target)
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
        done.write_text(DEBIAN_SUITE + "\n")
    return root


def _python_version(rootfs: Path) -> str:
    candidates = sorted(p.name for p in (rootfs / "usr" / "bin").glob("python3.*") if p.name[8:].isdigit())
    return candidates[-1].removeprefix("python") if candidates else "unknown"


def build_all(binaries: NodeBinaries, cache: Path | None = None) -> list[CatalogEntry]:
    """Every image of the catalogue as an OCI archive (reused when its inputs are unchanged: same digest)."""
    folder = images_dir(cache)
    pause = images.build(images.ImageSpec(PAUSE, files={"/pause": binaries.path("pause")}, entrypoint=("/pause",)),
                         folder / "pause.tar")
    binary = binaries.path("coredns")
    coredns = images.cached_build(images.ImageSpec(COREDNS, files={"/coredns": binary}, entrypoint=("/coredns",)),
                                  folder / "coredns.tar", stamp=_file_stamp(binary))
    rootfs = python_rootfs(cache)
    # named by its root filesystem: checkouts of another key side by side never overwrite each other's archive
    python = images.cached_build(images.ImageSpec(PYTHON, rootfs=rootfs, cmd=("python3",)),
                                 folder / f"python-{rootfs.name.rsplit('-', 1)[-1]}.tar", stamp=rootfs.name)
    return [CatalogEntry(PAUSE, "lwsconf's pause (nodes/pause), static", pause),
            CatalogEntry(COREDNS, "CoreDNS v1.15.0 (nodes/coredns: errors, health, ready, log, cache, kubernetes), "
                                  "static", coredns),
            CatalogEntry(PYTHON, f"Debian {DEBIAN_SUITE} minbase + python3 {_python_version(rootfs)} (debootstrap)",
                         python)]


def _file_stamp(path: Path) -> str:
    """Size and modification time: a rebuilt binary is a new file (the build renames it into place)."""
    info = path.stat()
    return f"{path}:{info.st_size}:{info.st_mtime_ns}"
