"""The differential corpus's figures: interactions, identical, accepted, different, seconds (issue 14).

Runs the whole corpus (`lwsconf fidelity`, the same code) against the sim and the real kube-apiserver
of one pinned release and records the totals, per topic, with the machine's load average (a loaded
machine only changes the seconds; the counts do not depend on timing). Nothing is asserted. Without
a built control plane it records why it did not run instead of a figure.

    python -m bench.fidelity --out bench/results.json [--kubernetes-version 1.37.2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bench._simproc import load_average, machine, write_results
from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, compare, corpus, servers


def run(version: str | None) -> dict[str, Any]:
    try:
        release = servers.release_or_not_built(version)
    except (servers.NotBuilt, versions.UnknownVersion) as exc:
        return {"skipped": str(exc), "machine": machine()}
    started, load_before = time.monotonic(), load_average()
    results = cli.run_both(release, corpus.select(None))
    seconds = time.monotonic() - started
    by_topic: dict[str, list[compare.Result]] = {}
    for r in results:
        by_topic.setdefault(r.id.split("/")[0], []).append(r)

    def figures(items: list[compare.Result]) -> dict[str, Any]:
        t = compare.totals(items)
        return {"interactions": t.interactions, "identical": t.identical, "accepted": t.accepted,
                "different": t.different, "identical_percent": round(t.percent, 1)}

    return {"kubernetes": release.kubernetes, **figures(results), "seconds": round(seconds, 1),
            "topics": {topic: figures(items) for topic, items in by_topic.items()},
            "load_average_before": load_before, "load_average_after": load_average(), "machine": machine()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity")
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--kubernetes-version", default=None)
    args = parser.parse_args(argv)
    figures = run(args.kubernetes_version)
    write_results(args.out, "fidelity", figures)
    print(compare.Totals(figures["interactions"], figures["identical"], figures["accepted"], figures["different"])
          .line() if "interactions" in figures else f"fidelity: skipped: {figures['skipped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
