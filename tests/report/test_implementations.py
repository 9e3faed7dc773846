"""The implementations page (`lwsconf report compare`, `make implementations`): feature by implementation by
cluster, known divergences linked to their evidence, and a run not made shown as such instead of left out."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from lwsconf.conformance import Outcome
from lwsconf.features import Feature
from lwsconf.report import cli, implementations, schema, yaml_writer

REPO = Path(__file__).resolve().parents[2]
TABLE = """# a comment line
divergences:
- id: backwards
  implementation: upstream
  test: ScaleDownHighestIndexFirst
  class: version
  since: v0.9.0
  fixed: {in: v0.10.0, commit: abc1234, pr: 1}
  evidence: >-
    v0.9.0 adds groups
    backwards (pkg/x.go:1), which the contract forbids.
  seen: [{version: v0.9.0, cluster: local, message: "groups added 0, 1"}]
- id: other
  implementation: upstream
  test: Other
  class: c
  since: v0.9.0
  evidence: unrelated, but long enough to say why it departs (pkg/y.go:2).
  seen: [{version: main-060ab4d, cluster: sim, message: "x"}]
"""
SIM_UPSTREAM = ("upstream lws v0.9.0 on sim", "the sim API server does not serve protobuf yet")


def passing(report: schema.Report) -> schema.Report:
    tests = tuple(replace(t, result=Outcome.SUCCEEDED, message="") if t.result is Outcome.FAILED else t
                  for t in report.tests)
    return replace(report, tests=tests)


def on(report: schema.Report, backend: str, project: str, version: str, date: str) -> schema.Report:
    impl = replace(report.implementation, organization="kubernetes-sigs" if project == "lws" else "", project=project,
                   version=version)
    env = replace(report.environment, kubernetes_version="v1.37.2" if backend == "local" else "v1.37.0-lwsconf-sim",
                  simulated=("node image", "kubelets") if backend == "local" else ("node image",))
    return replace(report, implementation=impl, environment=env, backend=backend, date=date)


def upstream_local(report: schema.Report) -> schema.Report:
    """Upstream on local: ScaleDownHighestIndexFirst failed as the table expects (the rest of LWSScaling passed)."""
    up = on(passing(report), "local", "lws", "v0.9.0", "2026-12-03T04:10:00+00:00")
    assert any(t.short_name == "ScaleDownHighestIndexFirst" for t in up.tests)
    return replace(up, tests=tuple(
        replace(t, result=Outcome.KNOWN_DIVERGENCE, message="v0.9.0 adds groups backwards (pkg/x.go:1).")
        if t.short_name == "ScaleDownHighestIndexFirst" else t for t in up.tests))


@pytest.fixture
def runs(report: schema.Report) -> list[implementations.Run]:
    ref = passing(report)
    return [
        implementations.Run("reports/sim-reference/latest",
                            on(ref, "sim", "reference", "", "2026-12-03T03:50:00+00:00")),
        implementations.Run("reports/local-reference/latest",
                            on(ref, "local", "reference", "", "2026-12-03T03:44:15+00:00")),
        implementations.Run("reports/sim-upstream/latest", None, *SIM_UPSTREAM),
        implementations.Run("reports/local-upstream/latest", upstream_local(report)),
    ]


def test_the_table_rows_keep_their_lines_for_the_links() -> None:
    rows = implementations.read_divergences(TABLE)
    assert [(r.test, r.klass, r.line) for r in rows] == [("ScaleDownHighestIndexFirst", "version", 3),
                                                         ("Other", "c", 13)]
    assert rows[0].evidence == "v0.9.0 adds groups backwards (pkg/x.go:1), which the contract forbids."
    assert rows[0].describe_range() == "v0.9.0 until v0.10.0 (abc1234, kubernetes-sigs/lws#1)"


def test_the_repository_table_is_read_with_every_row_at_its_implementation_line() -> None:
    text = (REPO / "conformance" / "divergences.yaml").read_text()
    rows = implementations.read_divergences(text)
    lines = text.splitlines()
    assert rows and all(lines[r.line - 1].startswith("- id:") for r in rows)


def test_a_malformed_row_is_named() -> None:
    with pytest.raises(ValueError, match=r"divergences\[0\]: missing or malformed field 'evidence'"):
        implementations.read_divergences(
            "divergences:\n- {id: a, implementation: u, since: v0.9.0, test: T, class: c}\n")


def test_each_column_names_implementation_cluster_kubernetes_and_date(runs: list[implementations.Run]) -> None:
    assert implementations.header(runs[1]) == (
        f"reference (bundled with lwsconf {runs[1].report.lwsconf_version if runs[1].report else ''})",
        "cluster: local (simulated: node image, kubelets)", "Kubernetes v1.37.2", "run 2026-12-03 03:44:15 UTC")
    assert implementations.header(runs[3])[0] == "kubernetes-sigs/lws v0.9.0"
    assert implementations.header(runs[2]) == (SIM_UPSTREAM[0], f"not run: {SIM_UPSTREAM[1]}")


def test_a_known_divergence_is_its_own_cell_and_links_to_its_evidence(runs: list[implementations.Run]) -> None:
    table = implementations.read_divergences(TABLE)
    page = implementations.render_markdown(runs, table, divergences_link="../conformance/divergences.yaml")
    row = next(line for line in page.splitlines() if line.startswith(f"| {Feature.SCALING.value} |"))
    assert row == (f"| {Feature.SCALING.value} | ✅ pass | ✅ pass | ⛔ not run | "
                   "🔶 known divergence [[1]](#divergence-1) |")
    entry = next(line for line in page.splitlines() if 'id="divergence-1"' in line)
    assert entry == ('- <a id="divergence-1"></a>**[1] ScaleDownHighestIndexFirst** (kubernetes-sigs/lws v0.9.0; seen '
                     "on kubernetes-sigs/lws v0.9.0 on local): 'backwards', class version, upstream v0.9.0 until "
                     "v0.10.0 (abc1234, kubernetes-sigs/lws#1) ([divergences.yaml line 3]"
                     "(../conformance/divergences.yaml#L3)): v0.9.0 adds groups backwards (pkg/x.go:1), which the "
                     "contract forbids.")
    assert "Other" not in page  # a row no run showed is not on the page


def test_a_run_not_made_is_a_column_saying_so_in_every_row(runs: list[implementations.Run]) -> None:
    page = implementations.render_markdown(runs)
    header = page.splitlines()[2]
    assert f"{SIM_UPSTREAM[0]}<br>not run: {SIM_UPSTREAM[1]}" in header
    feature_rows = [line for line in page.splitlines() if line.startswith("| LWS") and "(profile)" not in line]
    assert feature_rows and all(line.split(" | ")[3] == "⛔ not run" for line in feature_rows)
    assert (f"- {SIM_UPSTREAM[0]}: not run: {SIM_UPSTREAM[1]} (no report at `reports/sim-upstream/latest`)"
            in page)


def test_local_runs_say_why_their_unsupported_tests_did_not_run(report: schema.Report) -> None:
    local = on(passing(report), "local", "reference", "", "2026-12-03T03:44:15+00:00")
    local = replace(local, tests=(*local.tests, replace(
        local.tests[0], short_name="LeaderServiceRoutesToEveryLeader", features=(Feature.LEADER_SERVICE.value,),
        result=Outcome.NOT_SUPPORTED, message="kube-apiserver refuses loopback endpoint addresses")))
    page = implementations.render_markdown([implementations.Run("r", local)])
    assert ("  - not supported here: 1 test(s) (LeaderServiceRoutesToEveryLeader): kube-apiserver refuses loopback "
            "endpoint addresses") in page


def test_the_html_page_is_self_contained_and_links_cells_to_the_evidence(runs: list[implementations.Run]) -> None:
    page = implementations.render_html(runs, implementations.read_divergences(TABLE),
                                       divergences_link="../conformance/divergences.yaml")
    assert "<script" not in page and "default-src 'none'" in page
    assert f'<th class="notrun"><b>{SIM_UPSTREAM[0]}</b><span>not run: {SIM_UPSTREAM[1]}</span></th>' in page
    assert "◆ known divergence <a href=\"#divergence-1\">[1]</a></td>" in page
    assert re.search(r'<li id="divergence-1"><b>\[1\] ScaleDownHighestIndexFirst</b>.*'
                     r'<a href="../conformance/divergences.yaml">divergences.yaml line 3</a>', page)
    assert page.count('data-status="not run"') == page.count('<tr class="feature">') + page.count(
        '<tr class="profile">')


def test_the_command_takes_a_not_run_column_until_its_report_exists(
        report: schema.Report, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`make implementations` gives the sim-upstream column as --not-run: picked up once a report is there."""
    table = tmp_path / "conformance" / "divergences.yaml"
    table.parent.mkdir()
    table.write_text(TABLE)
    ref = yaml_writer.write(passing(report), tmp_path / "ref" / yaml_writer.FILENAME).parent
    missing = tmp_path / "sim-upstream" / "latest"
    docs = tmp_path / "docs"
    docs.mkdir()
    args = ["report", "compare", str(ref), str(missing), "--not-run", str(missing), *SIM_UPSTREAM,
            "--divergences", str(table), "--markdown", str(docs / "implementations.md"),
            "--html", str(docs / "implementations.html")]
    assert cli.main(args) == 0
    assert f"not run: {SIM_UPSTREAM[1]}" in (docs / "implementations.md").read_text()
    yaml_writer.write(upstream_local(report), missing / yaml_writer.FILENAME)
    assert cli.main(args) == 0
    page = (docs / "implementations.md").read_text()
    assert "⛔ not run |" not in page and f"not run: {SIM_UPSTREAM[1]}" not in page
    assert "](../conformance/divergences.yaml#L3)" in page  # linked from the page's own folder
    capsys.readouterr()
    assert cli.main(["report", "compare", str(ref), str(tmp_path / "nowhere")]) == 2
    assert "no report at" in capsys.readouterr().err
    assert cli.main(["report", "compare", str(ref), "--not-run", str(missing), "x", "y"]) == 2
    assert "also pass it as a RUN argument" in capsys.readouterr().err
