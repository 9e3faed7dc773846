"""With the real Go toolchain: the pinned release resolves to the checksum in our go.sum, and the built
manager says which version it is. Skipped without Go (CI sets LWSCONF_REQUIRE_GO=1, making that a failure)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from lwsconf.controlplane import build as gobuild
from lwsconf.upstream import build, source, versions


@pytest.fixture(scope="module")
def go() -> str:
    try:
        return gobuild.find_go(**build.NO_GO)[0]
    except gobuild.GoMissing as exc:
        if os.environ.get("LWSCONF_REQUIRE_GO"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def test_the_pinned_release_is_the_module_go_sum_names(go: str) -> None:
    facts = source.release_facts(versions.DEFAULT, go)
    go_sum = (versions.source_root() / versions.DEFAULT.module_dir / "go.sum").read_text()
    assert f"sigs.k8s.io/lws {versions.DEFAULT.version} {facts.checksum}\n" in go_sum
    assert (facts.dir / "config" / "crd" / "bases" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml").is_file()
    assert facts.commit is not None and len(facts.commit) == 40


def test_the_built_manager_reports_its_version_and_commit(go: str) -> None:
    facts = source.release_facts(versions.DEFAULT, go)
    binary = build.lws_dir(facts) / "bin" / "manager"
    if not binary.is_file() and shutil.which("go"):
        pytest.skip(f"no manager built at {binary}: run `lwsconf upstream build`")
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert f"Version: {versions.DEFAULT.version}\n" in out
    assert f"Git Commit: {facts.commit}\n" in out
