"""`lwsconf fidelity [--out docs/sim-fidelity.md] [--kubernetes-version V] [--topic T ...] [--fail-under P]`.

Runs the corpus against the sim and the real kube-apiserver, prints one line per difference, writes
the page when `--out` is given, and ends with `fidelity: N interactions, M identical (P%)`. Exit
status 0 when it ran (the figure is the result, not a verdict), unless `--fail-under P` makes it one:
3 when fewer than P percent of the interactions are identical, so that CI (`make fidelity`) catches a
change that makes the sim answer less like kube-apiserver (the page is written either way, to show
which). 2 with one line for what a user can fix (nothing built, unknown version or topic, unwritable
page, a floor outside 0-100), 1 when a server failed to start.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from lwsconf.controlplane import versions
from lwsconf.fidelity import accepted, compare, corpus, page, run, servers
from lwsconf.fidelity.compare import Result
from lwsconf.fidelity.model import Scenario, StepRecord
from lwsconf.waits.core import WaitTimeout


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf fidelity",
                                     description="the differential corpus: sim API server vs real kube-apiserver")
    parser.add_argument("--out", type=Path, default=None, help="write the page here (e.g. docs/sim-fidelity.md)")
    parser.add_argument("--kubernetes-version", default=None,
                        help=f"a pinned release ({', '.join(r.kubernetes for r in versions.RELEASES)})")
    parser.add_argument("--topic", "--topics", action="append", default=None,
                        help=f"run only this topic (repeatable, or comma-separated): {', '.join(corpus.topics())}; "
                             f"{', '.join(corpus.OPT_IN)} only when named")
    parser.add_argument("--fail-under", type=float, default=None, metavar="PERCENT",
                        help="exit 3 when the identical share is below PERCENT (a floor for CI)")
    return parser


BELOW_FLOOR = 3
"""Exit status when the identical share is below --fail-under."""


def floor_verdict(totals: compare.Totals, fail_under: float | None) -> str | None:
    """None when there is no floor or the run meets it, else the line that says by how much it missed.

    Compared on the rounded figure the last line prints, so a floor copied from that line is met by the
    same run."""
    if fail_under is None or round(totals.percent, 1) >= fail_under:
        return None
    return (f"lwsconf fidelity: {totals.percent:.1f}% identical is below the floor of {fail_under:g}% "
            f"(--fail-under): {totals.identical} of {totals.interactions} interactions; the differences are "
            "listed above (and on the page with --out)")


def run_both(release: versions.Release, scenarios: Sequence[Scenario]) -> list[Result]:
    """Run `scenarios` on both servers (API-only ones on bare servers, controller ones with
    controllers, node ones on clusters with nodes) and compare."""
    sim_records: dict[str, list[StepRecord]] = {}
    real_records: dict[str, list[StepRecord]] = {}
    for group in ("api", "controllers", "nodes"):
        chosen = [s for s in scenarios if _group(s) == group]
        if not chosen:
            continue
        with servers.sim(group == "controllers", nodes=group == "nodes") as endpoint:
            sim_records.update(run.run_corpus(endpoint, chosen))
        with servers.real_nodes(release) if group == "nodes" else servers.real(release, group == "controllers") \
                as endpoint:
            real_records.update(run.run_corpus(endpoint, chosen))
    return compare.compare(scenarios, sim_records, real_records, accepted.ACCEPTED)


def _group(scenario: Scenario) -> str:
    return "nodes" if scenario.nodes else "controllers" if scenario.controllers else "api"


def without_unrunnable(release: versions.Release, scenarios: Sequence[Scenario]) -> tuple[list[Scenario], str | None]:
    """`scenarios` less the node ones when real nodes cannot run here, and the line saying so (None: all run)."""
    if not any(s.nodes for s in scenarios):
        return list(scenarios), None
    why = servers.nodes_unavailable(release)
    if why is None:
        return list(scenarios), None
    skipped = sorted({s.topic for s in scenarios if s.nodes})
    return [s for s in scenarios if not s.nodes], f"lwsconf fidelity: skipping {', '.join(skipped)}: {why}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        release = servers.release_or_not_built(args.kubernetes_version)
        wanted = [t.strip() for given in args.topic for t in given.split(",") if t.strip()] if args.topic else None
        scenarios, skipping = without_unrunnable(release, corpus.select(wanted))
    except (versions.UnknownVersion, servers.NotBuilt, ValueError) as exc:
        print(f"lwsconf fidelity: {exc}", file=sys.stderr)
        return 2
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        print(f"lwsconf fidelity: --fail-under {args.fail_under:g}: give a percentage between 0 and 100",
              file=sys.stderr)
        return 2
    if skipping is not None:
        print(skipping, file=sys.stderr)
    started = time.monotonic()
    try:
        results = run_both(release, scenarios)
    except (WaitTimeout, servers.NotBuilt, OSError) as exc:
        print(f"lwsconf fidelity: a server did not start: {exc}", file=sys.stderr)
        return 1
    seconds = time.monotonic() - started
    for r in results:
        if not r.identical:
            print(f"{'accepted' if r.accepted else 'DIFFERENT'}: {r.id}: {r.lines[0]}")
    if args.out is not None:
        existing = args.out.read_text() if args.out.exists() else None
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        try:
            args.out.write_text(page.render(results, kubernetes=release.kubernetes, seconds=seconds, when=when,
                                            existing=existing))
        except OSError as exc:
            print(f"lwsconf fidelity: cannot write {args.out}: {exc.strerror}; pass a writable --out", file=sys.stderr)
            return 2
        print(f"page written to {args.out} ({seconds:.0f} s)")
    totals = compare.totals(results)
    print(totals.line())
    missed = floor_verdict(totals, args.fail_under)
    if missed is not None:
        print(missed, file=sys.stderr)
        return BELOW_FLOOR
    return 0


if __name__ == "__main__":
    sys.exit(main())
