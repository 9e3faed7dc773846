"""Conformance reports: the typed report (`schema`), how results are decided (`build`), and its writers.

`schema.Report` is the published document (conformance-report.yaml). `build` folds test results
into profile verdicts and the CI gate. The writers (`yaml_writer`, `junit`, `summary_md`, `html`,
`compare`, and `timeline.svg` for pictures) only render a Report. `collect` is the pytest plugin
part that gathers results during a run, and reads each test's `timeline.json` through
`lwsconf.timeline.model` (the format the recorder writes); one it cannot read becomes a `problems`
entry of that test, shown by every writer and in the terminal summary. `stop` says how the session
ended (completed, interrupted and why, or failed as a whole), so that no report passes off a partial
or empty run as a result. `cli` is `lwsconf report show|compare`. This package never imports the
simulator, the reconciler, the waits or any backend: it reads pytest reports and files.
"""

__all__ = ["build", "cli", "collect", "compare", "html", "junit", "schema", "stop", "summary_md", "timeline",
           "yaml_writer"]
