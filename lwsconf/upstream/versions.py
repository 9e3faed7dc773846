"""Which upstream LeaderWorkerSet releases are pinned, and what an `upstream-local:` value names.

A pinned release has its own Go module under `upstream/lws-<minor>/` in the source checkout: go.mod and
go.sum only, requiring sigs.k8s.io/lws at that release and listing its manager (`sigs.k8s.io/lws/cmd`)
as a `tool` package, so the checksum of every module it is built from is ours to review. A value that
is a path names a local LWS checkout instead (an LWS contributor's working tree, built where it is).
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


Source = Release | Unpinned | Checkout

RELEASES = (Release("v0.9.0", "lws-0.9"),)
DEFAULT = RELEASES[0]
"""v0.9.0: the newest release whose module zip the Go module proxy serves (it refuses v0.10.0's)."""


class BadSource(ValueError):
    """An `upstream-local:` value that names neither a release tag nor an LWS checkout."""


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", ".", "~")) or os.sep in text


def parse(text: str | None) -> Source:
    """The release, unpinned tag or checkout that `text` names (None or empty: the default release)."""
    value = (text or "").strip()
    if not value:
        return DEFAULT
    if _looks_like_path(value):
        return _checkout(Path(value).expanduser())
    match = _TAG.match(value)
    if match is None:
        raise BadSource(f"upstream-local:{value}: want a release tag such as {DEFAULT.version} or the path of "
                        f"an LWS checkout (a directory whose go.mod says `module {MODULE}`)")
    major, minor, patch = match.groups()
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
    return source.version


def source_root() -> Path:
    """The `upstream/` folder of Go modules: $LWSCONF_UPSTREAM_SRC, else the checkout's (or an installed
    wheel's copy)."""
    override = os.environ.get(SOURCE_ENV)
    if override:
        return Path(override)
    return project_files.project_dir("upstream")
