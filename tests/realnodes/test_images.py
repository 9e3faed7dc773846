"""lwsconf.realnodes.images: offline images are reproducible OCI layouts a runtime can read."""

from __future__ import annotations

import json
import tarfile
import threading
from pathlib import Path

from lwsconf.realnodes import images


def _spec(tmp_path: Path) -> images.ImageSpec:
    root = tmp_path / "rootfs"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "tool").write_text("#!/bin/sh\necho hi\n")
    (root / "usr" / "bin" / "tool").chmod(0o755)
    (root / "etc").mkdir()
    (root / "etc" / "hostname").write_text("x\n")
    (root / "bin").symlink_to("usr/bin")
    extra = tmp_path / "pause"
    extra.write_bytes(b"\x7fELF fake")
    return images.ImageSpec("registry.k8s.io/pause:3.10", rootfs=root, files={"/opt/lws/pause": extra},
                            entrypoint=("/opt/lws/pause",))


def test_the_same_files_give_the_same_digest_and_another_file_another(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    first = images.build(spec, tmp_path / "a.tar")
    second = images.build(spec, tmp_path / "b.tar")
    assert first.manifest_digest == second.manifest_digest
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    (tmp_path / "rootfs" / "etc" / "hostname").write_text("y\n")
    assert images.build(spec, tmp_path / "c.tar").manifest_digest != first.manifest_digest


def test_the_archive_is_an_oci_layout_naming_the_image(tmp_path: Path) -> None:
    built = images.build(_spec(tmp_path), tmp_path / "img.tar")
    with tarfile.open(built.archive) as tar:
        names = tar.getnames()
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        manifest_name = "blobs/sha256/" + built.manifest_digest.removeprefix("sha256:")
        manifest = json.loads(tar.extractfile(manifest_name).read())  # type: ignore[union-attr]
        layer = tar.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].removeprefix("sha256:"))
        assert layer is not None
        with tarfile.open(fileobj=layer) as inner:
            members = {m.name: m for m in inner.getmembers()}
    assert "oci-layout" in names
    entry = index["manifests"][0]
    assert entry["digest"] == built.manifest_digest
    assert entry["annotations"]["io.containerd.image.name"] == "registry.k8s.io/pause:3.10"
    assert sorted(members) == ["bin", "etc", "etc/hostname", "opt", "opt/lws", "opt/lws/pause", "usr", "usr/bin",
            "usr/bin/tool"]
    assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
    assert members["usr/bin/tool"].mode & 0o111 and members["opt/lws"].isdir()
    assert {(m.uid, m.gid, m.mtime) for m in members.values()} == {(0, 0, 0)}


def test_writers_of_the_same_archive_side_by_side_all_succeed(tmp_path: Path) -> None:
    """Clusters started by xdist workers at once build pause.tar together; with one shared temporary name the
    first writer's rename took the file from under the next (CI at 0004eeb: FileNotFoundError on the rename)."""
    spec = _spec(tmp_path)
    out = tmp_path / "cache" / "pause.tar"
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def write() -> None:
        start.wait()
        try:
            for _ in range(5):
                images.build(spec, out)
        except BaseException as error:  # collected: a thread's exception would otherwise vanish
            errors.append(error)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [p.name for p in out.parent.iterdir()] == ["pause.tar"]
    assert out.read_bytes() == images.build(spec, tmp_path / "again.tar").archive.read_bytes()


def test_cached_build_reuses_the_archive_of_the_same_stamp_and_rebuilds_on_another(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    out = tmp_path / "cache" / "img.tar"
    first = images.cached_build(spec, out, stamp="a")
    built_at = out.stat().st_mtime_ns
    assert images.cached_build(spec, out, stamp="a") == first and out.stat().st_mtime_ns == built_at
    (tmp_path / "rootfs" / "etc" / "hostname").write_text("y\n")
    assert images.cached_build(spec, out, stamp="b").manifest_digest != first.manifest_digest
