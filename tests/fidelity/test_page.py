"""The page: totals line, differences listed with request and both answers, the kept part survives."""

from __future__ import annotations

import re
from pathlib import Path

from lwsconf.fidelity import compare, diff, normalise, page
from lwsconf.fidelity.model import Answer, Scenario, Step, StepRecord


def records(answers: list[Answer]) -> list[StepRecord]:
    steps = [Step(f"s{i}") for i in range(len(answers))]
    return [StepRecord(s, {"method": "GET", "path": "/x", "query": {}, "headers": {}, "body": None}, a, {})
            for s, a in zip(steps, answers, strict=True)]


def results(accepted: dict[str, str] | None = None) -> list[compare.Result]:
    scenario = Scenario("topic", "sc", (Step("s0"), Step("s1"), Step("s2")))
    sim = records([Answer(200, {"a": 1}), Answer(404, {"reason": "NotFound"}), Answer(200, {"b": 1})])
    real = records([Answer(200, {"a": 1}), Answer(404, {"reason": "NotFound"}), Answer(200, {"b": 2})])
    return compare.compare([scenario], {"sc": sim}, {"sc": real}, accepted or {})


def test_totals_count_only_identical_answers() -> None:
    t = compare.totals(results())
    assert (t.interactions, t.identical, t.accepted, t.different) == (3, 2, 0, 1)
    assert t.line() == "fidelity: 3 interactions, 2 identical (66.7%)"
    accepted = compare.totals(results({"topic/sc/s2": "because"}))
    assert (accepted.identical, accepted.accepted, accepted.different) == (2, 1, 0)


def test_page_lists_each_difference_and_keeps_what_follows_the_marker() -> None:
    existing = "old generated text\n" + page.MARKER + "\n\n## Findings from running on real Kubernetes\n- one\n"
    text = page.render(results({"topic/sc/s2": "because"}), kubernetes="1.37.2", seconds=3, when="today",
                       existing=existing)
    assert "old generated text" not in text
    assert text.endswith("## Findings from running on real Kubernetes\n- one\n")
    assert "### `topic/sc/s2`" in text and '`body.b: 1 != 2`' in text and "**Accepted:** because" in text
    assert "GET /x" in text and "| topic | 3 | 2 | 1 | 0 |" in text


def test_a_page_without_marker_keeps_only_the_findings_section() -> None:
    assert page.kept_part("# title\nstuff\n## Findings from running on real Kubernetes\nx\n") == \
        "## Findings from running on real Kubernetes\nx\n"
    assert page.kept_part("# title\nstuff\n") == ""
    assert page.kept_part(None) == ""


def test_a_binary_request_body_is_named_not_printed() -> None:
    result = results()[2]
    request = {**result.request, "body": b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap",
               "headers": {"Content-Type": "application/vnd.kubernetes.protobuf"}}
    binary = compare.Result(result.id, result.step, request, result.sim, result.real, result.lines)
    text = page.render([binary], kubernetes="1.37.2", seconds=1, when="today", existing=None)
    assert "\x00" not in text and "<21 bytes, binary: application/vnd.kubernetes.protobuf>" in text


def test_the_page_lists_every_rule_with_how_much_it_erased_on_each_side() -> None:
    """Issue 33 item 2: a normalisation that hides much must be seen to; each rule's count is per server."""
    scenario = Scenario("topic", "sc", (Step("s0"),))
    pod = {"kind": "Pod", "metadata": {"name": "p", "uid": "u-1", "resourceVersion": "7", "creationTimestamp": "t"},
           "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]}}
    sim = records([Answer(200, pod)])
    real = records([Answer(200, {**pod, "status": {}})])
    results = compare.compare([scenario], {"sc": sim}, {"sc": real}, {})
    assert compare.erasures(results) == {"server-metadata": (2, 2), "resource-version-order": (1, 1),
                                         "condition-times": (1, 0)}
    text = page.render(results, kubernetes="1.37.2", seconds=1, when="today", existing=None)
    assert "- **erased 2 / 2.** Rule `server-metadata`" in text
    assert "- **erased 1 / 0.** Rule `condition-times`" in text
    assert "- **erased 0 / 0.** Rule `managed-fields-uid-keys`" in text
    assert "(`vary`, erased 0 / 0)" in text
    documented = {normalise.rule_name(rule) for rule in page.RULES}
    counted = set(re.findall(r'erased\("([a-z-]+)"', Path(normalise.__file__).read_text()))
    assert counted - {"vary"} <= documented, "a rule counts under a name the page does not list"


def test_json_types_are_compared_strictly_at_any_depth() -> None:
    """`true` vs `1` and `1` vs `1.0` are different JSON (Python's == says equal): issue 33 item 2."""
    assert diff.differences({"a": True}, {"a": 1}) == ["a: true != 1"]
    assert diff.differences({"a": [1, 2]}, {"a": [1.0, 2]}) == ["a.0: 1 != 1.0"]
    assert diff.differences({"a": [1, {"b": False}]}, {"a": [1, {"b": 0}, 3]}) == \
        ['a: [1, {"b": false}] != [1, {"b": 0}, 3]']
    assert diff.differences({"a": [1, {"b": False}]}, {"a": [1, {"b": False}]}) == []


def test_lists_of_named_objects_of_different_lengths_say_which_names_and_compare_the_rest() -> None:
    def item(name: str, phase: str = "Pending") -> dict[str, object]:
        return {"metadata": {"name": name}, "status": {"phase": phase}}
    lines = diff.differences({"items": [item("a"), item("b", "Running")]}, {"items": [item("b")]})
    assert lines == ["items: names ['a'] != [] (on one side only)",
                     'items[b].status.phase: "Running" != "Pending"']
    assert diff.differences({"items": [item("a")]}, {"items": []}) == ["items: names ['a'] != [] (on one side only)"]
    assert diff.differences([1, 2], [1]) == ["(answer): [1, 2] != [1]"]  # unnamed lists: as before
