"""A private copy of this checkout's source, for tests that build lwsconf's wheel from it.

setuptools builds inside the source tree (`build/`, `lwsconf.egg-info/`), so two builds of one tree at the same
time collide: CI once failed with `[Errno 17] File exists: 'build/bdist.linux-x86_64/wheel/lwsconf-0.1.0.dist-info'`
when xdist ran the GitHub Action's install and the wheel test side by side. The egg-info a build leaves behind also
made pip take lwsconf for installed wherever PYTHONPATH pointed at the checkout. A copy per build shares neither.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lwsconf import suite_identity

REPO = Path(__file__).resolve().parents[1]
GIT_TIMEOUT = 60.0
"""Seconds for `git ls-files` to list the checkout."""


def copy_source_tree(dest: Path) -> Path:
    """Copy the files git would ship (tracked, plus untracked ones not ignored, as they are in the working tree) to
    `dest`, and record the checkout's commit in `SUITE_COMMIT` there, which setup.py reads where there is no git."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True, timeout=GIT_TIMEOUT).stdout.decode()
    copied = 0
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
            copied += 1
    assert copied and (dest / "setup.py").is_file(), f"git ls-files listed no source under {REPO}"
    (dest / suite_identity.COMMIT_FILE).write_text(suite_identity.suite_commit(str(REPO / "lwsconf")) + "\n")
    return dest
