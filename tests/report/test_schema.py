"""The report document: YAML output matches its golden file, its JSON Schema, and reads back unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from lwsconf.conformance import Outcome
from lwsconf.report import schema, summary_md, yaml_writer

SCHEMA_FILE = Path(schema.__file__).with_name("report.schema.json")


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    doc = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc, format_checker=jsonschema.FormatChecker())


def errors(validator: jsonschema.Draft202012Validator, data: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


def test_yaml_of_the_sample_run_matches_golden(report: schema.Report, golden: Callable[[str, str], None]) -> None:
    golden("conformance-report.yaml", yaml_writer.dump(report))


def test_written_yaml_validates_against_the_shipped_json_schema(
        report: schema.Report, validator: jsonschema.Draft202012Validator) -> None:
    data = yaml.safe_load(yaml_writer.dump(report))
    assert errors(validator, data) == []
    assert {t["result"] for t in data["tests"]} == {"SUCCEEDED", "FAILED", "SKIPPED", "NOT_SUPPORTED"}


def test_yaml_reads_back_to_an_equal_report(report: schema.Report, tmp_path: Path) -> None:
    path = yaml_writer.write(report, tmp_path / "r.yaml")
    assert yaml_writer.read(path) == report


def test_schema_rejects_an_unknown_result_and_a_multi_line_message(
        report: schema.Report, validator: jsonschema.Draft202012Validator) -> None:
    data = report.to_dict()
    data["tests"][0]["result"] = "PASSED"
    data["tests"][1]["message"] = "two\nlines"
    data["profiles"][0]["result"] = "ok"
    found = "\n".join(errors(validator, data))
    assert "tests/0/result: 'PASSED' is not one of" in found
    assert "tests/1/message" in found
    assert "profiles/0/result" in found


def full_report(report: schema.Report) -> schema.Report:
    """The sample with every optional field set: an interrupted sim run with a parametrised case."""
    first = replace(report.tests[0], case_id="V15-subgroup-larger-than-size")
    profile = replace(report.profiles[0], result=schema.Result.INTERRUPTED, interrupted_tests=(first.name,),
                      statistics=replace(report.profiles[0].statistics, interrupted=1))
    source = (("module", "sigs.k8s.io/lws"), ("version", "v0.9.0"), ("checksum", "h1:abc="),
              ("how", "run out of cluster by lwsconf"))
    return replace(report, tests=(first, *report.tests[1:]), profiles=(profile, *report.profiles[1:]),
                   implementation=replace(report.implementation, source=source),
                   environment=replace(report.environment, simulated=("node image", "GPUs")),
                   interrupted=True, stop_reason="KeyboardInterrupt (Ctrl-C, SIGINT or SIGTERM)",
                   run_error="implementation reference never became ready: WaitTimeout: CRD not Established",
                   suite_commit="4876f7b0a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6-dirty")


def test_every_optional_field_round_trips_through_yaml(report: schema.Report) -> None:
    full = full_report(report)
    assert yaml_writer.load(yaml_writer.dump(full)) == full
    assert full.tests[0].name == f"{report.tests[0].short_name}[V15-subgroup-larger-than-size]"
    assert full.test(full.tests[0].name) is full.tests[0]


def test_older_reports_without_the_optional_fields_still_read(report: schema.Report) -> None:
    data = report.to_dict()
    for key in ("runError", "interrupted", "stopReason", "suiteCommit"):
        assert key not in data
    assert "caseId" not in data["tests"][0] and "simulated" not in data["environment"]
    back = schema.Report.from_dict(data)
    assert (back.interrupted, back.stop_reason, back.run_error, back.tests[0].case_id) == (False, "", "", "")
    assert (back.suite_commit, back.suite_label) == ("", back.lwsconf_version)


def test_the_suite_commit_is_shown_short_beside_the_version(report: schema.Report) -> None:
    full = full_report(report)
    assert full.suite_label == f"{report.lwsconf_version} (suite 4876f7b0a1c2)"
    assert f"lwsconf {full.suite_label}" in summary_md.render(full)


def test_json_schema_and_dataclasses_name_the_same_fields(
        report: schema.Report, validator: jsonschema.Draft202012Validator) -> None:
    doc = validator.schema
    data = full_report(report).to_dict()  # optional fields are written only when set
    assert not errors(validator, data)
    assert set(doc["properties"]) == set(data)
    every_field = replace(report.tests[0], problems=("timeline not shown: ...",),
                          figures=(("ready_seconds", "1"),)).to_dict()
    assert set(doc["$defs"]["test"]["properties"]) == set(every_field) | {"caseId"}
    assert set(doc["$defs"]["test"]["properties"]) >= set(data["tests"][0])
    assert set(doc["$defs"]["profile"]["properties"]) == set(data["profiles"][0])
    assert set(doc["properties"]["environment"]["properties"]) == set(data["environment"])
    assert set(doc["properties"]["implementation"]["properties"]) == set(data["implementation"])
    assert doc["$defs"]["test"]["properties"]["result"]["enum"] == [o.value for o in Outcome]


def test_reading_a_bad_report_names_the_file_and_field(report: schema.Report, tmp_path: Path) -> None:
    data = report.to_dict()
    data["tests"][3]["duration"] = "fast"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=r"bad.yaml: tests\[3\].duration: expected float, got str 'fast'"):
        yaml_writer.read(path)


def test_reading_another_kind_of_document_says_what_is_expected() -> None:
    with pytest.raises(ValueError, match="not an lwsconf report: apiVersion 'gateway.networking.k8s.io/v1'"):
        yaml_writer.load("apiVersion: gateway.networking.k8s.io/v1\nkind: ConformanceReport\n")


def test_gpu_product_and_extra_contacts_survive_a_round_trip(report: schema.Report) -> None:
    changed = replace(report, environment=replace(report.environment, gpu_product="A100-SXM4-40GB"),
                      implementation=replace(report.implementation, contact=("a@x.org", "@b")))
    assert yaml_writer.load(yaml_writer.dump(changed)) == changed
