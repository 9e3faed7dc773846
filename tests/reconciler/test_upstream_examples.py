"""Where the CRD tests find upstream's example manifests: the Go module cache, else shared/, else a skip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.reconciler import upstream_examples as ue

PROBE = """
import pytest
from tests.reconciler import upstream_examples as ue

def test_needs_examples(tmp_path):
    ue.require(ue.find(shared=tmp_path / "no-shared-beside-this-clone"))
"""


def lay_out(folder: Path, names: list[str]) -> None:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {name}\n")


def module_dir(cache: Path) -> Path:
    return cache / "sigs.k8s.io" / "lws@v0.10.0" / "docs" / "examples"


def test_the_go_module_cache_is_read_first(tmp_path: Path) -> None:
    lay_out(module_dir(tmp_path / "mod"), list(ue.EXAMPLES))
    lay_out(tmp_path / "shared", [n.replace("/", "_") for n in ue.EXAMPLES])
    found = ue.find(tmp_path / "mod", tmp_path / "shared")
    assert found is not None and found.where.startswith("Go module cache")
    assert found.files["vllm_GPU_lws.yaml"] == module_dir(tmp_path / "mod") / "vllm" / "GPU" / "lws.yaml"
    assert len(found.files) == 10


def test_shared_is_the_fallback_and_an_incomplete_module_is_not_used(tmp_path: Path) -> None:
    lay_out(module_dir(tmp_path / "mod"), list(ue.EXAMPLES)[:3])
    lay_out(tmp_path / "shared", [n.replace("/", "_") for n in ue.EXAMPLES])
    found = ue.find(tmp_path / "mod", tmp_path / "shared")
    assert found is not None and found.where.startswith("shared folder")
    assert found.files["sample_lws.yaml"] == tmp_path / "shared" / "sample_lws.yaml"


def test_gomodcache_from_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "cache"))
    assert ue.module_cache() == tmp_path / "cache"


@pytest.mark.parametrize(("require", "outcome"), [("", "skipped"), ("1", "failed")])
def test_missing_examples_skip_saying_where_they_were_looked_for_unless_ci_requires_them(
        tmp_path: Path, require: str, outcome: str) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GOMODCACHE": str(tmp_path / "empty-cache"),
           "PYTHONPATH": str(ue.ROOT), ue.REQUIRE_ENV: require}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs",
                           "test_probe.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert f"1 {outcome}" in out, out[-2000:]
    assert "upstream LWS examples not found" in out and "go mod download -json sigs.k8s.io/lws@v0.10.0" in out, out
