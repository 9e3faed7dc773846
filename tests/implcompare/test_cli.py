"""`lwsconf diff-impls` mistakes a user can fix: one line, exit 2, never a traceback (no cluster is started)."""

from __future__ import annotations

import pytest

from lwsconf import cli
from lwsconf.implcompare import cli as implcompare_cli


def test_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff-impls", "--scenarios", "basic,nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown scenario(s) nope; known: basic," in err and len(err.strip().splitlines()) == 1


def test_unknown_implementation(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff-impls", "--a", "installed", "--b", "reference"]) == 2
    assert "unknown implementation 'installed'; use one of reference, reference-process" in capsys.readouterr().err


def test_upstream_without_go_says_what_to_do(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(implcompare_cli.shutil, "which", lambda name: None)
    assert cli.main(["diff-impls", "--b", "upstream-local:v0.9.0"]) == 2
    err = capsys.readouterr().err
    assert "Go, which is not on PATH: install Go 1.26" in err and len(err.strip().splitlines()) == 1


def test_local_without_go_says_what_to_do(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(implcompare_cli.shutil, "which", lambda name: None)
    assert cli.main(["diff-impls", "--cluster", "local", "--a", "reference", "--b", "reference-process"]) == 2
    assert "--cluster=local: the real control plane is built with Go" in capsys.readouterr().err
