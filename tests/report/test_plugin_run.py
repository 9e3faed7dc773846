"""A real pytest run of a tiny conformance suite with the plugin loaded leaves the right report files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from lwsconf.report import schema

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(Path(schema.__file__).with_name("report.schema.json").read_text())
IDENTITY = ["--impl-organization=acme", "--impl-project=lws-operator", "--impl-url=https://example.com/acme/lws",
            "--impl-version=v1.2.0", "--impl-contact=@acme/lws,ops@example.com"]
SUITE = """
import pytest
from lwsconf.conformance import conformance
from lwsconf.features import Feature
from lwsconf.timeline import model

def group(t, seq, g, ready):
    return model.GroupSample(t, seq, g, ("aaa",), ready, (model.PodState(f"demo-{g}", "aaa", ready, "u", True),))

@conformance(short_name="ScaleUp", description="Scaling up adds groups.", features={Feature.SCALING})
def test_scale_up(artifacts_dir):
    samples = [group(0, 1, 0, True), group(1, 2, 1, False), group(2, 3, 1, True)]
    model.save(model.Timeline("ns", "demo", "ScaleUp", samples, steps=[model.Step(0.5, "scaled to 2")], end=3.0),
               artifacts_dir / model.FILENAME)

@conformance(short_name="RollingOrder", description="Highest group first.", features={Feature.ROLLING_UPDATE})
def test_rolling_order(artifacts_dir):
    (artifacts_dir / "pods.yaml").write_text("items: []\\n")
    assert False, "group 2 was updated before group 3\\nmore lines"

@conformance(short_name="EnvSeen", description="Env vars.", features={Feature.ENV_INJECTION})
def test_env_seen():
    pass

@conformance(short_name="Surge", description="Surge.", features={Feature.ROLLING_UPDATE_MAX_SURGE})
def test_surge():
    raise AssertionError("must not run")
"""
CLUSTER_TEST = """
@conformance(short_name="ClusterFacts", description="Sees the cluster.", features={Feature.OBJECT_MODEL})
def test_cluster_facts(api_client):
    assert api_client is not None
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's subprocess imports the `fixtures` plugin package from the repository root."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest('pytest_plugins = ["fixtures.plugin", "fixtures.reporting"]')
    pytester.mkdir("conformance")
    (pytester.path / "conformance" / "test_tiny.py").write_text(SUITE)
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("conformance", "-p", "no:cacheprovider", "--profiles=LWS-CORE,LWS-EXTENDED",
                                      *args)


def latest(suite: pytest.Pytester) -> Path:
    return (suite.path / "reports" / "latest").resolve()


def test_a_run_writes_every_report_file_with_the_right_results(suite: pytest.Pytester) -> None:
    with (suite.path / "conformance" / "test_tiny.py").open("a") as f:
        f.write(CLUSTER_TEST)
    result = run(suite, "--skip-tests=EnvSeen", "--report-output=out/lws-report.yaml", *IDENTITY)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*lwsconf conformance report*", "LWS-CORE: failure (2 passed, 1 failed, 1 skipped*",
                                 "reports: *report.html*", "report output: out/lws-report.yaml"])
    run_dir = latest(suite)
    data = yaml.safe_load((run_dir / "conformance-report.yaml").read_text())
    jsonschema.validate(data, SCHEMA)
    assert yaml.safe_load((suite.path / "out" / "lws-report.yaml").read_text()) == data
    assert {t["shortName"]: t["result"] for t in data["tests"]} == {
        "ScaleUp": "SUCCEEDED", "RollingOrder": "FAILED", "EnvSeen": "SKIPPED", "Surge": "NOT_SUPPORTED",
        "ClusterFacts": "SUCCEEDED"}
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["RollingOrder"]["message"] == "AssertionError: group 2 was updated before group 3"
    assert tests["RollingOrder"]["artifacts"] == ["artifacts/RollingOrder/pods.yaml"]
    assert tests["ScaleUp"]["artifacts"] == ["artifacts/ScaleUp/timeline.json"]
    assert tests["EnvSeen"]["message"] == "EnvSeen is listed in --skip-tests"
    assert data["implementation"]["contact"] == ["@acme/lws", "ops@example.com"]
    assert data["environment"]["nodeImage"] == "sim" and data["environment"]["kubernetesVersion"].startswith("v")
    # LWS-EXTENDED is claimed, but its one test is NOT_SUPPORTED: nothing of it executed, so it is not-run
    assert [(p["name"], p["result"]) for p in data["profiles"]] == [("LWS-CORE", "failure"),
                                                                    ("LWS-EXTENDED", "not-run")]

    summary = (run_dir / "summary.md").read_text()
    assert "| `RollingOrder` | LWS-CORE | AssertionError: group 2 was updated before group 3 |" in summary
    page = (run_dir / "report.html").read_text()
    assert 'data-test="ScaleUp"' in page and 'class="seg" data-group="1"' in page
    assert 'href="artifacts/RollingOrder/pods.yaml"' in page
    props = {(c.get("name"), p.get("name"), p.get("value"))
             for c in ET.parse(run_dir / "junit.xml").iter("testcase") for p in c.iter("property")}
    assert ("test_surge", "lwsconf.result", "NOT_SUPPORTED") in props
    assert ("test_rolling_order", "lwsconf.feature", "LWSRollingUpdate") in props


BAD_TIMELINE_TEST = """
@conformance(short_name="OldTimeline", description="Leaves an unreadable timeline.", features={Feature.SCALING})
def test_old_timeline(artifacts_dir):
    (artifacts_dir / "timeline.json").write_text('{"samples": [{"t": 0, "group": 0, "seq": 1}]}')

@conformance(short_name="NoArtifacts", description="Writes nothing.", features={Feature.SCALING})
def test_no_artifacts(artifacts_dir):
    assert artifacts_dir.is_dir()
"""


def test_an_unreadable_timeline_is_a_problem_in_every_report_and_an_unused_artifacts_dir_is_removed(
        suite: pytest.Pytester) -> None:
    with (suite.path / "conformance" / "test_tiny.py").open("a") as f:
        f.write(BAD_TIMELINE_TEST)
    result = run(suite, "--skip-tests=RollingOrder")
    result.stdout.fnmatch_lines(["report problem: OldTimeline: timeline not shown: */timeline.json: timeline "
                                 "version None: this lwsconf reads versions 2, 3*"])
    run_dir = latest(suite)
    data = yaml.safe_load((run_dir / "conformance-report.yaml").read_text())
    jsonschema.validate(data, SCHEMA)
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["OldTimeline"]["result"] == "SUCCEEDED" and len(tests["OldTimeline"]["problems"]) == 1
    assert "problems" not in tests["ScaleUp"], "a readable timeline is no problem"
    page = (run_dir / "report.html").read_text()
    row = next(r for r in page.split("<tr ") if 'data-name="OldTimeline ' in r)
    assert '<div class="problem">report problem: timeline not shown: ' in row, row
    assert 'data-test="ScaleUp"' in page and 'data-test="OldTimeline"' not in page
    assert "**Report problems**" in (run_dir / "summary.md").read_text()
    made = sorted(p.name for p in (run_dir / "artifacts").iterdir())
    assert made == ["OldTimeline", "ScaleUp"], f"artifact folders {made}: NoArtifacts left its empty one behind"


def test_report_output_without_identity_is_a_usage_error_naming_what_is_missing(suite: pytest.Pytester) -> None:
    result = run(suite, "--report-output=r.yaml", "--impl-organization=acme", "--impl-version=v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--report-output needs the implementation's identity; missing: --impl-project, "
                                 "--impl-url, --impl-contact.*"])


def test_a_non_url_impl_url_is_rejected(suite: pytest.Pytester) -> None:
    result = run(suite, "--report-output=r.yaml", *IDENTITY[:2], "--impl-url=acme.com", *IDENTITY[3:])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--impl-url must be an http(s) URL*'acme.com'*"])


def test_gate_on_skips_fails_a_run_whose_core_test_was_skipped(suite: pytest.Pytester) -> None:
    args = ("--skip-tests=EnvSeen,RollingOrder", "--profiles=LWS-CORE")  # LWS-EXTENDED would be not-run
    assert run(suite, *args).ret == pytest.ExitCode.OK
    gated = run(suite, *args, "--gate-on-skips")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    gated.stdout.fnmatch_lines(["gate: core test EnvSeen (LWS-CORE) was SKIPPED*"])


def test_results_and_artifacts_from_xdist_workers_reach_the_report(suite: pytest.Pytester) -> None:
    result = run(suite, "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    data = yaml.safe_load((latest(suite) / "conformance-report.yaml").read_text())
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["Surge"]["result"] == "NOT_SUPPORTED" and tests["ScaleUp"]["description"] == "Scaling up adds groups."
    assert tests["ScaleUp"]["artifacts"] == ["artifacts/ScaleUp/timeline.json"]
    assert tests["RollingOrder"]["artifacts"] == ["artifacts/RollingOrder/pods.yaml"]


def test_report_output_is_written_even_outside_a_conformance_directory(suite: pytest.Pytester) -> None:
    (suite.path / "conformance" / "test_tiny.py").rename(suite.path / "test_tiny.py")
    result = suite.runpytest_subprocess("test_tiny.py", "-p", "no:cacheprovider", "--report-output=r.yaml", *IDENTITY)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = yaml.safe_load((suite.path / "r.yaml").read_text())
    assert len(data["tests"]) == 4 and not (suite.path / "reports").exists()


def test_the_collector_survives_a_conftest_in_another_directory_under_xdist(suite: pytest.Pytester) -> None:
    """A conftest outside a test's directory makes pluggy put plugins in sets: an unhashable one crashed workers."""
    other = suite.mkdir("conformance/other")
    (other / "conftest.py").write_text("import pytest\n")  # not a conftest of test_tiny.py: hooks get narrowed
    (other / "test_other.py").write_text("def test_other():\n    pass\n")
    result = run(suite, "-n", "2", "--skip-tests=RollingOrder", "--profiles=LWS-CORE")  # LWS-EXTENDED: not-run
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    data = yaml.safe_load((latest(suite) / "conformance-report.yaml").read_text())
    assert len(data["tests"]) == 5


WITHDRAWING_CONFTEST = '''
import pytest
from fixtures.implementations import Implementation
from lwsconf.features import Feature

pytest_plugins = ["fixtures.plugin", "fixtures.reporting"]

@pytest.fixture(scope="session")
def implementation():
    return Implementation("stub", "finds, once installed, that it cannot do surge here",
                          {Feature.ROLLING_UPDATE_MAX_SURGE: "the cluster is too old"})
'''
WITHDRAWN_TEST = """
@conformance(short_name="SurgeHere", description="Surge.", features={Feature.ROLLING_UPDATE_MAX_SURGE})
def test_surge_here(implementation):
    raise AssertionError("must not run: the implementation withdrew this feature")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_feature_withdrawn_at_install_is_not_supported_and_not_listed_as_supported(
        suite: pytest.Pytester, workers: list[str]) -> None:
    suite.makeconftest(WITHDRAWING_CONFTEST)
    with (suite.path / "conformance" / "test_tiny.py").open("a") as f:
        f.write(WITHDRAWN_TEST)
    result = run(suite, "--all-features", "--skip-tests=RollingOrder", *workers)
    result.stdout.fnmatch_lines(["LWSRollingUpdateMaxSurge: claimed, but the implementation cannot support it on "
                                 "this cluster*"])
    data = yaml.safe_load((latest(suite) / "conformance-report.yaml").read_text())
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["SurgeHere"]["result"] == "NOT_SUPPORTED", tests["SurgeHere"]
    assert "cannot claim LWSRollingUpdateMaxSurge: the cluster is too old" in tests["SurgeHere"]["message"]
    extended = next(p for p in data["profiles"] if p["name"] == "LWS-EXTENDED")
    assert "LWSRollingUpdateMaxSurge" not in extended["supportedFeatures"], extended
    assert "LWSRollingUpdateMaxSurge" in extended["unsupportedFeatures"], extended


FIGURES_TEST = """
@conformance(short_name="Measures", description="Records what it measured.", features={Feature.SCALING})
def test_measures(record_property):
    record_property("ready_seconds", 143.6)
    record_property("requests_per_second", 1.86)
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_what_a_test_records_with_record_property_is_in_every_report(suite: pytest.Pytester,
                                                                     workers: list[str]) -> None:
    """The VLLM-CPU profile's figures (time to ready, tokens and requests per second) reach the reports: yaml,
    summary.md, report.html and the terminal, also from an xdist worker; a test that records nothing has none."""
    with (suite.path / "conformance" / "test_tiny.py").open("a") as f:
        f.write(FIGURES_TEST)
    result = run(suite, "--skip-tests=RollingOrder", *workers)
    result.stdout.fnmatch_lines(["Figures (what the tests measured):", "  Measures: ready_seconds = 143.6",
                                 "  Measures: requests_per_second = 1.86"])
    run_dir = latest(suite)
    data = yaml.safe_load((run_dir / "conformance-report.yaml").read_text())
    jsonschema.validate(data, SCHEMA)
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["Measures"]["figures"] == {"ready_seconds": "143.6", "requests_per_second": "1.86"}
    assert "figures" not in tests["ScaleUp"]
    read = {t.short_name: t for t in schema.Report.from_dict(data).tests}
    assert read["Measures"].figures == (("ready_seconds", "143.6"), ("requests_per_second", "1.86"))
    summary = (run_dir / "summary.md").read_text()
    assert "| `Measures` | requests_per_second | 1.86 |" in summary, summary
    row = next(r for r in (run_dir / "report.html").read_text().split("<tr ") if 'data-name="Measures ' in r)
    assert '<div class="figure">ready_seconds: <b>143.6</b></div>' in row, row


NO_DISAGGREGATED_CONFTEST = '''
import pytest
from fixtures.implementations import Implementation
from lwsconf import disaggserved

pytest_plugins = ["fixtures.plugin", "fixtures.reporting"]

@pytest.fixture(scope="session")
def implementation():
    return Implementation("stub", "an LWS install that serves no DisaggregatedSet",
                          dict.fromkeys(disaggserved.ALL, "the cluster serves no DisaggregatedSet kind"))
'''
DISAGGREGATED_TEST = """
@conformance(short_name="SetHere", description="A set.", features={Feature.DISAGGREGATED_OBJECT_MODEL})
def test_set_here(implementation):
    raise AssertionError("must not run: the implementation withdrew this feature")
"""


@pytest.mark.parametrize("named", [False, True], ids=["default-profiles", "named-profiles"])
def test_a_default_profile_the_implementation_lacks_entirely_is_not_claimed(suite: pytest.Pytester,
                                                                             named: bool) -> None:
    """LWS-DISAGGREGATED is a default profile; against an LWS install without DisaggregatedSet every one of its
    features is withdrawn, so the profile could only be not-run, which fails the gate. Left to the default it is
    not claimed (its test still reported NOT_SUPPORTED); named with --profiles, it stays claimed and not-run."""
    suite.makeconftest(NO_DISAGGREGATED_CONFTEST)
    with (suite.path / "conformance" / "test_tiny.py").open("a") as f:
        f.write(DISAGGREGATED_TEST)
    profiles = ["--profiles=LWS-CORE,LWS-DISAGGREGATED"] if named else []
    suite.runpytest_subprocess("conformance", "-p", "no:cacheprovider", "--skip-tests=RollingOrder", *profiles)
    data = yaml.safe_load((latest(suite) / "conformance-report.yaml").read_text())
    tests = {t["shortName"]: t for t in data["tests"]}
    assert tests["SetHere"]["result"] == "NOT_SUPPORTED", tests["SetHere"]
    claimed = {p["name"]: p["result"] for p in data["profiles"]}
    if named:
        assert claimed.get("LWS-DISAGGREGATED") == "not-run", claimed
    else:
        assert "LWS-DISAGGREGATED" not in claimed and "LWS-CORE" in claimed, claimed
