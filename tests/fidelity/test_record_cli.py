"""`lwsconf fidelity record`: usage errors, and --convert-only turning raw recordings into the held-out files
(with the header saying which command made them from what), which `heldout.load` then reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwsconf.fidelity import heldout, record
from tests.fidelity.test_convert import recording


def test_unknown_sources_and_versions_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert record.main(["--sources", "suite,cron"]) == 2
    assert "unknown source(s) cron; choose from suite, kubectl, python" in capsys.readouterr().err
    assert record.main(["--kubernetes-version", "0.1"]) == 2


def test_convert_only_writes_generated_files_the_replay_reads(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    raw, out = tmp_path / "raw", tmp_path / "heldout"
    raw.mkdir()
    (raw / "kubectl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recording()))
    assert record.main(["--convert-only", "--recordings", str(raw), "--out", str(out), "--sources", "kubectl"]) == 0
    document = json.loads((out / "kubectl.json").read_text())
    header = document["generated"]
    assert header["command"] == (f"lwsconf fidelity record --out {out} --sources kubectl --convert-only "
                                 "(from the recordings an earlier record made)")
    assert header["recording"].startswith("kubectl.jsonl, 21 interactions from 2026-12-07T10:00:00Z")
    assert "never edit by hand" in header["note"]
    held = heldout.load(out)
    assert [s.name for s in held.scenarios] == ["kubectl-001-gw0-1-test-labels-3f2a"]
    assert len(held.scenarios[0].steps) == document["steps"] - len(held.prelude) == 13
    assert "steps in 1 scenarios" in capsys.readouterr().out


def test_an_empty_recording_fails(tmp_path: Path) -> None:
    (tmp_path / "python.jsonl").write_text("")
    assert record.main(["--convert-only", "--recordings", str(tmp_path), "--out", str(tmp_path / "o"),
                        "--sources", "python"]) == 1
