"""Source snapshots: an archive checked against its pinned SHA-256, unpacked once into the cache, built where it
was unpacked; an absent or altered archive is one line saying what to do."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from lwsconf.upstream import build, source, versions


def _archive(folder: Path, name: str = "lws-v9.9.9.tar.gz", top: str = "lws-v9.9.9",
             files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with tarfile.open(path, "w:gz") as tar:
        for rel, text in (files or {"go.mod": "module sigs.k8s.io/lws\n", "cmd/main.go": "package main\n"}).items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _pinned(archive: Path) -> versions.Snapshot:
    return versions.Snapshot("v0.10.0", archive.name, hashlib.sha256(archive.read_bytes()).hexdigest(), "abc1234",
                             follows="v0.10.0")


def test_a_snapshot_is_unpacked_once_and_records_its_commit_and_checksum(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "snapshots")
    snapshot = _pinned(archive)
    facts = source.snapshot_facts(snapshot, tmp_path / "snapshots", tmp_path / "cache")
    assert facts.dir == tmp_path / "cache" / "lws-src" / f"v0.10.0-{snapshot.sha256[:12]}"
    assert (facts.dir / "cmd" / "main.go").read_text() == "package main\n"
    assert facts.record() == {"module": "sigs.k8s.io/lws", "version": "v0.10.0", "files": str(facts.dir),
                              "how": "run out of cluster by lwsconf", "checksum": f"sha256:{snapshot.sha256}",
                              "commit": "abc1234"}
    (facts.dir / "marker").write_text("kept")
    again = source.snapshot_facts(snapshot, tmp_path / "snapshots", tmp_path / "cache")
    assert (again.dir / "marker").read_text() == "kept"  # not unpacked twice
    assert [p.name for p in (tmp_path / "cache" / "lws-src").iterdir()] == [facts.dir.name]  # no scratch left


def test_an_altered_archive_is_refused_naming_both_checksums(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "snapshots")
    snapshot = versions.Snapshot("v0.10.0", archive.name, "0" * 64, "abc1234", follows="v0.10.0")
    with pytest.raises(source.SourceError, match=r"has SHA-256 [0-9a-f]{64}, not the pinned 0{64}"):
        source.snapshot_facts(snapshot, tmp_path / "snapshots", tmp_path / "cache")
    assert not (tmp_path / "cache" / "lws-src" / f"v0.10.0-{'0' * 12}").exists()


def test_an_absent_archive_says_where_it_looked_and_what_to_set(tmp_path: Path) -> None:
    snapshot = versions.Snapshot("v0.10.0", "lws-v0.10.0.tar.gz", "0" * 64, "abc1234", follows="v0.10.0")
    with pytest.raises(source.SnapshotMissing, match=rf"lws-v0.10.0.tar.gz is not in {tmp_path}; .*set "
                                                     rf"{versions.SNAPSHOTS_ENV}"):
        source.snapshot_facts(snapshot, tmp_path, tmp_path / "cache")


def test_an_archive_without_one_lws_folder_is_refused(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "snapshots", files={"README": "no go.mod"})
    with pytest.raises(source.SourceError, match="does not hold one LWS source folder with a go.mod"):
        source.snapshot_facts(_pinned(archive), tmp_path / "snapshots", tmp_path / "cache")


def test_a_snapshot_is_built_in_its_tree_and_skipped_while_its_archive_is_unchanged(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "snapshots")
    snapshot = _pinned(archive)
    facts = source.snapshot_facts(snapshot, tmp_path / "snapshots", tmp_path / "cache")
    plan = build.plan(facts, go="go", go_version="go1.26.0", cache=tmp_path / "cache")
    assert plan.module == facts.dir
    assert plan.steps[0].argv[-1] == "./cmd"
    assert "-X sigs.k8s.io/lws/pkg/version.GitVersion=v0.10.0" in " ".join(plan.steps[0].argv)
    assert "-X sigs.k8s.io/lws/pkg/version.GitCommit=abc1234" in " ".join(plan.steps[0].argv)
    assert plan.stamp["snapshot"] == snapshot.sha256
    assert plan.bin_dir == tmp_path / "cache" / "lws" / "v0.10.0" / "bin"


def test_the_project_snapshots_match_their_pins_when_present() -> None:
    folder = versions.snapshot_dir()
    present = [s for s in versions.SNAPSHOTS if (folder / s.archive).is_file()]
    if not present:
        pytest.skip(f"no upstream source snapshot in {folder}")
    for snapshot in present:
        assert hashlib.sha256((folder / snapshot.archive).read_bytes()).hexdigest() == snapshot.sha256
