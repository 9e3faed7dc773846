"""The pytest side of reporting: gather each test's result during a run, write the reports at the end.

`Collector` is a plugin object (registered by `fixtures/reporting.py`). In every process it tags
each pytest report with the test's conformance metadata (and, once known, the cluster's facts), so
the data survives pytest-xdist's trip from worker to controller. In the process that owns the run
directory it folds the setup/call/teardown reports of each test into one `schema.TestReport`
(SUCCEEDED, FAILED, or the suite's SKIPPED / NOT_SUPPORTED / PROVISIONAL_SKIPPED verdict), and at
session end builds the `schema.Report` and writes `conformance-report.yaml`, `summary.md`,
`report.html` and the junit.xml properties into `reports/<run-id>/`. It knows nothing of the
plugin's options or of Kubernetes: the caller passes a `describe` and a `probe` function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lwsconf import __version__, profiles, suite_identity
from lwsconf.conformance import Outcome
from lwsconf.report import build, html, junit, schema, stop, summary_md, yaml_writer
from lwsconf.report.build import COMPLETED, RunStop
from lwsconf.timeline import model as timeline_model

__all__ = ["ClusterFacts", "Collector", "RunContext", "TestMeta", "artifact_dir_name", "case_id", "load_timelines",
           "read_timelines", "write_run"]

ARTIFACTS = "artifacts"
MAX_MESSAGE = 500
MAX_PROBES = 10


def case_id(node_id: str) -> str:
    """The parameter id of a parametrised test's node id (`...::test_x[V15-foo]` -> `V15-foo`), else ""."""
    last = node_id.rsplit("::", 1)[-1]
    return last[last.index("[") + 1: -1] if last.endswith("]") and "[" in last else ""


def artifact_dir_name(node_id: str, short_name: str | None = None) -> str:
    """The folder under `artifacts/` for one test: its short name (plus parameters), filesystem-safe."""
    last = node_id.rsplit("::", 1)[-1]
    params = case_id(node_id)
    base = (short_name or last.split("[")[0]) + (f"-{params}" if params else "")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.")[:120] or "test"


@dataclass(frozen=True)
class TestMeta:
    """What the suite knows of a test before it runs (from its TestSpec and the selection verdict)."""

    __test__ = False

    short_name: str
    description: str = ""
    features: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    verdict: Outcome | None = None
    """The suite's decision not to run it (SKIPPED, NOT_SUPPORTED, PROVISIONAL_SKIPPED), or None."""
    reason: str = ""
    withdrawn: tuple[str, ...] = ()
    """Features the run claimed but the implementation found it cannot support on this cluster."""

    def to_dict(self) -> dict[str, Any]:
        return {"shortName": self.short_name, "description": self.description, "features": list(self.features),
                "profiles": list(self.profiles), "verdict": self.verdict.value if self.verdict else None,
                "reason": self.reason, "withdrawn": list(self.withdrawn)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TestMeta:
        return cls(d["shortName"], d["description"], tuple(d["features"]), tuple(d["profiles"]),
                   Outcome(d["verdict"]) if d["verdict"] else None, d["reason"], tuple(d.get("withdrawn") or ()))


@dataclass(frozen=True)
class ClusterFacts:
    environment: schema.Environment
    lws_api_version: str | None = None
    """None while no LeaderWorkerSet API is served (e.g. before the implementation is installed)."""


@dataclass(frozen=True)
class RunContext:
    """The run-wide facts of the report: identity, claims, where and when."""

    implementation: schema.Implementation
    mode: str
    backend: str
    profiles: tuple[profiles.Profile, ...]
    supported: frozenset[str]
    date: str
    run_id: str = ""
    profiles_named: bool = True
    """Whether the user named the claimed profiles; when the default chose them, a profile every test of which the
    implementation withdrew once installed is not claimed (`Collector.claimed_profiles`)."""


@dataclass
class _Result:
    meta: TestMeta
    node_id: str
    outcome: Outcome | None = None
    message: str = ""
    duration: float = 0.0
    figures: tuple[tuple[str, str], ...] = ()


def _one_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def _message(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, "Skipped: reason")
        return _one_line(re.sub(r"^Skipped: ", "", str(longrepr[2])))
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else (str(longrepr).strip().splitlines() or [""])[-1]
    # xdist reports a test whose worker died (kill -9, OOM) as failed with when "???" and the message
    # "worker 'gw1' crashed while running '<node id>'": that message alone says what happened.
    prefix = f"in {report.when}: " if report.when not in ("call", "???") else ""
    return prefix + _one_line(text)


def _strip_outcome(reason: str) -> str:
    """The suite's reasons start with the outcome name ("NOT_SUPPORTED: ..."); the result field says it already."""
    return _one_line(re.sub(r"^(?:" + "|".join(o.value for o in Outcome) + r"): ", "", reason))


def _fold(res: _Result, report: pytest.TestReport) -> None:
    """Fold one phase's report into a test's result (failure anywhere wins)."""
    res.duration += report.duration
    if res.outcome in (Outcome.FAILED, Outcome.INTERRUPTED):
        return
    if report.failed:
        res.outcome, res.message = Outcome.FAILED, _message(report)
    elif report.skipped and hasattr(report, "wasxfail"):  # strict xfail from conformance/divergences.yaml
        # pytest keeps the failure's repr beside the xfail reason: the report says which row, and what was seen
        observed = _message(report) if report.longrepr is not None and not isinstance(report.longrepr, tuple) else ""
        res.outcome = Outcome.KNOWN_DIVERGENCE
        res.message = _one_line(f"{report.wasxfail}; observed: {observed}" if observed else str(report.wasxfail))
    elif report.skipped:
        verdict = res.meta.verdict if report.when == "setup" else None
        res.outcome = verdict or Outcome.SKIPPED
        res.message = _strip_outcome(res.meta.reason) if verdict else _message(report)
    elif report.when == "call":
        res.outcome = Outcome.SUCCEEDED


@dataclass(eq=False)  # pluggy keeps plugins in sets: identity hashing, never field equality
class Collector:
    """Registered as a plugin. It gathers results when it has somewhere to write them (`run_dir` and/or
    `report_output`); without either (xdist workers) it only tags reports for the controller."""

    context: RunContext
    describe: Callable[[pytest.Item], TestMeta]
    run_dir: Path | None = None
    probe: Callable[[pytest.Item], ClusterFacts | None] | None = None
    report_output: Path | None = None
    gate_on_skips: bool = False
    environment: schema.Environment = field(default_factory=schema.Environment)
    """What is known of the cluster before any test could ask it (e.g. that the sim simulates its nodes)."""
    report: schema.Report | None = None
    gate_reasons: list[str] = field(default_factory=list)
    _results: dict[str, _Result] = field(default_factory=dict, init=False, repr=False)
    _facts: ClusterFacts | None = field(default=None, init=False, repr=False)
    _probes: int = field(default=0, init=False, repr=False)
    _collected: dict[str, TestMeta | None] = field(default_factory=dict, init=False, repr=False)
    """Node ids selected to run, in order, with their metadata once known (xdist: from the workers)."""
    _outgoing: dict[str, Any] | None = field(default=None, init=False, repr=False)
    """A worker's collection, sent once on its first report so the controller can name unfinished tests."""
    _interrupt: str = field(default="", init=False, repr=False)
    _run_error: str = field(default="", init=False, repr=False)

    @property
    def gathering(self) -> bool:
        return self.run_dir is not None or self.report_output is not None

    # --- every process: tag reports -----------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        report.lwsconf_meta = self.describe(item).to_dict()  # type: ignore[attr-defined]
        if self._outgoing is not None:
            report.lwsconf_collection, self._outgoing = self._outgoing, None  # type: ignore[attr-defined]
        run_error = item.config.stash.get(stop.RUN_ERROR, "")
        if run_error:
            report.lwsconf_run_error = run_error  # type: ignore[attr-defined]
        if call.when == "call":
            self._maybe_probe(item)
        if self._facts is not None:
            report.lwsconf_cluster = {  # type: ignore[attr-defined]
                "environment": self._facts.environment.to_dict(), "lwsAPIVersion": self._facts.lws_api_version}
        return report

    def _maybe_probe(self, item: pytest.Item) -> None:
        complete = self._facts is not None and self._facts.lws_api_version is not None
        if self.probe is None or complete or self._probes >= MAX_PROBES:
            return
        facts = self.probe(item)
        if facts is not None:
            self._probes += 1
            self._facts = facts

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        metas = {item.nodeid: self.describe(item) for item in session.items}
        if self.gathering:
            self._collected.update(metas)
        else:
            self._outgoing = {node_id: meta.to_dict() for node_id, meta in metas.items()}

    # --- the process that owns the run directory: fold and write --------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        for node_id in ids:
            self._collected.setdefault(node_id, None)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self._interrupt = stop.reason_of(excinfo)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.gathering:
            return
        for node_id, data in (getattr(report, "lwsconf_collection", None) or {}).items():
            self._collected[node_id] = TestMeta.from_dict(data)
        self._run_error = self._run_error or getattr(report, "lwsconf_run_error", "")
        meta = getattr(report, "lwsconf_meta", None)
        cluster = getattr(report, "lwsconf_cluster", None)
        if cluster and (self._facts is None or self._facts.lws_api_version is None):
            self._facts = ClusterFacts(schema.Environment.from_dict(cluster["environment"]), cluster["lwsAPIVersion"])
        res = self._results.get(report.nodeid)
        if res is None:
            tm = TestMeta.from_dict(meta) if meta else TestMeta(report.nodeid.rsplit("::", 1)[-1])
            res = self._results[report.nodeid] = _Result(tm, report.nodeid)
        if report.user_properties:  # record_property: the list grows phase by phase, the last report has them all
            res.figures = tuple((str(name), str(value)) for name, value in report.user_properties)
        if getattr(report, "lwsconf_run_error", "") and report.failed and report.when == "setup":
            res.outcome, res.message = Outcome.INTERRUPTED, f"not run: {_one_line(report.lwsconf_run_error)}"
        _fold(res, report)

    def tests(self) -> tuple[schema.TestReport, ...]:
        """The per-test reports so far, with the artifact files found on disk."""
        out = []
        for res in self._results.values():
            if res.outcome is None:  # interrupted before any verdict
                continue
            m = res.meta
            artifacts = self._artifacts(res)
            problems = read_timelines(self.run_dir, artifacts)[1] if self.run_dir is not None else []
            out.append(schema.TestReport(
                short_name=m.short_name, node_id=res.node_id, description=m.description, features=m.features,
                profiles=m.profiles, core=build.is_core(m.features), result=res.outcome, duration=res.duration,
                message=res.message, artifacts=artifacts, problems=tuple(problems), case_id=case_id(res.node_id),
                figures=res.figures))
        return tuple(out)

    def unfinished(self, reason: str) -> tuple[schema.TestReport, ...]:
        """Entries for the selected tests that have no result: never dropped silently. INTERRUPTED, unless
        the suite had already decided at collection not to run the test (then its SKIPPED/NOT_SUPPORTED)."""
        out = []
        for node_id, meta in self._collected.items():
            res = self._results.get(node_id)
            if res is not None and res.outcome is not None:
                continue
            m = res.meta if res is not None else meta or TestMeta(node_id.rsplit("::", 1)[-1].split("[")[0])
            started = "did not finish: the run stopped while it ran" if res else "not started: the run stopped first"
            decided = m.verdict if res is None else None
            out.append(schema.TestReport(
                short_name=m.short_name, node_id=node_id, description=m.description, features=m.features,
                profiles=m.profiles, core=build.is_core(m.features), result=decided or Outcome.INTERRUPTED,
                duration=res.duration if res else 0.0, case_id=case_id(node_id),
                message=_strip_outcome(m.reason) if decided else _one_line(f"{started} ({reason})")))
        return tuple(out)

    def _artifacts(self, res: _Result) -> tuple[str, ...]:
        if self.run_dir is None:
            return ()
        folder = self.run_dir / ARTIFACTS / artifact_dir_name(res.node_id, res.meta.short_name)
        if not folder.is_dir():
            return ()
        return tuple(sorted(p.relative_to(self.run_dir).as_posix() for p in folder.rglob("*") if p.is_file()))

    def build(self, end: RunStop = COMPLETED) -> schema.Report:
        """The report; `end` says how the run ended (then the unfinished tests are listed as INTERRUPTED)."""
        tests, ctx = self.tests(), self.context
        if end.interrupted:
            tests += self.unfinished(end.reason)
        facts = self._facts or ClusterFacts(self.environment)
        return schema.Report(
            implementation=ctx.implementation, date=ctx.date, lwsconf_version=__version__,
            lws_api_version=facts.lws_api_version or "unknown", mode=ctx.mode, backend=ctx.backend,
            environment=facts.environment, run_id=ctx.run_id, tests=tests,
            profiles=tuple(build.profile_report(p, tests, self.supported(), end) for p in self.claimed_profiles()),
            interrupted=end.interrupted, stop_reason=end.reason, run_error=end.run_error,
            suite_commit=suite_identity.suite_commit())

    def run_end(self, session: pytest.Session, exitstatus: int) -> RunStop:
        """How this session ended, from its exit status, stop requests and recorded errors."""
        run_error = self._run_error or session.config.stash.get(stop.RUN_ERROR, "")
        unfinished = sum(1 for n in self._collected if n not in self._results or self._results[n].outcome is None)
        return stop.run_stop(session, exitstatus, self._interrupt, run_error, unfinished, len(self._collected))

    def claimed_profiles(self) -> tuple[profiles.Profile, ...]:
        """The claimed profiles, less a default one every test of which the implementation withdrew.

        Why: such a profile could only be not-run, which fails the gate, yet nothing was wrong: the implementation
        does not serve that API at all (an LWS install without DisaggregatedSet, `lwsconf.disaggserved`). As a
        backend's unobservable default profiles are (`fixtures.selection.observable_profiles`), it is dropped
        unless the user named it; its tests stay in the report as NOT_SUPPORTED with the reason."""
        if self.context.profiles_named:
            return self.context.profiles

        def withdrawn_whole(profile: profiles.Profile) -> bool:
            mine = [r.meta for r in self._results.values() if profile.name in r.meta.profiles]
            names = {f.value for f in profile.features}
            return bool(mine) and all(m.verdict is Outcome.NOT_SUPPORTED and names.intersection(m.withdrawn)
                                      for m in mine)
        return tuple(p for p in self.context.profiles if not withdrawn_whole(p))

    def supported(self) -> frozenset[str]:
        """The claimed features, less those the implementation withdrew once installed (no test of a
        withdrawn feature ran, so the report must not list it as supported)."""
        withdrawn = {f for res in self._results.values() for f in res.meta.withdrawn}
        return self.context.supported - withdrawn

    @pytest.hookimpl(trylast=True)  # after junitxml has written junit.xml
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.gathering or stop.writes_no_report(session.config, exitstatus, ran=bool(self._results)):
            return
        self.report = self.build(self.run_end(session, exitstatus))
        if self.run_dir is not None:
            write_run(self.run_dir, self.report)
        if self.report_output is not None:
            yaml_writer.write(self.report, self.report_output)
        self.gate_reasons = build.gate(self.report, on_skips=self.gate_on_skips)
        if self.gate_reasons and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.report is None:
            return
        tr = terminalreporter
        tr.write_sep("-", "lwsconf conformance report")
        for line in summary_md.notices(self.report):
            tr.write_line(line)
        for p in self.report.profiles:
            s = p.statistics
            unfinished = f", {s.interrupted} did not finish" if s.interrupted else ""
            unfinished += f", {s.known_divergences} known divergence(s)" if s.known_divergences else ""
            tr.write_line(f"{p.name}: {p.result.value} ({s.passed} passed, {s.failed} failed, {s.skipped} skipped, "
                          f"{s.not_supported} not supported{unfinished})")
        for feature in sorted(self.context.supported - self.supported()):
            tr.write_line(f"{feature}: claimed, but the implementation cannot support it on this cluster "
                          "(its tests are NOT_SUPPORTED; see their reason)")
        for reason in self.gate_reasons:
            tr.write_line(f"gate: {reason}")
        for t in self.report.tests:
            for problem in t.problems:
                tr.write_line(f"report problem: {t.short_name}: {problem}")
        measured = summary_md.figures(self.report)
        if measured:
            tr.write_line("Figures (what the tests measured):")
            for t, name, value in measured:
                tr.write_line(f"  {t.name}: {name} = {value}")
        if self.run_dir is not None:
            tr.write_line(f"reports: {self.run_dir / html.FILENAME} (also {summary_md.FILENAME}, "
                          f"{yaml_writer.FILENAME}, junit.xml)")
        if self.report_output is not None:
            tr.write_line(f"report output: {self.report_output}")


def read_timelines(run_dir: Path, artifacts: Sequence[str]) -> tuple[list[timeline_model.Timeline], list[str]]:
    """The timelines among a test's artifacts, and one problem line for each that cannot be read."""
    found, problems = [], []
    for rel in artifacts:
        if rel.rsplit("/", 1)[-1] == timeline_model.FILENAME:
            try:
                found.append(timeline_model.load(run_dir / rel))
            except ValueError as exc:
                problems.append(f"timeline not shown: {exc}")
    return found, problems


def load_timelines(run_dir: Path, report: schema.Report) -> dict[str, timeline_model.Timeline]:
    """Timelines by node id, from each test's `artifacts/<test>/timeline.json`. One that cannot be read is
    not drawn; `Collector` has already put why into the test's `problems`, which every writer shows."""
    out = {}
    for t in report.tests:
        found, _ = read_timelines(run_dir, t.artifacts)
        if found:
            out[t.node_id] = found[0]
    return out


def write_run(run_dir: Path, report: schema.Report) -> list[Path]:
    """Write every report file of a run directory (and annotate its junit.xml if present)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    written = [yaml_writer.write(report, run_dir / yaml_writer.FILENAME)]
    (run_dir / summary_md.FILENAME).write_text(summary_md.render(report))
    page = html.render(report, timelines=load_timelines(run_dir, report))
    (run_dir / html.FILENAME).write_text(page)
    written += [run_dir / summary_md.FILENAME, run_dir / html.FILENAME]
    if junit.annotate_file(run_dir / "junit.xml", report):
        written.append(run_dir / "junit.xml")
    return written
