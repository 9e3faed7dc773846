"""Which upstream LeaderWorkerSet releases are pinned, and what an `upstream-local:` value names.

A pinned release has its own Go module under `upstream/lws-<minor>/` in the source checkout: go.mod and
go.sum only, requiring sigs.k8s.io/lws at that release and listing its manager (`sigs.k8s.io/lws/cmd`)
as a `tool` package, so the checksum of every module it is built from is ours to review. A release the Go
module proxy refuses (v0.10.0: 403 on its zip) and upstream's main branch come as source snapshots instead:
unmodified `lws-<version>.tar.gz` archives of upstream's tree (the project keeps them in
`../shared/data/upstream-lws-source/`, or $LWSCONF_UPSTREAM_SNAPSHOTS), pinned here by their SHA-256 and the
upstream commit they were taken at; built with upstream's own go.mod and go.sum. A value that is a path
names a local LWS checkout instead (an LWS contributor's working tree, built where it is).

Versions are ordered (`order_key`): releases by number, a snapshot of main after the release it follows,
so a known divergence can say "from v0.9.0 until fixed in v0.10.0" and apply to every version between.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lwsconf import project_files

MODULE = "sigs.k8s.io/lws"
MAIN_PACKAGE = "sigs.k8s.io/lws/cmd"
SOURCE_ENV = "LWSCONF_UPSTREAM_SRC"
"""Overrides where the `upstream/` folder of Go modules is (default: beside the lwsconf package)."""
_TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class Release:
    """A pinned upstream release and the folder of our Go module that builds it."""

    version: str
    module_dir: str


@dataclass(frozen=True)
class Unpinned:
    """A release tag no Go module of ours pins (`source.check_unpinned` says why it cannot be built)."""

    version: str


@dataclass(frozen=True)
class Checkout:
    """A local directory holding an LWS source tree (module sigs.k8s.io/lws)."""

    path: Path


@dataclass(frozen=True)
class Snapshot:
    """An unmodified archive of upstream's source at one commit, pinned by its SHA-256."""

    version: str
    """What reports call it: the release tag (v0.10.0), or main-<short commit> for upstream's main branch."""
    archive: str
    """The archive's file name in the snapshot folder; its one top folder is the LWS source tree."""
    sha256: str
    commit: str
    """The upstream commit the archive was taken at (the archive holds no .git to ask)."""
    follows: str
    """The newest release this source contains (itself for a release): where it sits in version order."""
    aliases: tuple[str, ...] = ()
    """Other names an `upstream-local:` value may use (`main`)."""


Source = Release | Unpinned | Checkout | Snapshot

RELEASES = (Release("v0.9.0", "lws-0.9"),)
DEFAULT = RELEASES[0]
"""v0.9.0: the newest release whose module zip the Go module proxy serves (it refuses v0.10.0's), so the
default builds on any machine with Go; the newer ones need the snapshots."""
SNAPSHOTS = (
    Snapshot("v0.10.0", "lws-v0.10.0.tar.gz",
             "0feece3065fe1d3b89bab35a338cea371100d62dc772812a5a8eb3694123331f", "2161f38", follows="v0.10.0"),
    Snapshot("main-060ab4d", "lws-main-060ab4d.tar.gz",
             "29d5b1f8d3d07283ad69f97f1ed46779707b07a13259141a8c4e1b8cbdf68cf8", "060ab4d", follows="v0.10.0",
             aliases=("main",)),
)
SNAPSHOTS_ENV = "LWSCONF_UPSTREAM_SNAPSHOTS"
"""Overrides the folder holding the snapshot archives (default: ../shared/data/upstream-lws-source beside the
checkout)."""


class BadSource(ValueError):
    """An `upstream-local:` value that names neither a release tag nor an LWS checkout."""


def looks_like_path(text: str) -> bool:
    """Whether `text` names a checkout rather than a version (no file is read: `parse` checks the checkout)."""
    return text.startswith(("/", ".", "~")) or os.sep in text


def parse(text: str | None) -> Source:
    """The release, unpinned tag or checkout that `text` names (None or empty: the default release)."""
    value = (text or "").strip()
    if not value:
        return DEFAULT
    if looks_like_path(value):
        return _checkout(Path(value).expanduser())
    for snapshot in SNAPSHOTS:
        if value in (snapshot.version, *snapshot.aliases):
            return snapshot
    match = _TAG.match(value)
    if match is None:
        raise BadSource(f"upstream-local:{value}: want a release tag such as {DEFAULT.version} or the path of "
                        f"an LWS checkout (a directory whose go.mod says `module {MODULE}`)")
    major, minor, patch = match.groups()
    for snapshot in SNAPSHOTS:
        if snapshot.version == f"v{major}.{minor}.{patch or 0}":
            return snapshot
    for release in RELEASES:
        if release.version == f"v{major}.{minor}.{patch or 0}" or (patch is None and
                                                                   release.version.startswith(f"v{major}.{minor}.")):
            return release
    return Unpinned(f"v{major}.{minor}.{patch or 0}")


def _checkout(path: Path) -> Checkout:
    gomod = path / "go.mod"
    try:
        first = next((line for line in gomod.read_text().splitlines() if line.startswith("module ")), "")
    except OSError as exc:
        raise BadSource(f"upstream-local:{path}: no readable go.mod there ({exc.strerror}); give the root "
                        f"directory of an LWS checkout (git clone https://github.com/kubernetes-sigs/lws)") from None
    if first.split()[1:] != [MODULE]:
        raise BadSource(f"upstream-local:{path}: its go.mod declares {first or 'no module'!r}, not "
                        f"`module {MODULE}`; give the root directory of an LWS checkout")
    return Checkout(path.resolve())


def describe(source: Source) -> str:
    """How reports and errors name the source."""
    if isinstance(source, Checkout):
        return f"checkout {source.path}"
    if isinstance(source, Snapshot):
        return f"{source.version} (source snapshot at {source.commit})"
    return source.version


def order_key(version: str) -> tuple[int, int, int, int] | None:
    """Where `version` (a report's version string) sits among upstream versions: releases by number, a pinned
    snapshot of main just after the release it follows; None for what cannot be placed (a checkout)."""
    for snapshot in SNAPSHOTS:
        if version == snapshot.version and snapshot.follows != snapshot.version:
            base = order_key(snapshot.follows)
            return None if base is None else (*base[:3], 1)
    match = _TAG.match(version)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0), 0


def known_versions() -> tuple[str, ...]:
    """Every version this harness can build, oldest first."""
    names = [r.version for r in RELEASES] + [s.version for s in SNAPSHOTS]
    return tuple(sorted(names, key=lambda v: order_key(v) or (0, 0, 0, 0)))


def previous(version: str) -> str | None:
    """The known version just before `version` (an upgrade test starts there), or None: the oldest, or one that
    cannot be placed (a checkout)."""
    known = known_versions()
    if version not in known:
        return None
    at = known.index(version)
    return known[at - 1] if at > 0 else None


def snapshot_dir() -> Path:
    """The folder of snapshot archives: $LWSCONF_UPSTREAM_SNAPSHOTS, else ../shared/data/upstream-lws-source
    beside the checkout."""
    override = os.environ.get(SNAPSHOTS_ENV)
    if override:
        return Path(override)
    return project_files.roots()[0].parent / "shared" / "data" / "upstream-lws-source"


def source_root() -> Path:
    """The `upstream/` folder of Go modules: $LWSCONF_UPSTREAM_SRC, else the checkout's (or an installed
    wheel's copy)."""
    override = os.environ.get(SOURCE_ENV)
    if override:
        return Path(override)
    return project_files.project_dir("upstream")
