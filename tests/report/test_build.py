"""Profile verdicts and the CI gate follow Gateway API's rules (failure > partial > success)."""

from __future__ import annotations

from dataclasses import replace

from lwsconf import profiles
from lwsconf.conformance import Outcome
from lwsconf.features import Feature
from lwsconf.report import build, schema
from tests.report import sample

CORE_ALL = frozenset(f.value for f in profiles.LWS_CORE.core)


def t(name: str, feature: Feature, result: Outcome) -> schema.TestReport:
    return schema.TestReport(name, f"c.py::{name}", "", (feature.value,), (profiles.profile_of(feature).name,),
                             build.is_core([feature.value]), result, 1.0)


def verdict(*tests: schema.TestReport, profile: profiles.Profile = profiles.LWS_CORE,
            supported: frozenset[str] = CORE_ALL) -> schema.ProfileReport:
    return build.profile_report(profile, tests, supported)


def test_any_failed_test_makes_its_profile_a_failure() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("B", Feature.LABELS, Outcome.FAILED),
                t("C", Feature.DELETION, Outcome.SKIPPED))
    assert (p.result, p.failed_tests, p.skipped_tests) == (schema.Result.FAILURE, ("B",), ("C",))
    assert p.statistics == schema.Statistics(passed=1, failed=1, skipped=1, not_supported=0)


def test_a_skipped_test_without_failures_makes_the_profile_partial() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("C", Feature.DELETION, Outcome.SKIPPED))
    assert p.result is schema.Result.PARTIAL and p.summary.startswith("Partial: no test failed")


def test_provisional_skipped_tests_count_nowhere() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("C", Feature.DELETION, Outcome.PROVISIONAL_SKIPPED))
    assert (p.result, p.statistics.skipped, p.skipped_tests) == (schema.Result.SUCCESS, 0, ())
    report = replace(sample.report(), tests=(t("C", Feature.DELETION, Outcome.PROVISIONAL_SKIPPED),))
    assert build.gate(report, on_skips=True) == []


def test_a_not_supported_core_test_makes_the_profile_partial() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("E", Feature.ENV_INJECTION, Outcome.NOT_SUPPORTED),
                supported=CORE_ALL - {Feature.ENV_INJECTION.value})
    assert p.result is schema.Result.PARTIAL
    assert p.unsupported_features == (Feature.ENV_INJECTION.value,)


def test_a_not_supported_extended_test_leaves_the_profile_a_success() -> None:
    p = verdict(t("S", Feature.ROLLING_UPDATE_MAX_SURGE, Outcome.SUCCEEDED),
                t("P", Feature.ROLLING_UPDATE_PARTITION, Outcome.NOT_SUPPORTED),
                profile=profiles.LWS_EXTENDED, supported=frozenset({Feature.ROLLING_UPDATE_MAX_SURGE.value}))
    assert (p.result, p.not_supported_tests) == (schema.Result.SUCCESS, ("P",))
    assert p.supported_features == (Feature.ROLLING_UPDATE_MAX_SURGE.value,)


def test_tests_of_other_profiles_do_not_count() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("X", Feature.LEADER_SERVICE, Outcome.FAILED))
    assert p.result is schema.Result.SUCCESS and p.statistics.passed == 1 and p.statistics.failed == 0


def test_only_tests_whose_features_are_all_core_are_core() -> None:
    assert build.is_core([Feature.SCALING.value])
    assert not build.is_core([Feature.SCALING.value, Feature.ROLLING_UPDATE_MAX_SURGE.value])
    assert not build.is_core([])


def test_gate_fails_on_a_claimed_profiles_failure_and_optionally_on_core_skips() -> None:
    report = sample.report()
    assert build.gate(report) == [f"{sample.ROLL} (LWS-CORE) failed: {sample.FAIL_MESSAGE}"]
    with_skips = build.gate(report, on_skips=True)
    assert len(with_skips) == 2 and "core test ScaleSubresource (LWS-CORE) was SKIPPED" in with_skips[1]


def test_gate_ignores_not_supported_extended_tests_and_unclaimed_profiles() -> None:
    report = sample.report()
    passing = tuple(replace(x, result=Outcome.SUCCEEDED, message="") if x.core else x for x in report.tests)
    only_core_claimed = replace(report, tests=passing, profiles=report.profiles[:1])
    failed_serving = tuple(replace(x, result=Outcome.FAILED) if x.profiles == ("LWS-SERVING",) else x for x in passing)
    assert build.gate(replace(report, tests=passing), on_skips=True) == []
    assert build.gate(replace(only_core_claimed, tests=failed_serving), on_skips=True) == []


def test_a_profile_none_of_whose_tests_executed_is_not_run() -> None:
    nothing = verdict()
    assert nothing.result is schema.Result.NOT_RUN and "no test of this profile was selected" in nothing.summary
    only_skipped = verdict(t("A", Feature.SCALING, Outcome.SKIPPED), t("B", Feature.LABELS, Outcome.NOT_SUPPORTED))
    assert only_skipped.result is schema.Result.NOT_RUN and "claim is unverified" in only_skipped.summary
    assert verdict(t("A", Feature.SCALING, Outcome.SKIPPED), t("B", Feature.LABELS, Outcome.SUCCEEDED)).result \
        is schema.Result.PARTIAL


def test_an_interrupted_run_is_interrupted_whatever_finished_and_a_run_error_is_a_failure() -> None:
    tests = (t("A", Feature.SCALING, Outcome.SUCCEEDED), t("B", Feature.LABELS, Outcome.FAILED),
             replace(t("C", Feature.DELETION, Outcome.INTERRUPTED), case_id="x"))
    stopped = build.profile_report(profiles.LWS_CORE, tests, CORE_ALL, build.RunStop(True, "KeyboardInterrupt"))
    assert stopped.result is schema.Result.INTERRUPTED and stopped.interrupted_tests == ("C[x]",)
    assert stopped.statistics.interrupted == 1 and stopped.summary.startswith(
        "Interrupted: the run stopped before it finished (KeyboardInterrupt); "
        "1 of 3 passed (1 failed, 1 did not finish)")
    broken = build.profile_report(profiles.LWS_CORE, tests[2:], CORE_ALL, build.RunStop(True, "boom", "boom"))
    assert broken.result is schema.Result.FAILURE
    assert broken.summary.startswith("Failed: the run failed as a whole: boom")


def test_the_gate_fails_a_run_error_an_interruption_and_a_not_run_profile() -> None:
    report = sample.report()
    ok = replace(report, tests=tuple(replace(x, result=Outcome.SUCCEEDED) for x in report.tests))
    assert build.gate(ok) == []
    assert build.gate(replace(ok, run_error="implementation x never became ready: y")) == [
        "the run failed as a whole: implementation x never became ready: y"]
    cut = replace(ok, interrupted=True, stop_reason="KeyboardInterrupt",
                  tests=(*ok.tests[:-1], replace(ok.tests[-1], result=Outcome.INTERRUPTED)))
    assert build.gate(cut) == ["the run was interrupted (KeyboardInterrupt); 1 selected test(s) did not finish"]
    not_run = replace(ok, profiles=(replace(ok.profiles[0], result=schema.Result.NOT_RUN, summary="Not run: x"),))
    assert build.gate(not_run) == ["profile LWS-CORE is not-run: Not run: x"]


def test_failed_and_skipped_lists_name_each_case() -> None:
    cases = [replace(t("Rejects", Feature.VALIDATION, result), case_id=case, node_id=f"c.py::test_r[{case}]")
             for case, result in (("V1", Outcome.FAILED), ("V2", Outcome.FAILED), ("V3", Outcome.SKIPPED))]
    p = verdict(*cases, t("A", Feature.SCALING, Outcome.SUCCEEDED))
    assert (p.failed_tests, p.skipped_tests) == (("Rejects[V1]", "Rejects[V2]"), ("Rejects[V3]",))
    assert build.gate(replace(sample.report(), tests=tuple(cases)))[0].startswith("Rejects[V1] (LWS-CORE) failed")


def test_a_known_divergence_is_counted_apart_and_passes_the_gate() -> None:
    p = verdict(t("A", Feature.SCALING, Outcome.SUCCEEDED), t("K", Feature.LABELS, Outcome.KNOWN_DIVERGENCE))
    assert (p.result, p.failed_tests) == (schema.Result.SUCCESS, ())
    assert p.statistics == schema.Statistics(passed=1, known_divergences=1)
    assert p.summary == "Succeeded: 1 of 2 passed (1 known divergence)."
    assert schema.Statistics.from_dict(p.statistics.to_dict()) == p.statistics
    report = replace(sample.report(), tests=(t("K", Feature.LABELS, Outcome.KNOWN_DIVERGENCE),))
    assert build.gate(report) == []


def test_a_profile_whose_only_test_is_a_known_divergence_ran() -> None:
    p = verdict(t("K", Feature.LABELS, Outcome.KNOWN_DIVERGENCE))
    assert (p.result, p.summary) == (schema.Result.SUCCESS, "Succeeded: 0 of 1 passed (1 known divergence).")
