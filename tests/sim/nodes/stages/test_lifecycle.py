"""The stage interpreter: golden input/output pairs per stage, plus the selector, delay and override rules.

Each `golden/<set>/<case>.input.yaml` holds the object a stage looks at (a pod view or a container
view, as the agent builds them), the stage sets to load and a seed; `<case>.output.yaml` holds the
stage that matched, its delay and its resolved steps. Regenerate the outputs after changing stages
with `LWSCONF_UPDATE_GOLDEN=1 pytest tests/sim/nodes/stages/test_lifecycle.py` (or `--update-golden` when
running this folder) and review the diff.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from lwsconf.sim.nodes.stages import lifecycle, paths, settings

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*/*.input.yaml"))


def _interpret(case: dict[str, Any]) -> dict[str, Any]:
    stages = lifecycle.load_sets(case["sets"])
    rng = random.Random(case.get("seed", 0))
    stage = stages.match(case["kind"], case["object"], rng)
    if stage is None:
        return {"stage": None}
    return {"stage": stage.name, "delaySeconds": round(stage.delay_seconds(case["object"], rng), 6),
            "actions": [a.as_dict() for a in stage.actions(case["object"])]}


def _update_requested(request: pytest.FixtureRequest) -> bool:
    try:
        flag = bool(request.config.getoption("--update-golden"))
    except ValueError:
        flag = False
    return flag or os.environ.get("LWSCONF_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("input_path", CASES, ids=[f"{p.parent.name}/{p.name[:-len('.input.yaml')]}" for p in CASES])
def test_stage_golden_output(input_path: Path, request: pytest.FixtureRequest) -> None:
    output_path = input_path.with_name(input_path.name.replace(".input.yaml", ".output.yaml"))
    got = _interpret(yaml.safe_load(input_path.read_text()))
    if _update_requested(request):
        output_path.write_text(yaml.safe_dump(got, sort_keys=False, width=110))
    assert output_path.exists(), f"{output_path} is missing: run with LWSCONF_UPDATE_GOLDEN=1 and review it"
    assert got == yaml.safe_load(output_path.read_text()), f"{input_path.name}: stage result changed"


def test_every_stage_has_a_golden_case() -> None:
    covered = set()
    for path in CASES:
        result = path.with_name(path.name.replace(".input.yaml", ".output.yaml"))
        if result.exists():
            covered.add((yaml.safe_load(result.read_text()) or {}).get("stage"))
    names = set(lifecycle.load_sets(lifecycle.available_sets()).names())
    assert names - covered == set(), f"stages without a golden case: {sorted(names - covered)}"


def test_every_stage_set_has_a_readme_mentioning_each_stage() -> None:
    for name in lifecycle.available_sets():
        readme = lifecycle.STAGES_DIR / name / "README.md"
        assert readme.exists(), f"{readme} is missing"
        text = readme.read_text()
        missing = [s for s in lifecycle.load_sets([name]).names() if f"`{s}`" not in text]
        assert missing == [], f"{readme} does not describe {missing}"


def test_paths_read_fields_keys_indexes_filters_and_alternatives() -> None:
    obj = {"metadata": {"annotations": {"a.b/c": "x"}}, "items": [{"type": "Ready", "status": "True"}],
           "flag": False}
    assert paths.evaluate('.metadata.annotations["a.b/c"]', obj) == "x"
    assert paths.evaluate(".items[0].status", obj) == "True"
    assert paths.evaluate(".items[type=Ready].status", obj) == "True"
    assert paths.evaluate(".items[type=Other].status", obj) is None
    assert paths.evaluate('.metadata.labels["a"] // .metadata.annotations["a.b/c"]', obj) == "x"
    assert paths.render(paths.evaluate(".flag", obj)) == "false"
    with pytest.raises(paths.PathError, match="cannot parse"):
        paths.compile_path(".items[?]")


@pytest.mark.parametrize(("operator", "values", "expected"), [
    ("In", ["3", "4"], True), ("NotIn", ["3"], False), ("Exists", [], True), ("DoesNotExist", [], False),
    ("Gt", ["2"], True), ("Lt", ["3"], False), ("Lt", ["x"], False)])
def test_selector_operators(operator: str, values: list[str], expected: bool) -> None:
    expr = lifecycle.Expression(".n", operator, tuple(values))
    assert expr.holds({"n": 3}) is expected


def test_not_in_matches_a_missing_field_and_value_from_defaults_apply() -> None:
    assert lifecycle.Expression(".missing", "NotIn", ("x",)).holds({}) is True
    expr = lifecycle.Expression(".n", "Lt", (), value_from=".limit", default="1")
    assert expr.holds({"n": 0}) and not expr.holds({"n": 1}) and expr.holds({"n": 1, "limit": "5"})


def test_weighted_choice_is_deterministic_for_a_seed() -> None:
    def stage(name: str, weight: int) -> lifecycle.Stage:
        return lifecycle.Stage(name, "Pod", (), weight)
    stages = lifecycle.Lifecycle([stage("a", 1), stage("b", 3), stage("zero", 0)])
    picks = [stages.match("Pod", {}, random.Random(9)).name for _ in range(5)]  # type: ignore[union-attr]
    assert picks == [stages.match("Pod", {}, random.Random(9)).name] * 5  # type: ignore[union-attr]
    counts = {"a": 0, "b": 0}
    rng = random.Random(1)
    for _ in range(400):
        counts[stages.match("Pod", {}, rng).name] += 1  # type: ignore[union-attr]
    assert 200 < counts["b"] < 400 and counts["a"] > 40
    assert lifecycle.Lifecycle([stage("first", 0), stage("second", 0)]).match("Pod", {}, rng).name == "first"  # type: ignore[union-attr]


def test_annotations_override_delay_jitter_and_weight() -> None:
    stage = lifecycle.Stage("s", "Pod", (), 5, lifecycle.Delay(1000, 0))
    obj = {"metadata": {"annotations": {"s.stage.lwsconf.dev/delay": "250ms", "s.stage.lwsconf.dev/weight": "0"}}}
    assert stage.delay_seconds(obj, random.Random(0)) == 0.25
    assert stage.effective_weight(obj) == 0
    jittered = {"metadata": {"annotations": {"s.stage.lwsconf.dev/jitter": "1s"}}}
    assert 1.0 <= stage.delay_seconds(jittered, random.Random(0)) <= 2.0


@pytest.mark.parametrize(("doc", "message"), [
    ({"kind": "Stage", "spec": {}}, "metadata.name is required"),
    ({"kind": "Stage", "metadata": {"name": "x"}, "spec": {"resourceRef": {"kind": "Node"}}}, "resourceRef.kind"),
    ({"kind": "Stage", "metadata": {"name": "x"}, "spec": {"resourceRef": {"kind": "Pod"},
                                                          "steps": [{"start": {}}]}}, "Pod stages cannot 'start'"),
    ({"kind": "Stage", "metadata": {"name": "x"}, "spec": {"resourceRef": {"kind": "Pod"}, "selector": {
        "matchExpressions": [{"key": ".a", "operator": "Like", "values": ["b"]}]}}}, "operator: must be one of"),
    ({"kind": "Stage", "metadata": {"name": "x"}, "spec": {"resourceRef": {"kind": "Pod"}, "selector": {
        "matchExpressions": [{"key": ".a", "operator": "In"}]}}}, "needs values or valueFrom"),
])
def test_invalid_stage_documents_are_rejected_naming_the_field(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(lifecycle.StageError, match=message):
        lifecycle.parse_stage(doc, where="test.yaml")


def test_unknown_stage_set_and_settings_field_are_rejected() -> None:
    with pytest.raises(lifecycle.StageError, match="unknown stage set 'nope'; available"):
        lifecycle.load_sets(["nope"])
    with pytest.raises(lifecycle.StageError, match="unknown KubeletSettings field 'speed'"):
        settings.apply(settings.KubeletSettings(), {"speed": 1}, where="x.yaml")


def test_fast_and_general_settings_and_restart_backoff() -> None:
    fast, general = settings.load_settings(["fast", "chaos"]), settings.load_settings(["general"])
    assert fast.restart_backoff_initial == 0.05 and general.restart_backoff_initial == 1.0
    assert [fast.restart_delay(n) for n in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]


def test_fast_stages_delay_nothing_and_general_ones_do() -> None:
    """What `test_agent`'s Ready-at-once pod relies on, checked on the stage data instead of a stopwatch (design
    rule 7): every fast stage applies at once, while the general set's pod-create and container-start wait."""
    rng = random.Random(0)
    fast = lifecycle.load_sets(["fast"])
    assert {s.name: s.delay_seconds({}, rng) for s in fast.stages} == dict.fromkeys(fast.names(), 0.0)
    general = {s.name: s for s in lifecycle.load_sets(["general"]).stages}
    assert general["pod-create"].delay_seconds({}, rng) >= 0.3
    assert general["container-start"].delay_seconds({}, rng) >= 1.0
