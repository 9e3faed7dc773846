"""The composite GitHub Action (action.yml) run step by step in a fake GitHub environment (issue 18, part 3).

GitHub is not here, so the test plays the runner: it reads action.yml, evaluates the few expressions the
steps use (`inputs.*`, `github.action_path`, `always()`, `startsWith`), skips the `uses:` steps (setup-python,
setup-go, upload-artifact: GitHub's own actions, recorded) and runs every `run:` step with bash, with
`GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` files, in an empty working directory, with `python` on PATH being a
new venv (its dependencies come from this venv through a `.pth` line, so the install step builds lwsconf
from this checkout without an index beyond pip's build isolation). The suite runs on the embedded sim.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.source_copy import copy_source_tree

REPO = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
STEP_TIMEOUT = 900.0
"""Seconds for one step: the install builds a wheel; the run starts the sim and runs one test."""
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expression: str, inputs: dict[str, str], action_path: Path = REPO) -> Any:
    """The expressions action.yml uses, and no others (an unknown one fails the test, naming it)."""
    text = expression.strip()
    if text == "always()":
        return True
    if text == "github.action_path":
        return str(action_path)
    if " || " in text:
        return any(evaluate(part, inputs, action_path) for part in text.split(" || "))
    if (match := re.fullmatch(r"inputs\.([\w-]+) == '([^']*)'", text)) is not None:
        return inputs[match[1]] == match[2]
    if (match := re.fullmatch(r"startsWith\(inputs\.([\w-]+), '([^']*)'\)", text)) is not None:
        return inputs[match[1]].startswith(match[2])
    if re.fullmatch(r"inputs\.[\w-]+", text):
        return inputs[text.removeprefix("inputs.")]
    raise AssertionError(f"the fake runner does not know the expression {expression!r}: teach it or simplify")


def substitute(value: str, inputs: dict[str, str], action_path: Path = REPO) -> str:
    return EXPRESSION.sub(lambda m: str(evaluate(m[1], inputs, action_path)), value)


def test_no_run_script_expands_an_expression() -> None:
    """Inputs reach scripts through env only: `${{ inputs.args }}` inside a script would be shell injection."""
    scripts = [s["run"] for s in ACTION["runs"]["steps"] if "run" in s]
    assert scripts and not [s for s in scripts if "${{" in s]
    assert all(s.get("shell") == "bash" for s in ACTION["runs"]["steps"] if "run" in s)


def test_every_input_has_a_description_and_the_outputs_name_real_steps() -> None:
    assert all(spec.get("description") for spec in ACTION["inputs"].values())
    ids = {s.get("id") for s in ACTION["runs"]["steps"]}
    for name, spec in ACTION["outputs"].items():
        step = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", spec["value"])
        assert step is not None and step[1] in ids, name


@pytest.fixture(scope="module")
def runner_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with pip, whose dependencies resolve to this venv's (not its editable lwsconf)."""
    venv = tmp_path_factory.mktemp("runner") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=STEP_TIMEOUT)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "lwsconf-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def run_action(inputs: dict[str, str], work: Path, bin_dir: Path) -> dict[str, Any]:
    """Run action.yml's steps as GitHub would; return the outputs, the summary, the skipped `uses:` steps and the
    exit status of the last step (the gate). The action's folder is a private copy of the checkout, as a runner's
    checkout of the action is: its install builds a wheel there (see tests/source_copy)."""
    action_path = copy_source_tree(Path(tempfile.mkdtemp(prefix="action-", dir=work.parent)))
    values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()} | inputs
    output, summary = work / "github_output", work / "step_summary"
    output.touch()
    summary.touch()
    skipped, code = [], 0
    for step in ACTION["runs"]["steps"]:
        if "if" in step and not evaluate(step["if"], values, action_path):
            continue
        if "uses" in step:
            skipped.append(step["uses"])
            continue
        env = {k: substitute(str(v), values, action_path) for k, v in (step.get("env") or {}).items()}
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, capture_output=True, text=True,
                              timeout=STEP_TIMEOUT,
                              env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                                   "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), **env})
        code = done.returncode
        assert code == 0 or step is ACTION["runs"]["steps"][-1], \
            f"step {step.get('name')} exited {code}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return {"outputs": outputs, "summary": summary.read_text(), "skipped": skipped, "gate": code}


@pytest.mark.slow
def test_the_action_installs_runs_reports_and_gates_on_the_sim(runner_python: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    result = run_action({"implementation": "reference", "cluster": "sim", "profiles": "LWS-CORE",
                         "args": "--run-test=ObjectNamesAndOrdinals -n 0"}, work, runner_python)
    assert result["skipped"] == ["actions/setup-python@v5", "actions/upload-artifact@v4"]  # no Go for sim
    assert result["outputs"] == {"exit-code": "0", "report": "reports/latest/conformance-report.yaml"}
    assert "LWS conformance" in result["summary"] and "ObjectNamesAndOrdinals" in result["summary"]
    assert result["gate"] == 0
    report = yaml.safe_load((work / result["outputs"]["report"]).read_text())
    assert {t["shortName"]: t["result"] for t in report["tests"]}["ObjectNamesAndOrdinals"] == "SUCCEEDED"
    # the baseline gate: against itself no regression; against a baseline where a now-skipped test passed,
    # still none (a skip is not a regression); a usage error in args fails the gate (no report)
    baseline = work / "baseline.yaml"
    baseline.write_text((work / result["outputs"]["report"]).read_text())
    again = run_action({"implementation": "reference", "cluster": "sim", "profiles": "LWS-CORE",
                        "args": "--run-test=ObjectNamesAndOrdinals -n 0", "baseline": str(baseline)},
                       work, runner_python)
    assert again["gate"] == 0


@pytest.mark.slow
def test_a_run_that_writes_no_report_fails_the_gate_and_says_so(runner_python: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    result = run_action({"implementation": "reference", "cluster": "nowhere", "profiles": "LWS-CORE"},
                        work, runner_python)
    assert result["outputs"]["exit-code"] == "4"  # pytest's usage error: --cluster=nowhere
    assert "lwsconf wrote no report" in result["summary"]
    assert result["gate"] == 2
