"""What `--lws-impl=upstream-local:...` may name: a pinned release, a pinned source snapshot, an unpinned tag, a
checkout; and the order versions are placed in."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwsconf.upstream import versions


@pytest.mark.parametrize("text", [None, "", "v0.9.0", "0.9.0", "v0.9", "0.9"])
def test_the_pinned_release_by_any_spelling(text: str | None) -> None:
    assert versions.parse(text) == versions.Release("v0.9.0", "lws-0.9")


def test_the_default_is_the_newest_release_the_proxy_serves() -> None:
    assert versions.DEFAULT.version == "v0.9.0"


@pytest.mark.parametrize(("text", "version"), [("v0.10.0", "v0.10.0"), ("0.10", "v0.10.0"), ("main", "main-060ab4d"),
                                               ("main-060ab4d", "main-060ab4d")])
def test_the_source_snapshots_by_version_or_alias(text: str, version: str) -> None:
    found = versions.parse(text)
    assert isinstance(found, versions.Snapshot) and found.version == version


def test_versions_are_ordered_releases_by_number_and_main_after_the_release_it_follows() -> None:
    assert versions.known_versions() == ("v0.9.0", "v0.10.0", "main-060ab4d")
    keys = [versions.order_key(v) for v in ("v0.8.0", "v0.9.0", "v0.10.0", "main-060ab4d", "v0.11.0")]
    assert keys == sorted(keys)  # type: ignore[type-var]
    assert versions.order_key("checkout-abc") is None


@pytest.mark.parametrize(("text", "tag"), [("v0.11.0", "v0.11.0"), ("0.8", "v0.8.0"), ("v1.2.3", "v1.2.3")])
def test_other_tags_are_unpinned(text: str, tag: str) -> None:
    assert versions.parse(text) == versions.Unpinned(tag)


@pytest.mark.parametrize("text", ["latest", "v0.9.0-rc.1", "v0..1", "master"])
def test_a_value_that_is_neither_tag_nor_path_says_what_is_wanted(text: str) -> None:
    with pytest.raises(versions.BadSource, match="want a release tag such as v0.9.0 or the path of an LWS checkout"):
        versions.parse(text)


def test_a_checkout_is_a_directory_whose_go_mod_is_lws(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("// comment\nmodule sigs.k8s.io/lws\n\ngo 1.26.0\n")
    assert versions.parse(str(tmp_path)) == versions.Checkout(tmp_path.resolve())
    assert versions.describe(versions.Checkout(tmp_path)) == f"checkout {tmp_path}"


def test_a_directory_without_go_mod_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(versions.BadSource, match=r"no readable go.mod there \(No such file or directory\)"):
        versions.parse(str(tmp_path / "nowhere"))


def test_a_directory_of_another_module_is_refused(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module example.com/other\n")
    with pytest.raises(versions.BadSource, match="declares 'module example.com/other', not `module sigs.k8s.io/lws`"):
        versions.parse(str(tmp_path))


def test_every_pinned_release_has_its_go_module_with_the_manager_as_a_tool() -> None:
    for release in versions.RELEASES:
        module = versions.source_root() / release.module_dir
        gomod = (module / "go.mod").read_text()
        assert "\ntool sigs.k8s.io/lws/cmd\n" in gomod
        assert f"\tsigs.k8s.io/lws {release.version} " in gomod
        assert f"sigs.k8s.io/lws {release.version} h1:" in (module / "go.sum").read_text()
        assert sorted(p.name for p in module.iterdir()) == ["go.mod", "go.sum"]


def test_every_snapshot_is_pinned_by_a_sha256_and_a_commit() -> None:
    for snapshot in versions.SNAPSHOTS:
        assert len(snapshot.sha256) == 64 and int(snapshot.sha256, 16) >= 0
        assert len(snapshot.commit) >= 7 and snapshot.archive.endswith(".tar.gz")
        assert versions.order_key(snapshot.follows) is not None
