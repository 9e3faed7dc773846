"""`go build` of upstream's manager into ~/.cache/lwsconf/lws/<version>/bin/manager.

Planned and run by `lwsconf.controlplane.build` (its `GoBuild`, stamp, progress lines, log tail, timeout, `nice -n
19` unless LWSCONF_BUILD_NICE says otherwise, CGO_ENABLED=0, GOTOOLCHAIN=local, GOWORK=off). A pinned release is
built inside our Go module (`upstream/lws-<minor>/`), so every dependency's checksum is the one in our go.sum, and
skipped when its stamp (version, Go, go.mod/go.sum hashes, flags) is unchanged. A checkout is built where it is (`go
build ./cmd`, with its own go.mod and go.sum) and always rebuilt: its tree may have changed since, and Go's build
cache makes an unchanged one quick. A source snapshot is built the same way in its unpacked tree, and skipped when
its stamp (the archive's pinned SHA-256, Go, flags) is unchanged.
The version variables are set as upstream's Makefile
sets them (pkg/version: GitVersion, GitCommit), so the manager's first log line names what it is.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from lwsconf.controlplane import build as gobuild
from lwsconf.upstream import source, versions

VERSION_PACKAGE = "sigs.k8s.io/lws/pkg/version"
NO_GO = {"purpose": "building upstream's LWS manager (--lws-impl=upstream-local)",
         "instead": "test the reference implementation with --lws-impl=reference"}


@dataclass(frozen=True)
class Built:
    """The manager binary and the facts of the source it was built from."""

    binary: Path
    facts: source.Facts


def lws_dir(facts: source.Facts, cache: Path | None = None) -> Path:
    """~/.cache/lwsconf/lws/<version>, or .../lws/checkout-<hash of its path> for a checkout."""
    root = (cache or gobuild.cache_root()) / "lws"
    if isinstance(facts.source, versions.Checkout):
        digest = hashlib.sha256(str(facts.source.path).encode()).hexdigest()[:12]
        return root / f"checkout-{digest}"
    return root / facts.version


def ldflags(facts: source.Facts) -> str:
    version = facts.version
    if isinstance(facts.source, versions.Checkout):
        version = f"checkout-{(facts.commit or 'nogit')[:12]}{'-dirty' if facts.dirty else ''}"
    flags = ["-s", "-w", f"-X {VERSION_PACKAGE}.GitVersion={version}"]
    if facts.commit:
        flags.append(f"-X {VERSION_PACKAGE}.GitCommit={facts.commit}")
    return " ".join(flags)


def plan(facts: source.Facts, *, go: str, go_version: str, root: Path | None = None, cache: Path | None = None,
         nice: str | None = None) -> gobuild.GoBuild:
    """The build of the manager of `facts.source`: pure apart from hashing our go.mod and go.sum."""
    if isinstance(facts.source, versions.Checkout):
        module, package = facts.source.path, "./cmd"
        stamp = {"checkout": str(module), "commit": facts.commit or "", "dirty": str(facts.dirty)}
    elif isinstance(facts.source, versions.Snapshot):
        module, package = facts.dir, "./cmd"
        stamp = {"snapshot": facts.source.sha256}
    elif isinstance(facts.source, versions.Release):
        module, package = (root or versions.source_root()) / facts.source.module_dir, versions.MAIN_PACKAGE
        stamp = {"lws": facts.version, "go.mod": _hash(module / "go.mod"), "go.sum": _hash(module / "go.sum")}
    else:
        raise source.SourceError(f"LWS {facts.version} is not pinned; nothing to build")
    folder = lws_dir(facts, cache)
    bin_dir = folder / "bin"
    flags = ldflags(facts)
    stamp |= {"go": go_version, "flags": json.dumps(flags)}
    prefix = gobuild.nice_prefix(nice)
    step = gobuild.Step(component=gobuild.Component("manager", package, kubernetes=False),
                        output=bin_dir / "manager", partial=bin_dir / ".manager.partial",
                        argv=(*prefix, go, "build", "-trimpath", f"-ldflags={flags}", "-o",
                              str(bin_dir / ".manager.partial"), package))
    return gobuild.GoBuild(title=f"lws {versions.describe(facts.source)}", module=module, bin_dir=bin_dir,
                           stamp_path=folder / gobuild.STAMP_NAME, stamp=stamp,
                           env={"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOWORK": "off"}, steps=(step,))


def _hash(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise source.SourceError(f"cannot read {path} ({exc.strerror}): run from a source checkout of lwsconf "
                                 f"or set {versions.SOURCE_ENV} to its upstream/ folder") from exc


def ensure(spec: str | None, out: TextIO) -> Built:
    """Resolve `spec` (a release tag, a checkout path, None for the default), build unless up to date.

    Raises `source.SourceError` or `gobuild.BuildError` (GoMissing included), each one actionable line
    (a failed `go build` adds its log tail)."""
    try:
        wanted = versions.parse(spec)
    except versions.BadSource as exc:
        raise source.SourceError(str(exc)) from None
    go, go_version = gobuild.find_go(**NO_GO)
    facts = source.facts(wanted, go)
    p = plan(facts, go=go, go_version=go_version, nice=shutil.which("nice"))
    if isinstance(wanted, versions.Checkout):
        p.stamp_path.unlink(missing_ok=True)  # always rebuilt (see the module docstring)
    gobuild.execute(p, out)
    return Built(binary=p.steps[0].output, facts=facts)
