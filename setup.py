"""Build hook: the wheel carries the conformance suite beside the `lwsconf` package.

The suite (`conformance/`), its pytest plugin (`fixtures/`), the root `conftest.py` and the folders they
read at run time (`manifests/`, and the Go module pins in `controlplane/`, `nodes/` and `upstream/`) stay at the top of
the source tree for contributors, where `make conformance` runs them. An implementation's CI installs a
wheel instead of cloning this repository, so `build_py` copies the same files into
`lwsconf/_suite/` of the build (no second copy in git) and records the commit they came from in
`lwsconf/_suite/SUITE_COMMIT`; `lwsconf run` finds them there (`lwsconf.suite_run.suite_root`).
`_suite` is deliberately not a Python package: pytest puts it on `sys.path` as the suite's rootdir, so
the suite imports `conformance` and `fixtures` as it does in a checkout, without installing top-level
packages of those common names into site-packages (PyPI has a `fixtures` distribution).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
SUITE_TREES = ("conformance", "fixtures", "manifests", "controlplane", "nodes", "upstream")
"""The suite, its plugin, and the folders it reads at run time (lwsconf.project_files.SHIPPED)."""
SUITE_FILES = ("conftest.py",)


def _commit() -> str:
    """The checkout's commit (with "-dirty" when files differ from it), or "" outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return (HERE / "SUITE_COMMIT").read_text().strip() if (HERE / "SUITE_COMMIT").is_file() else ""
    return head + ("-dirty" if dirty else "")


class BuildPyWithSuite(build_py):  # type: ignore[misc]  # setuptools ships no types here
    """`build_py` plus the suite files under `lwsconf/_suite/` (skipped for editable installs, which run
    the checkout's own files)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lwsconf" / "_suite"
        if target.exists():
            shutil.rmtree(target)
        for tree in SUITE_TREES:
            shutil.copytree(HERE / tree, target / tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for name in SUITE_FILES:
            shutil.copy2(HERE / name, target / name)
        (target / "SUITE_COMMIT").write_text(_commit() + "\n")


class SdistWithCommit(sdist):  # type: ignore[misc]
    """`sdist` plus a `SUITE_COMMIT` file, so a wheel built from the sdist (no git there) still knows it."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        (Path(base_dir) / "SUITE_COMMIT").write_text(_commit() + "\n")


setup(cmdclass={"build_py": BuildPyWithSuite, "sdist": SdistWithCommit})
