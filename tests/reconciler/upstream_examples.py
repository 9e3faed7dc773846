"""Upstream's LeaderWorkerSet example manifests, read where they already are, never copied into this repository.

Two places hold them unmodified:

* upstream's own Go module in the Go module cache, `sigs.k8s.io/lws@v0.10.0`, whose zip carries
  `docs/examples/` (`.ci/run` puts it there with `go mod download -json sigs.k8s.io/lws@v0.10.0` when Go is
  installed; the tests never download anything);
* a `shared/` folder beside the checkout: `shared/data/upstream-lws-examples/`, the same files named by their
  upstream path under docs/examples/ with `/` replaced by `_` (sample/lws.yaml -> sample_lws.yaml).

With neither, the tests that need them skip and say why; `LWSCONF_REQUIRE_UPSTREAM_EXAMPLES=1` (set by
.ci/run, whose machines have both) turns that skip into a failure, so CI cannot pass without them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE, VERSION = "sigs.k8s.io/lws", "v0.10.0"
SHARED_DIR = ROOT.parent / "shared" / "data" / "upstream-lws-examples"
REQUIRE_ENV = "LWSCONF_REQUIRE_UPSTREAM_EXAMPLES"
EXAMPLES = (
    "sample/horizontal-pod-autoscaler.yaml", "sample/lws-exclusive-placement.yaml", "sample/lws-multi-template.yaml",
    "sample/lws-restart-policy.yaml", "sample/lws-rollout-strategy.yaml", "sample/lws-volume-claim-templates.yaml",
    "sample/lws.yaml", "sglang/lws.yaml", "tensorrt-llm/lws.yaml", "vllm/GPU/lws.yaml",
)
"""The example files under upstream's docs/examples/ that the tests read (those shared/ holds too)."""


@dataclass(frozen=True)
class Examples:
    where: str
    files: dict[str, Path]
    """By flat name (sample_lws.yaml) -> the file."""


def module_cache() -> Path | None:
    """$GOMODCACHE, else what `go env GOMODCACHE` says when Go is installed, else Go's default location."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = shutil.which("go")
    if go is not None:
        try:
            out = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            return Path(out)
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path.home() / "go")
    return Path(gopath) / "pkg" / "mod"


def _complete(folder: Path, name_of: dict[str, str]) -> dict[str, Path] | None:
    files = {flat: folder / rel for rel, flat in name_of.items()}
    return files if all(p.is_file() for p in files.values()) else None


def find(cache: Path | None = None, shared: Path = SHARED_DIR) -> Examples | None:
    """The examples from the module cache, else from shared/; None when neither holds all of them."""
    flat = {rel: rel.replace("/", "_") for rel in EXAMPLES}
    cache = cache if cache is not None else module_cache()
    if cache is not None:
        folder = cache / f"{MODULE}@{VERSION}" / "docs" / "examples"
        files = _complete(folder, flat)
        if files is not None:
            return Examples(f"Go module cache ({folder})", files)
    files = _complete(shared, {name: name for name in flat.values()})
    return Examples(f"shared folder ({shared})", files) if files is not None else None


def missing_reason(cache: Path | None = None, shared: Path = SHARED_DIR) -> str:
    cache = cache if cache is not None else module_cache()
    return ("upstream LWS examples not found: neither in the Go module cache "
            f"({cache}/{MODULE}@{VERSION}/docs/examples;"
            f" fetch it with `go mod download -json {MODULE}@{VERSION}`) nor in {shared}")


def require(found: Examples | None) -> Examples:
    """`found`, or skip the test saying where the examples were looked for (a failure under REQUIRE_ENV=1)."""
    if found is not None:
        return found
    reason = missing_reason()
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: CI must have them)", pytrace=False)
    pytest.skip(reason)
