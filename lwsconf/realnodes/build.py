"""Build what a real node runs from pinned Go modules: kubelet and kube-proxy, containerd, runc, CNI plugins, pause,
and the cluster's DNS server (CoreDNS, `dns`).

Each part is one Go module of ours under `nodes/` (a go.mod and go.sum pinning the upstream release; `pause` is
our own program; `coredns` is upstream's module with our own main.go choosing its plugins) and one
`controlplane.build.GoBuild`: the same stamp, cache and progress lines as the control plane's build (the stamp
holds go.mod, go.sum and any .go file of ours), so an unchanged checkout builds nothing. The parts are separate
modules so their dependency graphs never force each other's versions. runc is the one cgo build (its nsenter is C;
`-tags seccomp` needs libseccomp-dev, since the pods' default seccomp profile must be enforceable); everything else
is static.

    plans(release, go=..., go_version=...)  -> the six GoBuilds, pure apart from hashing our module files
    installed(release)                      -> NodeBinaries when every part is built, else None
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lwsconf import project_files
from lwsconf.controlplane import build as gobuild
from lwsconf.controlplane.versions import Release

SOURCE_DIR = "nodes"
"""The top-level folder of the Go modules (shipped in the wheel like controlplane/)."""
STATIC = {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOWORK": "off"}


@dataclass(frozen=True)
class Part:
    """One module under nodes/ and the binaries built from it (name -> package)."""

    name: str
    module_dir: str
    binaries: Mapping[str, str]
    env: Mapping[str, str]
    tags: str = ""
    kubernetes: bool = False
    """Whether the binaries take Kubernetes' version variables (kubelet reports them to the API)."""


def parts(release: Release) -> tuple[Part, ...]:
    """The parts of a node of `release`; only kubelet and kube-proxy depend on the release."""
    cni = "github.com/containernetworking/plugins/plugins"
    return (
        Part("kubernetes", f"k8s-{release.minor}", {"kubelet": "k8s.io/kubernetes/cmd/kubelet",
                                                    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy"},
             STATIC, kubernetes=True),
        Part("containerd", "containerd", {n: f"github.com/containerd/containerd/v2/cmd/{n}"
                                          for n in ("containerd", "containerd-shim-runc-v2", "ctr")}, STATIC),
        Part("runc", "runc", {"runc": "github.com/opencontainers/runc"}, {**STATIC, "CGO_ENABLED": "1"},
             tags="seccomp"),
        Part("cni", "cni", {"ptp": f"{cni}/main/ptp", "bridge": f"{cni}/main/bridge",
                            "loopback": f"{cni}/main/loopback", "host-local": f"{cni}/ipam/host-local",
                            "portmap": f"{cni}/meta/portmap"}, STATIC),
        Part("pause", "pause", {"pause": "lwsconf.local/nodes/pause"}, STATIC),
        Part("coredns", "coredns", {"coredns": "lwsconf.local/nodes/coredns"}, STATIC),
    )


def cache_dir(release: Release, cache: Path | None = None) -> Path:
    return (cache or gobuild.cache_root()) / "nodes" / release.kubernetes


def _hash(path: Path) -> str:
    return gobuild.file_hash(path, missing="run from a source checkout of lwsconf (its nodes/ folder holds the Go "
                                           "modules of the real node parts)")


def plan(part: Part, release: Release, *, go: str, go_version: str, source: Path | None = None,
         cache: Path | None = None, nice: str | None = None) -> gobuild.GoBuild:
    """The build of one part into <cache>/nodes/<release>/<part>/bin."""
    module = (source or project_files.project_dir(SOURCE_DIR)) / part.module_dir
    root = cache_dir(release, cache) / part.name
    bin_dir = root / "bin"
    component = gobuild.Component(part.name, "", kubernetes=part.kubernetes)
    ldflags = gobuild.ldflags(release, component)
    stamp = {"part": part.name, "go": go_version, "go.mod": _hash(module / "go.mod"),
             "go.sum": _hash(module / "go.sum"),
             "flags": json.dumps([ldflags, part.tags, dict(part.env)])}
    ours = sorted(module.glob("*.go"))
    if ours:
        stamp["sources"] = json.dumps({p.name: _hash(p) for p in ours})
    if part.kubernetes:
        stamp["kubernetes"] = release.kubernetes
    prefix = gobuild.nice_prefix(nice)
    tags = ("-tags", part.tags) if part.tags else ()
    steps = tuple(
        gobuild.Step(component=gobuild.Component(name, package, kubernetes=part.kubernetes),
                     output=bin_dir / name, partial=bin_dir / f".{name}.partial",
                     argv=(*prefix, go, "build", "-trimpath", *tags, f"-ldflags={ldflags}",
                           "-o", str(bin_dir / f".{name}.partial"), package))
        for name, package in part.binaries.items())
    return gobuild.GoBuild(title=f"nodes {release.kubernetes} {part.name}", module=module, bin_dir=bin_dir,
                           stamp_path=root / gobuild.STAMP_NAME, stamp=stamp, env=dict(part.env), steps=steps)


def plans(release: Release, *, go: str, go_version: str, source: Path | None = None, cache: Path | None = None,
          nice: str | None = None) -> tuple[gobuild.GoBuild, ...]:
    return tuple(plan(p, release, go=go, go_version=go_version, source=source, cache=cache, nice=nice)
                 for p in parts(release))


@dataclass(frozen=True)
class NodeBinaries:
    """Where each built binary is: `path("kubelet")`; `cni_dir` holds the CNI plugins (containerd's bin_dirs)."""

    paths: Mapping[str, Path]
    cni_dir: Path
    containerd_dir: Path
    """Holds containerd, its runc shim and ctr: containerd finds the shim on PATH."""

    def path(self, name: str) -> Path:
        return self.paths[name]


def installed(release: Release, cache: Path | None = None) -> NodeBinaries | None:
    """The built parts of `release`, if every part's build is complete in the cache."""
    root = cache_dir(release, cache)
    paths: dict[str, Path] = {}
    for part in parts(release):
        bin_dir = root / part.name / "bin"
        if not (root / part.name / gobuild.STAMP_NAME).is_file():
            return None
        for name in part.binaries:
            if not (bin_dir / name).is_file():
                return None
            paths[name] = bin_dir / name
    return NodeBinaries(paths=paths, cni_dir=root / "cni" / "bin", containerd_dir=root / "containerd" / "bin")
