"""Each profile stands on its own (issue 35 item 5): claimed alone, its tests run.

A user ran `pytest conformance --profiles=LWS-SERVING --all-features` and got LWS-SERVING `partial`: 4 of
its 9 tests were NOT_SUPPORTED for LWSRecreateGroupOnPodRestart and other LWS-CORE features the profile
did not claim. These tests collect the real suite (`--collect-only`: the suite decides every verdict at
collection, fixtures/selection.py, so nothing is deployed) with each profile alone and read the verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lwsconf import profiles
from lwsconf.report import build

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[1]
VERDICTS_PLUGIN = """
import json

from fixtures import selection


def pytest_collection_finish(session):
    for item in session.items:
        verdict = item.stash.get(selection.VERDICT_KEY, None)
        if verdict is not None:
            print("VERDICT " + json.dumps({
                "id": item.nodeid, "features": sorted(f.value for f in verdict.spec.features),
                "profiles": list(verdict.spec.profiles),
                "outcome": verdict.outcome.value if verdict.outcome else None, "reason": verdict.reason}))
"""


@pytest.fixture
def verdicts(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The verdict of every collected conformance test for the given run options."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(lwsconf_verdicts=VERDICTS_PLUGIN)

    def collect(*args: str) -> list[dict[str, Any]]:
        result = pytester.runpytest_subprocess(str(REPO / "conformance"), "--collect-only", "-q", "-p",
                                               "no:cacheprovider", "-p", "lwsconf_verdicts", *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
        found = [json.loads(line[len("VERDICT "):]) for line in result.outlines if line.startswith("VERDICT ")]
        assert found, "no conformance test was collected"
        return found
    return collect


def _unclaimed(found: list[dict[str, Any]], profile: str) -> list[str]:
    return [f"{v['id']}: {v['reason']}" for v in found
            if profile in v["profiles"] and v["outcome"] == "NOT_SUPPORTED" and "does not claim" in v["reason"]]


@pytest.mark.parametrize("profile", list(profiles.ALL))
def test_a_profile_alone_with_all_features_claims_every_feature_its_tests_need(verdicts: Any, profile: str) -> None:
    assert _unclaimed(verdicts(f"--profiles={profile}", "--all-features"), profile) == []


@pytest.mark.parametrize("profile", list(profiles.ALL))
def test_a_profile_alone_claims_every_feature_its_core_tests_need(verdicts: Any, profile: str) -> None:
    """Without --all-features: every core test listed under the profile runs; only a test needing an extended
    feature may be NOT_SUPPORTED. So `--profiles=LWS-CORE` alone, against an implementation passing every test,
    is `success`, not `partial` (it was, for a leader-Service test LWS-CORE listed for its group-restart half)."""
    found = [v for v in verdicts(f"--profiles={profile}") if build.is_core(v["features"])]
    assert _unclaimed(found, profile) == []


def test_a_test_belongs_to_the_profiles_that_carry_it_whole() -> None:
    from lwsconf.features import Feature

    assert profiles.profiles_of(frozenset({Feature.LEADER_SERVICE, Feature.GROUP_RESTART})) == ("LWS-SERVING",)
    assert profiles.profiles_of(frozenset({Feature.ROLLING_UPDATE, Feature.ROLLING_UPDATE_PARTITION})) == (
        "LWS-EXTENDED",)
    assert profiles.profiles_of(frozenset({Feature.SCALING})) == ("LWS-CORE",)
    # carried by nobody whole: every owner, as before (test_every_test_is_carried_whole_by_one_of_its_profiles
    # keeps the suite's own tests out of this case)
    assert profiles.profiles_of(frozenset({Feature.VLLM_MULTI_NODE, Feature.LEADER_SERVICE})) == (
        "GPU-SMOKE", "LWS-SERVING")


def test_every_test_is_carried_whole_by_one_of_its_profiles(verdicts: Any) -> None:
    """`Profile.implies` is complete: every test has a profile whose own and implied features cover it."""
    uncarried = [v["id"] for v in verdicts()
                 if not any(set(v["features"]) <= {f.value for f in p.features | p.implies}
                            for p in (profiles.ALL[name] for name in v["profiles"]))]
    assert uncarried == []


def test_a_profile_implies_only_features_of_other_profiles() -> None:
    for profile in profiles.ALL.values():
        assert not profile.implies & profile.features, profile.name
