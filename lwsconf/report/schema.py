"""The conformance report as typed, versioned data (Gateway API's ConformanceReport, for LWS).

`Report` is what a run leaves behind in `conformance-report.yaml`: who was tested (implementation
identity), where (backend and environment), what was claimed (profiles with supported and
unsupported features) and what happened (per profile and per test). Every writer (YAML, JUnit,
Markdown, HTML) only renders a `Report`; none of them computes results. `to_dict`/`from_dict` use
the YAML's camelCase keys; `report.schema.json` beside this module describes the same document and
tests keep the two in step. Field names are a published format: add fields, never rename them, and
bump `API_VERSION` for incompatible changes. No I/O and no pytest here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from lwsconf.conformance import Outcome

__all__ = ["API_VERSION", "KIND", "NOT_RUN", "Environment", "Implementation", "Outcome", "ProfileReport", "Report",
           "Result", "Statistics", "TestReport"]

API_VERSION = "lwsconf.dev/v1alpha1"
KIND = "LWSConformanceReport"
NOT_RUN = frozenset({Outcome.SKIPPED, Outcome.NOT_SUPPORTED})
"""Outcomes of a claimed test that did not run. PROVISIONAL_SKIPPED is not among them: a provisional test
is not yet part of conformance, so skipping it counts nowhere (as in Gateway API's suite)."""

T = TypeVar("T")


class Result(StrEnum):
    """A profile's verdict (decided in build.py): failure if any test failed or the run failed as a whole;
    interrupted if the run stopped before its tests finished; not-run if none of its tests executed;
    partial if a test was skipped; success otherwise. Only success and partial pass the CI gate."""

    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"
    NOT_RUN = "not-run"
    INTERRUPTED = "interrupted"


def _get(data: Mapping[str, Any], key: str, kind: type[T], where: str) -> T:
    """data[key], checked to be a `kind`; errors name the field path and what was found."""
    if key not in data:
        raise ValueError(f"{where}: missing field {key!r}")
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__} {value!r}")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = _get(data, key, list, where)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}.{key}: expected a list of strings, got {values!r}")
    return tuple(values)


def _enum(data: Mapping[str, Any], key: str, kind: type[StrEnum], where: str) -> Any:
    raw = _get(data, key, str, where)
    try:
        return kind(raw)
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ValueError(f"{where}.{key}: {raw!r} is not one of {allowed}") from None


@dataclass(frozen=True)
class Implementation:
    """Who is under test (Gateway API's `implementation`); required by --report-output."""

    organization: str
    project: str
    url: str
    version: str
    contact: tuple[str, ...] = ()
    source: tuple[tuple[str, str], ...] = ()
    """What exactly ran, when lwsconf built and ran it (--lws-impl=upstream-local): module, version or the
    checkout's commit and dirty flag, module checksum, how it ran. Empty otherwise."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"organization": self.organization, "project": self.project, "url": self.url,
                               "version": self.version, "contact": list(self.contact)}
        return out | ({"source": dict(self.source)} if self.source else {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "implementation") -> Implementation:
        source = data.get("source") or {}
        if not isinstance(source, Mapping) or not all(isinstance(v, str) for v in source.values()):
            raise ValueError(f"{where}.source: expected a mapping of strings, got {source!r}")
        return cls(_get(data, "organization", str, where), _get(data, "project", str, where),
                   _get(data, "url", str, where), _get(data, "version", str, where),
                   _strings(data, "contact", where), tuple((str(k), v) for k, v in source.items()))


@dataclass(frozen=True)
class Environment:
    """The cluster the run used; `nodeImage` is "sim" on the simulated backend."""

    kubernetes_version: str = "unknown"
    node_count: int = 0
    node_image: str = "unknown"
    gpu_product: str | None = None
    simulated: tuple[str, ...] = ()
    """What of the cluster is simulated (e.g. "node image", "GPUs" on sim), so nobody mistakes a sim
    report for a real GPU cluster's. Omitted from the document when nothing is."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kubernetesVersion": self.kubernetes_version, "nodeCount": self.node_count,
                               "nodeImage": self.node_image, "gpuProduct": self.gpu_product}
        if self.simulated:
            out["simulated"] = list(self.simulated)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "environment") -> Environment:
        gpu = data.get("gpuProduct")
        if gpu is not None and not isinstance(gpu, str):
            raise ValueError(f"{where}.gpuProduct: expected a string or null, got {gpu!r}")
        return cls(_get(data, "kubernetesVersion", str, where), _get(data, "nodeCount", int, where),
                   _get(data, "nodeImage", str, where), gpu,
                   _strings(data, "simulated", where) if "simulated" in data else ())


@dataclass(frozen=True)
class Statistics:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    not_supported: int = 0
    interrupted: int = 0
    """Tests that had not finished when the run stopped (omitted from the document when 0)."""
    known_divergences: int = 0
    """Tests that failed as conformance/divergences.yaml expects (omitted from the document when 0)."""

    def to_dict(self) -> dict[str, Any]:
        out = {"passed": self.passed, "failed": self.failed, "skipped": self.skipped,
               "notSupported": self.not_supported}
        if self.interrupted:
            out["interrupted"] = self.interrupted
        if self.known_divergences:
            out["knownDivergences"] = self.known_divergences
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "statistics") -> Statistics:
        passed, failed, skipped, not_supported = (_get(data, k, int, where)
                                                  for k in ("passed", "failed", "skipped", "notSupported"))
        interrupted = _get(data, "interrupted", int, where) if "interrupted" in data else 0
        known = _get(data, "knownDivergences", int, where) if "knownDivergences" in data else 0
        return cls(passed, failed, skipped, not_supported, interrupted, known)


@dataclass(frozen=True)
class TestReport:
    """One test's result. `message` is one line: the failure, or the skip reason."""

    __test__ = False  # not a pytest test class

    short_name: str
    node_id: str
    description: str
    features: tuple[str, ...]
    profiles: tuple[str, ...]
    core: bool
    """True when every feature of the test is a core feature: skipping it makes its profiles partial."""
    result: Outcome
    duration: float
    message: str = ""
    artifacts: tuple[str, ...] = ()
    """Paths relative to the run directory (reports/<run-id>/)."""
    problems: tuple[str, ...] = ()
    """What the report could not show of this test, e.g. an artifact it cannot read (an unreadable
    timeline.json): said in the report, never skipped silently. Omitted from the document when empty."""
    case_id: str = ""
    """The pytest parameter id of a parametrised case (e.g. V15-subgroup-larger-than-size), "" otherwise;
    omitted from the document when empty. `name` is how every writer shows the test."""
    figures: tuple[tuple[str, str], ...] = ()
    """What the test measured, as it recorded it with pytest's `record_property` (name, value as text), in order:
    time to ready, tokens and requests per second of the VLLM-CPU profile. Omitted from the document when empty."""

    @property
    def name(self) -> str:
        """The short name, plus the case id of a parametrised case: `InvalidSpecsAreRejected[V15-...]`."""
        return f"{self.short_name}[{self.case_id}]" if self.case_id else self.short_name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shortName": self.short_name}
        if self.case_id:
            out["caseId"] = self.case_id
        out |= {"nodeId": self.node_id, "description": self.description,
               "features": list(self.features), "profiles": list(self.profiles), "core": self.core,
               "result": self.result.value, "duration": round(self.duration, 3), "message": self.message,
               "artifacts": list(self.artifacts)}
        if self.problems:
            out["problems"] = list(self.problems)
        if self.figures:
            out["figures"] = dict(self.figures)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "tests[]") -> TestReport:
        return cls(_get(data, "shortName", str, where), _get(data, "nodeId", str, where),
                   _get(data, "description", str, where), _strings(data, "features", where),
                   _strings(data, "profiles", where), _get(data, "core", bool, where),
                   _enum(data, "result", Outcome, where), _get(data, "duration", float, where),
                   _get(data, "message", str, where), _strings(data, "artifacts", where),
                   _strings(data, "problems", where) if "problems" in data else (),
                   case_id=_get(data, "caseId", str, where) if "caseId" in data else "",
                   figures=_figures(data, where) if "figures" in data else ())


def _figures(data: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    figures = _get(data, "figures", dict, where)
    wrong = {k: v for k, v in figures.items() if not isinstance(v, str)}
    if wrong:
        raise ValueError(f"{where}.figures: every value is text, got {wrong!r}")
    return tuple((str(k), v) for k, v in figures.items())


@dataclass(frozen=True)
class ProfileReport:
    """A claimed profile's verdict (Gateway API's `profiles[]`, core and extended folded into one)."""

    name: str
    result: Result
    summary: str
    statistics: Statistics
    failed_tests: tuple[str, ...] = ()
    skipped_tests: tuple[str, ...] = ()
    not_supported_tests: tuple[str, ...] = ()
    supported_features: tuple[str, ...] = ()
    unsupported_features: tuple[str, ...] = ()
    interrupted_tests: tuple[str, ...] = ()
    """Tests that had not finished when the run stopped (omitted from the document when empty)."""

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "result": self.result.value, "summary": self.summary,
               "statistics": self.statistics.to_dict(), "failedTests": list(self.failed_tests),
               "skippedTests": list(self.skipped_tests), "notSupportedTests": list(self.not_supported_tests),
               "supportedFeatures": list(self.supported_features),
               "unsupportedFeatures": list(self.unsupported_features)}
        if self.interrupted_tests:
            out["interruptedTests"] = list(self.interrupted_tests)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "profiles[]") -> ProfileReport:
        failed, skipped, not_supported, supported, unsupported = (_strings(data, k, where) for k in (
            "failedTests", "skippedTests", "notSupportedTests", "supportedFeatures", "unsupportedFeatures"))
        return cls(_get(data, "name", str, where), _enum(data, "result", Result, where),
                   _get(data, "summary", str, where),
                   Statistics.from_dict(_get(data, "statistics", dict, where), f"{where}.statistics"),
                   failed, skipped, not_supported, supported, unsupported,
                   _strings(data, "interruptedTests", where) if "interruptedTests" in data else ())


@dataclass(frozen=True)
class Report:
    """The whole document: `apiVersion: lwsconf.dev/v1alpha1`, `kind: LWSConformanceReport`."""

    implementation: Implementation
    date: str
    """RFC 3339 time the run started."""
    lwsconf_version: str
    lws_api_version: str
    """The served LeaderWorkerSet API, e.g. leaderworkerset.x-k8s.io/v1 ("unknown" if never seen)."""
    mode: str
    backend: str
    environment: Environment
    profiles: tuple[ProfileReport, ...]
    tests: tuple[TestReport, ...]
    run_id: str = ""
    api_version: str = API_VERSION
    kind: str = KIND
    interrupted: bool = False
    """The run stopped before every selected test finished (Ctrl-C, SIGTERM, --fail-fast, -x, a run error)."""
    stop_reason: str = ""
    """One line: why the run stopped early ("" when it completed)."""
    run_error: str = ""
    """One line: why the run failed as a whole (e.g. the implementation never became ready), "" otherwise."""
    suite_commit: str = ""
    """The commit the suite's files came from (`lwsconf.suite_identity`), "" when unknown."""

    @property
    def suite_label(self) -> str:
        """The lwsconf version and, when known, the suite's short commit: "0.1.0 (suite 4876f7b0a1c2)"."""
        return self.lwsconf_version + (f" (suite {self.suite_commit[:12]})" if self.suite_commit else "")

    @property
    def unfinished(self) -> int:
        """How many selected tests did not finish (INTERRUPTED): one count for every writer and the gate."""
        return sum(t.result is Outcome.INTERRUPTED for t in self.tests)

    def test(self, name: str) -> TestReport:
        """The first test with this name (`TestReport.name`) or short name; KeyError lists the known names."""
        for t in self.tests:
            if name in (t.name, t.short_name):
                return t
        raise KeyError(f"no test {name!r} in the report; tests: {[t.name for t in self.tests]}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind, "runId": self.run_id}
        if self.run_error:
            out["runError"] = self.run_error
        if self.interrupted:
            out |= {"interrupted": True, "stopReason": self.stop_reason}
        return out | {
            "implementation": self.implementation.to_dict(), "date": self.date,
            "lwsconfVersion": self.lwsconf_version,
            **({"suiteCommit": self.suite_commit} if self.suite_commit else {}),
            "lwsAPIVersion": self.lws_api_version, "mode": self.mode, "backend": self.backend,
            "environment": self.environment.to_dict(),
            "profiles": [p.to_dict() for p in self.profiles], "tests": [t.to_dict() for t in self.tests]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """Parse a report document; ValueError names the first bad field, e.g. `tests[3].result`."""
        where = "report"
        api_version, kind = _get(data, "apiVersion", str, where), _get(data, "kind", str, where)
        if (api_version, kind) != (API_VERSION, KIND):
            raise ValueError(f"not an lwsconf report: apiVersion {api_version!r}, kind {kind!r}; this lwsconf "
                             f"reads apiVersion {API_VERSION}, kind {KIND}")
        profiles = _indexed(_get(data, "profiles", list, where), "profiles", ProfileReport.from_dict)
        tests = _indexed(_get(data, "tests", list, where), "tests", TestReport.from_dict)
        return cls(Implementation.from_dict(_get(data, "implementation", dict, where)),
                   _get(data, "date", str, where), _get(data, "lwsconfVersion", str, where),
                   _get(data, "lwsAPIVersion", str, where), _get(data, "mode", str, where),
                   _get(data, "backend", str, where),
                   Environment.from_dict(_get(data, "environment", dict, where)), profiles, tests,
                   run_id=str(data.get("runId", "")), api_version=api_version, kind=kind,
                   interrupted=_get(data, "interrupted", bool, where) if "interrupted" in data else False,
                   stop_reason=_get(data, "stopReason", str, where) if "stopReason" in data else "",
                   run_error=_get(data, "runError", str, where) if "runError" in data else "",
                   suite_commit=_get(data, "suiteCommit", str, where) if "suiteCommit" in data else "")


def _indexed(items: Sequence[Any], name: str, parse: Any) -> tuple[Any, ...]:
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"{name}[{i}]: expected a mapping, got {item!r}")
        out.append(parse(item, f"{name}[{i}]"))
    return tuple(out)
