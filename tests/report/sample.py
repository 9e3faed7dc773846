"""A realistic, deterministic conformance run for the report writers' tests and the README example.

Sixteen tests over three claimed profiles: passes, one failed rolling update (with artifacts and a
timeline showing group 2 replaced before group 3 was ready), a core test skipped by --skip-tests,
and extended tests NOT_SUPPORTED. Built through `build.profile_report`, as a real run is.
"""

from __future__ import annotations

from pathlib import Path

from lwsconf import profiles
from lwsconf.conformance import Outcome
from lwsconf.features import Feature
from lwsconf.report import build, schema
from lwsconf.timeline import model as timeline
from lwsconf.timeline.model import GroupSample, LeaderSample, PodState, Step

S, F, K, N = Outcome.SUCCEEDED, Outcome.FAILED, Outcome.SKIPPED, Outcome.NOT_SUPPORTED
ROLL = "RollingUpdateHighestIndexFirst"
ROLL_FILES = ("events.yaml", "lws.yaml", "pods.yaml", "reconciler.log", timeline.FILENAME)
FAIL_MESSAGE = ("AssertionError: group 2 went to revision 7c9f while group 3 was not ready "
                "(maxUnavailable=1 allows one group down at a time)")
TESTS: list[tuple[str, Feature, Outcome, float, str]] = [
    ("ObjectModelNames", Feature.OBJECT_MODEL, S, 3.2, ""),
    ("LabelsOnEveryObject", Feature.LABELS, S, 2.9, ""),
    ("EnvSeenByContainers", Feature.ENV_INJECTION, S, 4.1, ""),
    ("DefaultsReadBack", Feature.DEFAULTING, S, 0.4, ""),
    ("InvalidSpecsRejected", Feature.VALIDATION, S, 1.3, ""),
    ("GroupRestartOnWorkerCrash", Feature.GROUP_RESTART, S, 6.8, ""),
    (ROLL, Feature.ROLLING_UPDATE, F, 11.6, FAIL_MESSAGE),
    ("RollingUpdateMaxUnavailable", Feature.ROLLING_UPDATE_MAX_UNAVAILABLE, S, 9.7, ""),
    ("ScaleDownHighestIndexFirst", Feature.SCALING, S, 5.0, ""),
    ("ScaleSubresource", Feature.SCALE_SUBRESOURCE, K, 0.0, "ScaleSubresource is listed in --skip-tests"),
    ("StatusConditions", Feature.STATUS_CONDITIONS, S, 4.4, ""),
    ("DeletionRemovesChildren", Feature.DELETION, S, 2.2, ""),
    ("RollingUpdateMaxSurge", Feature.ROLLING_UPDATE_MAX_SURGE, S, 10.5, ""),
    ("PartitionHoldsLowGroups", Feature.ROLLING_UPDATE_PARTITION, N, 0.0,
     "the implementation does not claim LWSRollingUpdatePartition (claim it with --supported-features, "
     "--all-features or a profile)"),
    ("ExclusivePlacementPerDomain", Feature.EXCLUSIVE_PLACEMENT, N, 0.0,
     "the implementation does not claim LWSExclusivePlacement (claim it with --supported-features, "
     "--all-features or a profile)"),
    ("LeaderOnlyServiceRoutes", Feature.LEADER_SERVICE, S, 7.3, ""),
]
DESCRIPTIONS = {
    ROLL: "A template change rolls groups from the highest index down, at most maxUnavailable groups "
          "not ready at a time (docs/lws-contract.md 4.4).",
    "GroupRestartOnWorkerCrash": "A crashed worker container recreates its whole group (docs/lws-contract.md 4.2).",
    "ScaleDownHighestIndexFirst": "Scaling down removes the highest-index groups first (docs/lws-contract.md 4.3).",
}
TIMELINED = (ROLL, "GroupRestartOnWorkerCrash", "ScaleDownHighestIndexFirst")
CLAIMED = (profiles.LWS_CORE, profiles.LWS_EXTENDED, profiles.LWS_SERVING)
SUPPORTED = frozenset({f.value for p in CLAIMED for f in p.core} | {Feature.ROLLING_UPDATE_MAX_SURGE.value})


def node_id(name: str) -> str:
    return f"conformance/test_sample.py::test_{name}"


def artifacts_of(name: str) -> tuple[str, ...]:
    if name == ROLL:
        return tuple(f"artifacts/{name}/{f}" for f in ROLL_FILES)
    return (f"artifacts/{name}/{timeline.FILENAME}",) if name in TIMELINED else ()


def tests() -> tuple[schema.TestReport, ...]:
    out = []
    for name, feature, result, duration, message in TESTS:
        out.append(schema.TestReport(
            short_name=name, node_id=node_id(name),
            description=DESCRIPTIONS.get(name, f"{name} (docs/lws-contract.md)."),
            features=(feature.value,), profiles=(profiles.profile_of(feature).name,),
            core=build.is_core([feature.value]), result=result, duration=duration, message=message,
            artifacts=artifacts_of(name)))
    return tuple(out)


def report() -> schema.Report:
    all_tests = tests()
    return schema.Report(
        implementation=schema.Implementation("example-org", "lws-operator", "https://example.com/lws-operator",
                                             "v1.2.0", ("@example-org/lws",)),
        date="2026-11-29T09:30:00+00:00", lwsconf_version="0.1.0", lws_api_version="leaderworkerset.x-k8s.io/v1",
        mode="default", backend="sim",
        environment=schema.Environment("v1.37.0-lwsconf-sim", 4, "sim", None),
        profiles=tuple(build.profile_report(p, all_tests, SUPPORTED) for p in CLAIMED),
        tests=all_tests, run_id="20261129-093000-ab12")


def group(t: float, g: int, revision: str, ready: bool, pods: int, *, seq: int = 0, uid: str = "a") -> GroupSample:
    """Group `g` of LWS "demo" with `pods` pods on one revision (leader UID `uid`), all ready or not."""
    members = tuple(PodState(f"demo-{g}" + (f"-{j}" if j else ""), revision, ready, f"{uid}{g}{j}", j == 0)
                    for j in range(pods))
    return GroupSample(t, seq or int(t * 10), g, (revision,) if pods else (), ready and pods > 0, members)


def rolling_timeline() -> timeline.Timeline:
    """4 groups, template 5d8f -> 7c9f; the bug: group 2 leaves before group 3 is ready again."""
    old, new = "5d8f", "7c9f"
    samples = [group(0.0, g, old, True, 3, seq=1) for g in range(4)]
    samples += [
        group(1.2, 3, new, False, 3, uid="b"), group(1.9, 2, new, False, 3, uid="b"),
        group(4.1, 3, new, True, 3, uid="b"), group(4.6, 2, new, True, 3, uid="b"),
        group(4.8, 1, new, False, 3, uid="b"), group(7.2, 1, new, True, 3, uid="b"),
        group(7.4, 0, new, False, 3, uid="b"), group(9.9, 0, new, True, 3, uid="b"),
    ]
    sts = [LeaderSample(0.0, 4, 0, 1, old), LeaderSample(1.1, 4, 3, 1, new), LeaderSample(1.8, 4, 2, 1, new),
           LeaderSample(4.7, 4, 1, 1, new), LeaderSample(7.3, 4, 0, 1, new)]
    steps = [Step(1.0, "leader image changed to vllm:v0.9.1"),
             Step(1.9, "check failed: group 2 updating while group 3 not ready")]
    return timeline.Timeline("lws-ns", "demo", ROLL, samples, sts, steps, [], 11.0)


def restart_timeline() -> timeline.Timeline:
    samples = [group(0.0, 0, "5d8f", True, 4, seq=1), group(0.0, 1, "5d8f", True, 4, seq=1),
               group(2.1, 1, "5d8f", False, 4), group(2.4, 1, "5d8f", False, 0),
               group(2.9, 1, "5d8f", False, 4, uid="b"), group(5.6, 1, "5d8f", True, 4, uid="b")]
    return timeline.Timeline("lws-ns", "demo", "GroupRestartOnWorkerCrash", samples,
                             [LeaderSample(0.0, 2, 0, 1, "5d8f")],
                             [Step(2.0, "container of demo-1-2 exited with code 137")], [], 6.8)


def scale_timeline() -> timeline.Timeline:
    samples = [group(0.0, g, "5d8f", True, 2, seq=1) for g in range(4)]
    samples += [group(1.3, 3, "5d8f", False, 2), group(1.8, 3, "5d8f", False, 0),
                group(2.0, 2, "5d8f", False, 2), group(2.6, 2, "5d8f", False, 0)]
    return timeline.Timeline("lws-ns", "demo", "ScaleDownHighestIndexFirst", samples,
                             [LeaderSample(0.0, 4, 0, 1, "5d8f"), LeaderSample(1.1, 2, 0, 1, "5d8f")],
                             [Step(1.0, "patched demo: spec.replicas=2")], [], 5.0)


TIMELINES = {ROLL: rolling_timeline, "GroupRestartOnWorkerCrash": restart_timeline,
             "ScaleDownHighestIndexFirst": scale_timeline}


def write_run_dir(run_dir: Path) -> Path:
    """A run directory holding the sample's artifacts (timelines and placeholder dumps)."""
    for name in TIMELINED:
        timeline.save(TIMELINES[name](), run_dir / "artifacts" / name / timeline.FILENAME)
    for f in ROLL_FILES[:-1]:
        (run_dir / "artifacts" / ROLL / f).write_text(f"# {f} of the failed test\n")
    return run_dir


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0"
 failures="1" skipped="3" tests="{n}" time="80.0">{cases}</testsuite></testsuites>"""


def junit_xml() -> str:
    """What pytest's junitxml writes for the sample (before lwsconf adds properties)."""
    cases = []
    for name, _, result, duration, message in TESTS:
        inner = {F: f'<failure message="{message}">trace</failure>', K: '<skipped message="s"/>',
                 N: '<skipped message="s"/>'}.get(result, "")
        cases.append(f'<testcase classname="conformance.test_sample" name="test_{name}" time="{duration}">'
                     f"{inner}</testcase>")
    return JUNIT.format(n=len(cases), cases="".join(cases))
