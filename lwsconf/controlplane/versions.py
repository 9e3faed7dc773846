"""Which Kubernetes releases the real control plane is built at, and where their Go modules are.

Each supported release has its own Go module under `controlplane/k8s-<minor>/` in the source checkout:
a go.mod that requires k8s.io/kubernetes at that release, maps every staging module to its published
v0.X.Y, and lists the components (and kubectl) as `tool` packages (so `go mod tidy` keeps them); etcd is the
go.etcd.io/etcd/server/v3 release that Kubernetes release itself requires, so both share one
dependency graph with no version forced up. One module per minor keeps the two graphs apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lwsconf import project_files

SOURCE_ENV = "LWSCONF_CONTROLPLANE_SRC"
"""Overrides where the `controlplane/` folder of Go modules is (default: beside the lwsconf package)."""


@dataclass(frozen=True)
class Release:
    """One pinned Kubernetes release: its version, its module folder and the etcd it is built with."""

    kubernetes: str
    module_dir: str
    etcd: str

    @property
    def minor(self) -> str:
        return ".".join(self.kubernetes.split(".")[:2])


RELEASES = (
    Release(kubernetes="1.37.2", module_dir="k8s-1.37", etcd="3.7.0"),
    Release(kubernetes="1.36.3", module_dir="k8s-1.36", etcd="3.6.8"),
)
DEFAULT = RELEASES[0]

UNDER_TEST_ENV = "LWSCONF_KUBERNETES_VERSIONS"
"""The releases the project's own tests run against (space- or comma-separated; default: every pinned release).
`make test` sets it to the newest release only, and `make test-releases` to all of them: a second release doubles
the cold build (about 6 minutes here) for checks that differ only in the binaries (issue 30, CI budget)."""


class UnknownVersion(ValueError):
    """A --kubernetes-version that is not pinned; the message lists the ones that are."""


def resolve(version: str | None) -> Release:
    """The release for `1.37`, `1.37.2` or `v1.37.2` (None: the default); UnknownVersion otherwise."""
    if version is None:
        return DEFAULT
    wanted = version.strip().removeprefix("v")
    for release in RELEASES:
        if wanted in (release.kubernetes, release.minor):
            return release
    known = ", ".join(r.kubernetes for r in RELEASES)
    raise UnknownVersion(f"Kubernetes {version!r} is not pinned here; choose one of {known} "
                         f"(each has its Go module under controlplane/)")


def under_test() -> tuple[Release, ...]:
    """The releases named by $LWSCONF_KUBERNETES_VERSIONS (`UNDER_TEST_ENV`), in pinned order; every release when it
    is unset or empty. An unknown version raises UnknownVersion, so a typo cannot silently test nothing."""
    named = os.environ.get(UNDER_TEST_ENV, "").replace(",", " ").split()
    if not named:
        return RELEASES
    wanted = {resolve(v) for v in named}
    return tuple(r for r in RELEASES if r in wanted)


def source_root() -> Path:
    """The `controlplane/` folder of Go modules: $LWSCONF_CONTROLPLANE_SRC, else the checkout's (or an
    installed wheel's copy)."""
    override = os.environ.get(SOURCE_ENV)
    if override:
        return Path(override)
    return project_files.project_dir("controlplane")
