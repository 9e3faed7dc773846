"""`lwsconf diff-impls [--a IMPL] [--b IMPL] [--scenarios S,...|ci] [--out PAGE.md] [--json FILE] [--check]`.

Runs the scenarios against both implementations (each on its own fresh sim cluster), prints one line per
differing row, writes the Markdown page and the JSON when asked, and ends with a count line. Exit status:
0 when it ran; with `--check` (what `make diff-impls` passes), 3 when a difference is not in
`dispositions.DISPOSITIONS` or a listed one no longer appears (each printed, with what to do); 2 with one
line for what a user can fix (an unknown implementation or scenario, no Go for upstream, an unwritable
output); 1 when a side could not be set up.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import time
from pathlib import Path

from lwsconf.implcompare import diff, dispositions, render, run, scenarios
from lwsconf.implcompare.model import Scenario, SideRun
from lwsconf.waits.core import WaitTimeout

CHECK_FAILED = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lwsconf diff-impls",
                                     description="two LWS implementations compared object by object on the sim")
    parser.add_argument("--a", default="reference", help=f"side a (default reference): {', '.join(run.IMPLS)}")
    parser.add_argument("--b", default="upstream-local", help="side b (default upstream-local, the pinned release)")
    parser.add_argument("--cluster", default="sim", choices=run.CLUSTERS,
                        help="where each side runs: a fresh sim (default) or a fresh local cluster (the real control "
                             "plane with the sim's nodes; needs `lwsconf controlplane build`)")
    parser.add_argument("--kubernetes-version", default=None, help="--cluster=local: the pinned release (default: "
                        "the newest)")
    parser.add_argument("--scenarios", default=None,
                        help=f"comma-separated scenarios, or 'ci' ({', '.join(scenarios.CI)}); default: all of "
                             f"{', '.join(s.name for s in scenarios.SCENARIOS)}")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown page here "
                        "(e.g. docs/implementation-diff.md)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows as JSON here")
    parser.add_argument("--snapshots", type=Path, default=None,
                        help="write every normalised snapshot here, as DIR/<a|b>/<scenario>/<snapshot>.json")
    parser.add_argument("--check", action="store_true",
                        help="exit 3 on a difference not in the dispositions list, or a listed one no longer seen")
    parser.add_argument("--steady-timeout", type=float, default=run.Waits.steady,
                        help=f"seconds to reach steady state after creation or a step (default {run.Waits.steady:g})")
    parser.add_argument("--settle", type=float, default=run.Waits.settle,
                        help=f"seconds the objects must stay unchanged to be steady (default {run.Waits.settle:g})")
    return parser


def _needs_go(impl: str, cluster: str) -> str | None:
    if cluster == "local" and shutil.which("go") is None:
        return ("--cluster=local: the real control plane is built with Go, which is not on PATH: install Go 1.26 "
                "(or use --cluster=sim)")
    if impl.startswith("upstream-local") and shutil.which("go") is None:
        return (f"{impl}: upstream's manager is built with Go, which is not on PATH: install Go 1.26 (or compare "
                "reference with reference-process)")
    return None


def _select(value: str | None) -> list[Scenario]:
    if value == "ci":
        return scenarios.by_name(list(scenarios.CI))
    return scenarios.by_name([v.strip() for v in value.split(",") if v.strip()] if value else None)


def _write_snapshots(folder: Path, sides: list[SideRun]) -> None:
    for label, side in zip(("a", "b"), sides, strict=True):
        for scenario, snaps in side.snapshots.items():
            (folder / label / scenario).mkdir(parents=True, exist_ok=True)
            for name, snap in snaps.items():
                (folder / label / scenario / f"{name}.json").write_text(json.dumps(snap, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        chosen = _select(args.scenarios)
    except ValueError as exc:
        print(f"lwsconf diff-impls: {exc}", file=sys.stderr)
        return 2
    for impl in (args.a, args.b):
        bad = _needs_go(impl, args.cluster) or (None if impl in run.IMPLS[:2] or impl.startswith("upstream-local") else
                                  f"unknown implementation {impl!r}; use one of {', '.join(run.IMPLS)}")
        if bad:
            print(f"lwsconf diff-impls: {bad}", file=sys.stderr)
            return 2
    missing = run.preflight(args.cluster, args.kubernetes_version)
    if missing:
        print(f"lwsconf diff-impls: {missing}", file=sys.stderr)
        return 2
    waits = run.Waits(steady=args.steady_timeout, settle=args.settle)
    started = time.monotonic()
    sides = []
    for impl in (args.a, args.b):
        print(f"diff-impls: {impl} on a fresh {args.cluster} cluster: {', '.join(s.name for s in chosen)}",
              flush=True)
        try:
            sides.append(run.run_side(impl, chosen, waits, sys.stdout, on=args.cluster,
                                      kubernetes_version=args.kubernetes_version))
        except (run.ImplError, WaitTimeout, OSError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            print(f"lwsconf diff-impls: {impl} could not be set up: {reason}", file=sys.stderr)
            return 1
    seconds = time.monotonic() - started
    found = diff.compare(sides[0], sides[1])
    judged = dispositions.judge(found, dispositions.DISPOSITIONS, [s.name for s in chosen])
    rows = diff.rows(found, judged.keys)
    for r in sorted(rows, key=lambda r: (r.scenario, r.snapshot, r.kind, r.path)):
        print(f"{r.disposition or 'UNLISTED'}: {r.scenario}/{r.snapshot}: {r.kind} {r.path}: {r.a!r} != {r.b!r} "
              f"({', '.join(r.objects)})")
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page_run = render.Run(args.a, args.b, chosen, rows, judged.stale, seconds, when, cluster=args.cluster)
    try:
        if args.out is not None:
            existing = args.out.read_text() if args.out.exists() else None
            args.out.write_text(render.page(page_run, existing))
        if args.json is not None:
            args.json.write_text(render.to_json(page_run))
        if args.snapshots is not None:
            _write_snapshots(args.snapshots, sides)
    except OSError as exc:
        print(f"lwsconf diff-impls: cannot write {exc.filename}: {exc.strerror}; pass a writable --out/--json",
              file=sys.stderr)
        return 2
    unlisted = sum(1 for r in rows if r.disposition is None)
    print(f"diff-impls: {len(chosen)} scenarios, {len(rows)} differing rows ({unlisted} unlisted), "
          f"{len(judged.stale)} stale dispositions, {seconds:.0f} s")
    if args.check and not judged.ok:
        for e, s in judged.stale:
            print(f"lwsconf diff-impls: disposition {e.key} ({'/'.join(e.kinds)} {', '.join(e.paths)}) no longer "
                  f"matches any difference in "
                  f"scenario {s}: remove it from lwsconf/implcompare/dispositions.py (or that scenario from its list)",
                  file=sys.stderr)
        if unlisted:
            print(f"lwsconf diff-impls: {unlisted} differing rows are not in lwsconf/implcompare/dispositions.py "
                  "(listed above as UNLISTED): for each, write a conformance test (the contract requires one "
                  "behaviour), or add a disposition (a documented divergence or an implementation freedom)",
                  file=sys.stderr)
        return CHECK_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
