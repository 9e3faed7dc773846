"""API server fuzz run: thousands of bad requests, counted by outcome, into the "fuzz_apiserver" section.

The long profile of tests/sim/apiserver/http/test_fuzz.py: the same grammar (`fuzz_requests`) and judge
(`fuzz_oracle`) against one live sim API server, but instead of stopping at the first problem every
request is counted: requests tried, answers per HTTP status and per family, 5xx answers, hangs (no
answer within the per-request timeout), lost writes (a target or sentinel that no longer reads back
byte-identical) and times /readyz did not answer. Nothing is asserted here (README.md, Benchmarks); the
problems found are listed (first 50) so that each can be fixed and pinned by an `@example` in the test.

    python -m bench.fuzz_apiserver --out bench/results.json [--requests 3000] [--seed 13]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

from bench._simproc import machine, write_results
from tests.sim.apiserver.http import fuzz_requests as fr
from tests.sim.apiserver.http.fuzz_oracle import REQUEST_TIMEOUT_S, FuzzServer, Tally


def run(server: FuzzServer, requests: int, run_seed: int) -> Tally:
    """Draw `requests` requests from the grammar (seeded, so a run can be repeated) and count every outcome;
    unlike the test, a problem does not stop the run (no shrinking either)."""
    tally = Tally()

    @seed(run_seed)
    @settings(max_examples=requests, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(req=fr.any_request)
    def one(req: fr.FuzzRequest) -> None:
        server.exercise(req, tally)  # reads targets and sentinels back after every request: a loss is pinned to it

    one()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lwsconf-fuzz-") as tmp:
        server = FuzzServer.start(Path(tmp))
        try:
            started = time.perf_counter()
            tally = run(server, args.requests, args.seed)
            elapsed = time.perf_counter() - started
            final_lost = server.lost_writes()
            alive = server.alive()
        finally:
            server.stop()
    results = {
        "machine": machine(), "seed": args.seed, "requests_asked": args.requests,
        "requests_tried": tally.requests, "elapsed_s": round(elapsed, 1),
        "requests_per_s": round(tally.requests / elapsed, 1) if elapsed else None,
        "by_status": {str(k): v for k, v in sorted(tally.by_status.items())},
        "by_family": dict(sorted(tally.by_family.items())),
        "server_errors_5xx": tally.server_errors, "hangs": tally.hangs,
        "hang_timeout_s": REQUEST_TIMEOUT_S, "lost_writes": tally.lost_writes + len(final_lost),
        "readyz_failures": tally.dead, "alive_at_end": alive,
        "problems": len(tally.problems), "first_problems": [p[:600] for p in tally.problems[:50]],
    }
    write_results(args.out, "fuzz_apiserver", results)
    summary = {k: v for k, v in results.items() if k != "first_problems"}
    print(summary)
    for problem in tally.problems[:50]:
        print("-", problem[:600])
    return 0


if __name__ == "__main__":
    sys.exit(main())
