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
