"""The suite as an implementation's CI gets it: a wheel, installed outside any checkout (issue 18, part 1).

`setup.py` copies `conformance/`, `fixtures/` and the root `conftest.py` into `lwsconf/_suite/` of the
wheel and records the commit; `lwsconf run` finds them there. The end-to-end test builds the wheel with
pip, installs it into a new venv in a temporary directory (dependencies come from this venv through a
`.pth` line, so the test needs no index beyond pip's build isolation) and runs one conformance test from an
empty directory against the embedded sim.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from lwsconf import suite_identity, suite_run
from tests.source_copy import copy_source_tree

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 600.0
"""Seconds for `pip wheel` (its isolated build environment fetches setuptools on a cold cache)."""
RUN_TIMEOUT = 600.0
"""Seconds for one conformance test on the sim from the installed wheel, start-up included."""


def test_a_wheel_install_is_found_in_its_suite_folder(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "lwsconf"
    (package / "_suite" / "conformance").mkdir(parents=True)
    (package / "_suite" / "fixtures").mkdir()
    (package / "_suite" / "conformance" / "conftest.py").write_text("")
    (package / "_suite" / "fixtures" / "plugin.py").write_text("")
    (package / "__init__.py").write_text("")
    root = suite_run.suite_root(str(package / "__init__.py"))
    assert root == (package / "_suite").resolve()
    assert suite_run.is_installed_suite(root) and not suite_run.is_installed_suite(REPO)
    argv = suite_run.pytest_command(root, ["-n", "0"], python="py")
    assert argv[:8] == ["py", "-m", "pytest", str(root / "conformance"), "--rootdir", str(root),
                        "-p", "no:cacheprovider"]  # never write .pytest_cache into site-packages


def test_the_suite_commit_comes_from_the_wheel_file_or_git(tmp_path: Path) -> None:
    package = tmp_path / "lwsconf"
    (package / "_suite").mkdir(parents=True)
    (package / "_suite" / suite_identity.COMMIT_FILE).write_text("abc123\n")
    assert suite_identity.suite_commit(str(package)) == "abc123"
    assert suite_identity.suite_commit(str(tmp_path / "elsewhere" / "lwsconf")) == ""  # no checkout, no file
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert suite_identity.suite_commit(str(REPO / "lwsconf")).removesuffix("-dirty") == head


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = copy_source_tree(tmp_path_factory.mktemp("source"))  # never build in the checkout: see tests/source_copy
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert built.returncode == 0, f"pip wheel failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    (found,) = out.glob("lwsconf-*.whl")
    return found


def test_the_wheel_carries_the_suite_and_its_commit(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in ("conftest.py", "conformance/conftest.py", "conformance/harness.py", "fixtures/plugin.py",
                 "fixtures/backends/__init__.py", "SUITE_COMMIT", "manifests/crd/leaderworkersets.yaml",
                 "manifests/deviceplugin/daemonset.yaml", "controlplane/k8s-1.37/go.sum", "upstream/lws-0.9/go.mod"):
        assert f"lwsconf/_suite/{path}" in names, sorted(n for n in names if "_suite" in n)[:20]
    assert not [n for n in names if "__pycache__" in n or n.startswith(("conformance/", "fixtures/"))]
    commit = zipfile.ZipFile(wheel).read("lwsconf/_suite/SUITE_COMMIT").decode().strip()
    assert len(commit.removesuffix("-dirty")) == 40, commit


@pytest.mark.slow
def test_the_installed_wheel_runs_the_suite_from_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    """Without PYTHONPATH: pointing at a checkout, it made pip find lwsconf "already installed" there (the wheel
    build leaves lwsconf.egg-info in the checkout), skip the install and leave no `lwsconf` script (seen in a soak
    run with PYTHONPATH=<worktree>); and the run would import the checkout instead of the installed wheel."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    venv, work = tmp_path / "venv", tmp_path / "empty"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                                str(wheel)], capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=clean)
    assert installed.returncode == 0, installed.stderr[-3000:]
    # the dependencies, not lwsconf itself: this venv's editable lwsconf is a finder hook a .pth line skips
    (purelib / "lwsconf-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work.mkdir()
    run = subprocess.run([str(venv / "bin" / "lwsconf"), "run", "--profiles=LWS-CORE",
                          "--run-test=ObjectNamesAndOrdinals", "-n", "0"],
                         cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=clean)
    assert run.returncode == 0, f"{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
    suite = purelib / "lwsconf" / "_suite"
    report = yaml.safe_load((work / "reports" / "latest" / "conformance-report.yaml").read_text())
    results = {t["shortName"]: t["result"] for t in report["tests"]}
    assert results["ObjectNamesAndOrdinals"] == "SUCCEEDED", results
    assert not [name for name, result in results.items() if result not in ("SUCCEEDED", "SKIPPED")], results
    assert report["suiteCommit"] == (suite / "SUITE_COMMIT").read_text().strip()
    assert not (suite / ".pytest_cache").exists()

    # the same suite under plain pytest, as a gate that drives pytest itself would run it
    pyargs = subprocess.run([str(python), "-m", "pytest", "-p", "lwsconf.pytest_plugin", "-p", "no:cacheprovider",
                             "--pyargs", "lwsconf._suite.conformance", "--profiles=LWS-CORE",
                             "--run-test=ObjectNamesAndOrdinals", "-n", "0",
                             "--lwsconf-reports", "pyargs-reports"],
                            cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=clean)
    assert pyargs.returncode == 0, f"{pyargs.stdout[-4000:]}\n{pyargs.stderr[-3000:]}"
    report = yaml.safe_load((work / "pyargs-reports" / "latest" / "conformance-report.yaml").read_text())
    results = {t["shortName"]: t["result"] for t in report["tests"]}
    assert results["ObjectNamesAndOrdinals"] == "SUCCEEDED", results
    assert not (suite / ".pytest_cache").exists()


def test_the_pytest_plugin_says_what_to_do_without_a_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite_run, "suite_root", lambda: None)
    monkeypatch.delitem(sys.modules, "lwsconf.pytest_plugin", raising=False)
    with pytest.raises(ImportError, match="carries no conformance suite.*reinstall lwsconf from a wheel"):
        importlib.import_module("lwsconf.pytest_plugin")
