"""Which suite ran: the commit its files came from, so a CI gate can pin a suite and compare runs.

A report already names the lwsconf version; two builds of one version can carry different tests, so the
report also records the suite's commit. A wheel's copy of the suite has it in `lwsconf/_suite/SUITE_COMMIT`
(written by setup.py at build time); a source checkout asks git. "-dirty" marks a checkout whose tracked
files differ from the commit. Unknown (no git, no file) is "", never a guess.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from lwsconf import project_files

COMMIT_FILE = "SUITE_COMMIT"
GIT_TIMEOUT = 20.0
"""Seconds a `git` query may take before the commit is reported unknown."""


@functools.cache
def suite_commit(package_dir: str | None = None) -> str:
    """The suite's commit (40 hex digits, maybe with "-dirty"), or "" when it cannot be known."""
    checkout, installed = project_files.roots(Path(package_dir) if package_dir else None)
    recorded = installed / COMMIT_FILE
    if recorded.is_file():
        return recorded.read_text().strip()
    if not (checkout / "conformance").is_dir():
        return ""
    try:
        head = _git(checkout, "rev-parse", "HEAD")
        dirty = _git(checkout, "status", "--porcelain", "--untracked-files=no", "--", "conformance", "fixtures",
                     "lwsconf")
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("-dirty" if dirty else "")


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                          timeout=GIT_TIMEOUT, check=True).stdout.strip()
