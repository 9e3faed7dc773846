"""`lwsconf fidelity [--corpus in-sample|held-out] [--out PAGE] [--kubernetes-version V] [--topic T] [--fail-under P]`
and `lwsconf fidelity record --out lwsconf/fidelity/heldout` (`record.py`).

Runs a corpus against the sim and the real kube-apiserver, prints one line per difference, writes
the page when `--out` is given, and ends with `fidelity: N interactions, M identical (P%)`: the hand-written
corpus (`corpus/`, `--corpus in-sample`, the default) or the one recorded from real traffic (`heldout/`,
`--corpus held-out`, ending `held-out: N interactions, M identical (P%)`; its topics are its sources). Exit
status 0 when it ran (the figure is the result, not a verdict), unless `--fail-under P` makes it one:
3 when fewer than P percent of the interactions are identical, so that CI (`make fidelity`) catches a
change that makes the sim answer less like kube-apiserver (the page is written either way, to show
which). 2 with one line for what a user can fix (nothing built, unknown version or topic, unwritable
page, a floor outside 0-100), 1 when a server failed to start.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from lwsconf.controlplane import versions
from lwsconf.fidelity import accepted, compare, corpus, heldout, page, run, servers
from lwsconf.fidelity.client import Endpoint
from lwsconf.fidelity.compare import Result
from lwsconf.fidelity.model import Scenario, Step, StepRecord
from lwsconf.waits.core import WaitTimeout


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf fidelity",
                                     description="the differential corpus: sim API server vs real kube-apiserver")
    parser.add_argument("--out", type=Path, default=None, help="write the page here (e.g. docs/sim-fidelity.md)")
    parser.add_argument("--corpus", choices=CORPORA, default=CORPORA[0],
                        help="in-sample: the hand-written corpus the sim was fixed against (default); held-out: "
                             "scenarios recorded from real clients' traffic (lwsconf fidelity record)")
    parser.add_argument("--kubernetes-version", default=None,
                        help=f"a pinned release ({', '.join(r.kubernetes for r in versions.RELEASES)})")
    parser.add_argument("--topic", "--topics", action="append", default=None,
                        help=f"run only this topic (repeatable, or comma-separated): {', '.join(corpus.topics())}; "
                             f"{', '.join(corpus.OPT_IN)} only when named")
    parser.add_argument("--fail-under", type=float, default=None, metavar="PERCENT",
                        help="exit 3 when the identical share is below PERCENT (a floor for CI)")
    return parser


CORPORA = ("in-sample", "held-out")
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


def run_both(release: versions.Release, scenarios: Sequence[Scenario],
             prelude: Sequence[Step] = ()) -> list[Result]:
    """Run `scenarios` on both servers (API-only ones on bare servers, controller ones with
    controllers, node ones on clusters with nodes) and compare. A `prelude` (the held-out corpus's
    cluster-scoped setup) runs first on every server; its answers are compared once, from the first group.

    The two servers are replayed at the same time, the sim in a second thread: they share nothing, so the wall
    time is the slower side's, not the sum (the held-out corpus waits on controllers on both). When one side
    fails or is interrupted, the other stops at its next step, its servers stopped on the way out."""
    first = Scenario(PRELUDE_TOPIC, "prelude", tuple(prelude))
    stop = threading.Event()

    def replay(open_server: Callable[[str], AbstractContextManager[Endpoint]]) -> dict[str, list[StepRecord]]:
        records: dict[str, list[StepRecord]] = {}
        try:
            for group in ("api", "controllers", "nodes"):
                chosen = [s for s in scenarios if _group(s) == group]
                if not chosen:
                    continue
                with open_server(group) as endpoint:
                    records.setdefault(first.name, run.run_prelude(endpoint, prelude, scenarios))
                    records.update(run.run_corpus(endpoint, chosen, stop))
        except BaseException:
            stop.set()
            raise
        return records

    def sim_server(group: str) -> AbstractContextManager[Endpoint]:
        return servers.sim(group == "controllers", nodes=group == "nodes")

    def real_server(group: str) -> AbstractContextManager[Endpoint]:
        return servers.real_nodes(release) if group == "nodes" else servers.real(release, group == "controllers")

    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="fidelity-sim") as pool:
        sim_side = pool.submit(replay, sim_server)
        try:
            real_records = replay(real_server)
        except run.Stopped:
            sim_side.result()  # the sim side's own failure, which stopped this one
            raise
        sim_records = sim_side.result()
    compared = [first, *scenarios] if prelude and first.name in sim_records else list(scenarios)
    return compare.compare(compared, sim_records, real_records, accepted.ACCEPTED)


PRELUDE_TOPIC = "held-out-prelude"


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
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["record"]:
        from lwsconf.fidelity import record as record_cli

        return record_cli.main(given[1:])
    args = _parser().parse_args(given)
    prelude: tuple[Step, ...] = ()
    try:
        release = servers.release_or_not_built(args.kubernetes_version)
        wanted = [t.strip() for given in args.topic for t in given.split(",") if t.strip()] if args.topic else None
        if args.corpus == "held-out":
            held = heldout.load(sources=wanted)
            prelude, chosen = held.prelude, list(held.scenarios)
            print("\n".join(held.summary()))
        else:
            chosen = corpus.select(wanted)
        scenarios, skipping = without_unrunnable(release, chosen)
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
        results = run_both(release, scenarios, prelude)
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
                                            existing=existing, corpus=args.corpus))
        except OSError as exc:
            print(f"lwsconf fidelity: cannot write {args.out}: {exc.strerror}; pass a writable --out", file=sys.stderr)
            return 2
        print(f"page written to {args.out} ({seconds:.0f} s)")
    ran_out = compare.waits_ran_out(results)
    if ran_out is not None:
        print(ran_out)
    totals = compare.totals(results)
    print(totals.line("held-out" if args.corpus == "held-out" else "fidelity"))
    missed = floor_verdict(totals, args.fail_under)
    if missed is not None:
        print(missed, file=sys.stderr)
        return BELOW_FLOOR
    return 0


if __name__ == "__main__":
    sys.exit(main())
