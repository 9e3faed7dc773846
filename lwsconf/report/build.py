"""From per-test results to profile verdicts and the CI gate: the only place report results are decided.

Gateway API's rules (its ConformanceReport, kubernetes-sigs/gateway-api conformance/apis/v1), per
claimed profile: **failure** if any of its tests failed;
**partial** if none failed but one was SKIPPED (the claim is unverified) or a *core* test was
NOT_SUPPORTED (a core feature was exempted); otherwise **success**. A NOT_SUPPORTED extended test
leaves the profile a success: the feature is listed as unsupported. PROVISIONAL_SKIPPED tests count
nowhere, as Gateway API's suite does: provisional tests are not yet part of conformance. A test
counts in the profiles it belongs to (`profiles.profiles_of`: those owning one of its features that carry
all of them, with what they imply).

Before those rules, what a report must never hide: a run that failed as a whole (the implementation
never became ready) makes every profile a **failure** with that reason; a run that stopped early
(Ctrl-C, SIGTERM, --fail-fast) makes every profile **interrupted**; a profile none of whose tests
executed (passed or failed), e.g. `-k` selected nothing, is **not-run**. None of the three passes the
gate. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lwsconf import profiles as profiles_mod
from lwsconf.conformance import Outcome
from lwsconf.report import schema

__all__ = ["COMPLETED", "RunStop", "gate", "is_core", "profile_report"]

_CORE = frozenset(f.value for p in profiles_mod.ALL.values() for f in p.core)


def is_core(features: Iterable[str]) -> bool:
    """A test is core when every feature it exercises is some profile's core feature."""
    feats = set(features)
    return bool(feats) and feats <= _CORE


@dataclass(frozen=True)
class RunStop:
    """How a run ended early, if it did: the report's `interrupted`/`stopReason` and `runError`."""

    interrupted: bool = False
    reason: str = ""
    run_error: str = ""


COMPLETED = RunStop()
"""A run that ran every selected test."""


def _statistics(tests: Sequence[schema.TestReport]) -> schema.Statistics:
    results = [t.result for t in tests]
    return schema.Statistics(passed=results.count(Outcome.SUCCEEDED), failed=results.count(Outcome.FAILED),
                             skipped=results.count(Outcome.SKIPPED),
                             not_supported=results.count(Outcome.NOT_SUPPORTED),
                             interrupted=results.count(Outcome.INTERRUPTED),
                             known_divergences=results.count(Outcome.KNOWN_DIVERGENCE))


def _names(tests: Sequence[schema.TestReport], *outcomes: Outcome) -> tuple[str, ...]:
    return tuple(sorted({t.name for t in tests if t.result in outcomes}))


def _result(stats: schema.Statistics, unrun_core: int, stop: RunStop) -> schema.Result:
    if stop.run_error:
        return schema.Result.FAILURE
    if stop.interrupted:
        return schema.Result.INTERRUPTED
    if stats.failed:
        return schema.Result.FAILURE
    if stats.passed == 0 and not stats.known_divergences:  # a known divergence did run, and failed as expected
        return schema.Result.NOT_RUN
    if stats.skipped or unrun_core:
        return schema.Result.PARTIAL
    return schema.Result.SUCCESS


def _summary(result: schema.Result, stats: schema.Statistics, unrun_core: int, stop: RunStop) -> str:
    total = (stats.passed + stats.failed + stats.skipped + stats.not_supported + stats.interrupted
             + stats.known_divergences)
    counted = f"{stats.passed} of {total} passed"
    extras = [f"{n} {what}" for n, what in ((stats.failed, "failed"), (stats.skipped, "skipped"),
                                            (stats.not_supported, "not supported"),
                                            (stats.interrupted, "did not finish"),
                                            (stats.known_divergences, "known divergence")) if n]
    detail = counted + (f" ({', '.join(extras)})" if extras else "")
    if stop.run_error:
        return f"Failed: the run failed as a whole: {stop.run_error}; {detail}."
    if result is schema.Result.INTERRUPTED:
        return f"Interrupted: the run stopped before it finished ({stop.reason or 'no reason recorded'}); {detail}."
    if result is schema.Result.FAILURE:
        return f"Failed: {detail}."
    if result is schema.Result.NOT_RUN:
        if total == 0:
            return "Not run: no test of this profile was selected (check -k, --run-test and the test paths)."
        # The report does not know the run's flags, so it points at each test's reason, which says what would
        # claim the missing features without naming a flag the run already has (fixtures/selection.claim_hint).
        return (f"Not run: none of its tests executed, so the claim is unverified; {detail}. Each test's reason "
                "says what it lacks; claim that, or drop the profile from --profiles.")
    if result is schema.Result.PARTIAL:
        why = f"{unrun_core} core test(s) did not run" if unrun_core else "some claimed tests did not run"
        return f"Partial: no test failed, but {why}; {detail}."
    return f"Succeeded: {detail}."


def profile_report(profile: profiles_mod.Profile, tests: Sequence[schema.TestReport],
                   supported: Iterable[str], stop: RunStop = COMPLETED) -> schema.ProfileReport:
    """The verdict of one claimed profile over the tests that belong to it.

    Args:
        profile: the claimed profile.
        tests: all tests of the run; those not in this profile are ignored.
        supported: every feature name the run claimed (profile cores plus supported extended features).
        stop: how the run ended early, if it did (decides before the per-test rules).
    """
    mine = [t for t in tests if profile.name in t.profiles and t.result is not Outcome.PROVISIONAL_SKIPPED]
    stats = _statistics(mine)
    unrun_core = len([t for t in mine if t.core and t.result in schema.NOT_RUN])
    result = _result(stats, unrun_core, stop)
    claimed = set(supported)
    return schema.ProfileReport(
        name=profile.name, result=result, summary=_summary(result, stats, unrun_core, stop), statistics=stats,
        failed_tests=_names(mine, Outcome.FAILED), skipped_tests=_names(mine, Outcome.SKIPPED),
        not_supported_tests=_names(mine, Outcome.NOT_SUPPORTED),
        supported_features=tuple(sorted(f.value for f in profile.features if f.value in claimed)),
        unsupported_features=tuple(sorted(f.value for f in profile.features if f.value not in claimed)),
        interrupted_tests=_names(mine, Outcome.INTERRUPTED))


def gate(report: schema.Report, *, on_skips: bool = False) -> list[str]:
    """Why a CI job should fail on this report (empty: it passes).

    A run that failed as a whole or was interrupted, a claimed profile that is not-run, and a test of
    a claimed profile that failed always fail the gate; with `on_skips`, so does a core test of a
    claimed profile that was SKIPPED or NOT_SUPPORTED (not a PROVISIONAL_SKIPPED one).
    """
    claimed = {p.name for p in report.profiles}
    reasons = []
    if report.run_error:
        reasons.append(f"the run failed as a whole: {report.run_error}")
    elif report.interrupted:
        reasons.append(f"the run was interrupted ({report.stop_reason or 'no reason recorded'}); "
                       f"{report.unfinished} selected test(s) did not finish")
    reasons += [f"profile {p.name} is {p.result.value}: {p.summary}" for p in report.profiles
                if p.result is schema.Result.NOT_RUN]
    for test in report.tests:
        mine = sorted(claimed.intersection(test.profiles))
        if not mine:
            continue
        where = ", ".join(mine)
        if test.result is Outcome.FAILED:
            reasons.append(f"{test.name} ({where}) failed: {test.message or 'no message'}")
        elif on_skips and test.core and test.result in schema.NOT_RUN:
            reasons.append(f"core test {test.name} ({where}) was {test.result.value}: "
                           f"{test.message or 'no reason given'}")
    return reasons
