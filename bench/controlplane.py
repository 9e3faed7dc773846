"""Real control-plane build: cold and warm build time, binary sizes, build-cache disk use (issue 14).

Three builds of one pinned Kubernetes release through `lwsconf.controlplane.build` (the code behind
`lwsconf controlplane build`), each into a fresh temporary cache directory:

* cold: an empty Go build cache (a temporary GOCACHE) — every package compiled. The Go module cache
  is the machine's own, so module downloads are not part of the figure (`modules_cached` says so);
* warm: the same, now full, GOCACHE and a new output directory — what a checkout that changed nothing
  Go-related costs after the binaries were removed (mostly linking);
* skip: the warm output directory again — the stamp matches and nothing is built.

It also records each binary's size, the GOCACHE's size after the cold build, and the load average
sampled during the builds (the machine is shared: a loaded machine builds slower). Nothing is asserted.
`--install` moves the cold build's binaries into the user's cache (`lwsconf controlplane where`)
unless an up-to-date build is already there, so the bench's compile is not wasted.

    python -m bench.controlplane --out bench/results.json [--kubernetes-version 1.37.2] [--install]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench._simproc import load_average, machine, write_results
from lwsconf.controlplane import build, versions

LOAD_SAMPLE_EVERY = 15.0
"""Seconds between two load-average samples during the builds."""


class LoadSampler:
    """Samples the 1-minute load average in a thread until stopped."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(LOAD_SAMPLE_EVERY):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        return {"mean": round(sum(self.samples) / len(self.samples), 2), "max": round(max(self.samples), 2),
                "samples": len(self.samples)}


def du_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def timed_build(release: versions.Release, cache: Path, go: str, go_version: str) -> tuple[build.Result, float]:
    plan = build.plan(release, go=go, go_version=go_version, cache=cache, nice=shutil.which("nice"))
    t0 = time.monotonic()
    result = build.execute(plan, sys.stdout)
    return result, round(time.monotonic() - t0, 2)


def run(release: versions.Release, install: bool) -> dict[str, Any]:
    go, go_version = build.find_go()
    figures: dict[str, Any] = {"kubernetes": release.kubernetes, "etcd": release.etcd, "go": go_version,
                               "machine": machine(), "load_average_before": load_average(),
                               "modules_cached": True, "niceness": 19}
    with tempfile.TemporaryDirectory(prefix="lwsconf-bench-gocache-") as gocache, \
            tempfile.TemporaryDirectory(prefix="lwsconf-bench-cp-") as tmp:
        os.environ["GOCACHE"] = gocache  # the build's `go` inherits it: an empty build cache = cold
        cold_dir, warm_dir = Path(tmp) / "cold", Path(tmp) / "warm"
        with LoadSampler() as load:
            cold, cold_s = timed_build(release, cold_dir, go, go_version)
            figures["gocache_bytes_after_cold"] = du_bytes(Path(gocache))
            warm, warm_s = timed_build(release, warm_dir, go, go_version)
            skip, skip_s = timed_build(release, warm_dir, go, go_version)
        figures.update({
            "cold_seconds": cold_s, "cold_components": cold.components,
            "warm_seconds": warm_s, "warm_components": warm.components,
            "skip_seconds": skip_s, "skip_was_skipped": skip.skipped,
            "binary_bytes": {name: int(c["bytes"]) for name, c in cold.components.items()},
            "binary_bytes_total": int(sum(c["bytes"] for c in cold.components.values())),
            "load_average_during": load.summary(), "load_average_after": load_average()})
        if install:
            figures["installed_to"] = _install(release, cold_dir)
    return figures


def _install(release: versions.Release, built_cache: Path) -> str:
    target = build.version_dir(release)
    go, go_version = build.find_go()
    if build.up_to_date(build.plan(release, go=go, go_version=go_version)):
        return f"{target} (already up to date, left alone)"
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(build.version_dir(release, built_cache), target)
    return str(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--kubernetes-version", default=None, help="a pinned release (default: the newest)")
    parser.add_argument("--install", action="store_true",
                        help="keep the cold build's binaries as the user's cached build")
    args = parser.parse_args(argv)
    try:
        release = versions.resolve(args.kubernetes_version)
        figures = run(release, args.install)
    except (versions.UnknownVersion, build.BuildError) as exc:
        print(f"bench.controlplane: {exc}", file=sys.stderr)
        return 2
    figures["command"] = shlex.join(["python", "-m", "bench.controlplane",
                                     *(argv if argv is not None else sys.argv[1:])])
    write_results(args.out, "controlplane", figures)
    print(f"controlplane {release.kubernetes}: cold {figures['cold_seconds']}s, warm {figures['warm_seconds']}s, "
          f"skip {figures['skip_seconds']}s, binaries {figures['binary_bytes_total'] / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
