"""`lwsconf fidelity --fail-under PERCENT`: the floor `make fidelity` holds the sim to in CI.

The servers are replaced by canned results here (what `run_both` compares is tested against the real
kube-apiserver in test_against_kube_apiserver.py); what is tested is the verdict and the exit status.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lwsconf.controlplane import versions
from lwsconf.fidelity import cli, compare
from lwsconf.fidelity import servers as fidelity_servers
from lwsconf.fidelity.model import Answer, Scenario, Step, StepRecord


def canned(identical: int, different: int) -> list[compare.Result]:
    """`identical + different` interactions of which the first `identical` got the same answer from both."""
    steps = tuple(Step(f"s{i}") for i in range(identical + different))

    def records(values: list[int]) -> list[StepRecord]:
        return [StepRecord(s, {"method": "GET", "path": "/x", "query": {}, "headers": {}, "body": None},
                           Answer(200, {"v": v}), {}) for s, v in zip(steps, values, strict=True)]

    sim = records([0] * len(steps))
    real = records([0] * identical + [1] * different)
    return compare.compare([Scenario("topic", "sc", steps)], {"sc": sim}, {"sc": real}, {})


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[list[compare.Result]]:
    """main() with the servers replaced: `servers.append(results)` chooses what the next run finds."""
    found: list[list[compare.Result]] = []
    monkeypatch.setattr(fidelity_servers, "release_or_not_built", lambda version: versions.RELEASES[0])

    def run_both(release: versions.Release, scenarios: Sequence[Scenario],
                 prelude: Sequence[Step] = ()) -> list[compare.Result]:
        return found.pop()

    monkeypatch.setattr(cli, "run_both", run_both)
    return found


def test_the_floor_is_met_at_the_printed_figure_and_missed_below_it() -> None:
    t = compare.totals(canned(1, 2))  # 33.3%
    assert cli.floor_verdict(t, None) is None
    assert cli.floor_verdict(t, 33.3) is None  # a floor copied from the printed line holds for that run
    missed = cli.floor_verdict(t, 33.4)
    assert missed == ("lwsconf fidelity: 33.3% identical is below the floor of 33.4% (--fail-under): 1 of 3 "
                      "interactions; the differences are listed above (and on the page with --out)")


def test_below_the_floor_exits_3_after_the_figure_and_the_page(servers: list[list[compare.Result]], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    servers.append(canned(1, 3))
    page = tmp_path / "fidelity.md"
    assert cli.main(["--out", str(page), "--fail-under", "30"]) == cli.BELOW_FLOOR
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "fidelity: 4 interactions, 1 identical (25.0%)"
    assert "25.0% identical is below the floor of 30%" in err
    assert page.read_text().startswith("# Sim fidelity")  # written anyway: it shows what got worse


def test_at_or_above_the_floor_and_without_one_it_exits_0(servers: list[list[compare.Result]]) -> None:
    servers += [canned(3, 1), canned(1, 1)]
    assert cli.main(["--fail-under", "50"]) == 0  # canned(1, 1): exactly 50%
    assert cli.main([]) == 0  # canned(3, 1) with no floor


@pytest.mark.parametrize("floor", ["-1", "100.5"])
def test_a_floor_that_is_no_percentage_is_a_usage_error(servers: list[list[compare.Result]], floor: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--fail-under", floor]) == 2
    assert "give a percentage between 0 and 100" in capsys.readouterr().err
