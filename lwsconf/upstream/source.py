"""Where upstream's files are and what exactly is being tested: asked of `go` and `git`, never guessed.

A pinned release: `go mod download -json sigs.k8s.io/lws` inside our Go module gives the module's
folder in the Go module cache (read-only, where its `config/` CRDs and webhook manifests are read at run
time) and its checksum (the `h1:` line Go verified against our go.sum), and the proxy's record of the
commit the tag points at. An unpinned tag is asked of the proxy only to say, in one line, why it cannot
be built (v0.10.0: the proxy refuses its zip). A source snapshot: its archive checked against the SHA-256
pinned in `versions.SNAPSHOTS`, then unpacked once into ~/.cache/lwsconf/lws-src/ (read from there by the
build and for `config/`); its commit is the pinned one. A checkout: its commit and whether its tree is dirty.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lwsconf.controlplane import build as gobuild
from lwsconf.upstream import versions

GO_TIMEOUT = 300.0
"""Seconds `go mod download` may take (a first download of the module's zip and its dependencies)."""
GO_ENV = {"GOTOOLCHAIN": "local", "GOWORK": "off", "GOFLAGS": "-mod=readonly"}


class SourceError(Exception):
    """Upstream's source cannot be found or built; the message is one line saying why and what to do."""


class SnapshotMissing(SourceError):
    """A pinned snapshot's archive is not where it is looked for: a run may skip it (CI may not)."""


@dataclass(frozen=True)
class Facts:
    """What the report records about the upstream under test, and where its files are."""

    source: versions.Source
    dir: Path
    """The module's files: its folder in the Go module cache, or the checkout."""
    version: str
    """The release tag, or `checkout` for a local tree."""
    checksum: str | None = None
    """The module's `h1:` checksum (go.sum), `sha256:<hex>` of a snapshot's archive; None for a checkout."""
    commit: str | None = None
    dirty: bool | None = None
    """Whether the checkout had uncommitted changes (None: not a git working tree, or a release)."""

    def record(self) -> dict[str, object]:
        """The report's `implementation` details: version or commit+dirty, checksum, how it ran."""
        out: dict[str, object] = {"module": versions.MODULE, "version": self.version, "files": str(self.dir),
                                  "how": "run out of cluster by lwsconf"}
        if self.checksum:
            out["checksum"] = self.checksum
        if self.commit:
            out["commit"] = self.commit
        if self.dirty is not None:
            out["dirty"] = self.dirty
        return out


def _go_json(go: str, args: list[str], cwd: Path) -> dict[str, object]:
    try:
        proc = subprocess.run([go, *args], cwd=cwd, capture_output=True, text=True, timeout=GO_TIMEOUT,
                              env={**os.environ, **GO_ENV}, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SourceError(f"`go {' '.join(args)}` in {cwd} took over {GO_TIMEOUT:g}s") from None
    try:
        found = json.loads(proc.stdout)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        why = " ".join((proc.stderr or proc.stdout).split()) or f"exit status {proc.returncode}"
        raise SourceError(f"`go {' '.join(args)}` in {cwd} failed: {why}")
    return found


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def release_facts(release: versions.Release, go: str, root: Path | None = None) -> Facts:
    """Download (or find in the module cache) the pinned release; its folder, checksum and commit."""
    module = (root or versions.source_root()) / release.module_dir
    if not (module / "go.mod").is_file():
        raise SourceError(f"no Go module for LWS {release.version} at {module}: run from a source checkout of "
                          f"lwsconf or set {versions.SOURCE_ENV} to its upstream/ folder")
    found = _go_json(go, ["mod", "download", "-json", versions.MODULE], module)
    if found.get("Error"):
        raise SourceError(f"LWS {release.version}: {_one_line(found['Error'])}")
    if found.get("Version") != release.version:
        raise SourceError(f"{module}/go.mod requires {versions.MODULE} {found.get('Version')}, not "
                          f"{release.version}: fix the module or lwsconf/upstream/versions.py")
    commit = _origin_commit(found)
    return Facts(source=release, dir=Path(str(found["Dir"])), version=release.version,
                 checksum=str(found.get("Sum") or "") or None, commit=commit)


def _origin_commit(found: dict[str, object]) -> str | None:
    """The commit the proxy says the tag pointed at (in the answer, else in the cached .info file)."""
    origin = found.get("Origin")
    if not isinstance(origin, dict) and found.get("Info"):
        try:
            origin = json.loads(Path(str(found["Info"])).read_text()).get("Origin")
        except (OSError, ValueError, AttributeError):
            origin = None
    commit = origin.get("Hash") if isinstance(origin, dict) else None
    return str(commit) if commit else None


def check_unpinned(tag: versions.Unpinned, go: str) -> SourceError:
    """Why an unpinned release cannot be built: the proxy's own error, or that it needs pinning."""
    pinned = ", ".join([r.version for r in versions.RELEASES] +
                       [f"{s.version} (source snapshot)" for s in versions.SNAPSHOTS])
    with tempfile.TemporaryDirectory(prefix="lwsconf-lws-") as empty:  # outside any module
        try:
            found = _go_json(go, ["mod", "download", "-json", f"{versions.MODULE}@{tag.version}"], Path(empty))
        except SourceError as exc:
            return SourceError(f"upstream-local:{tag.version}: {exc}; pinned here: {pinned}")
    if found.get("Error"):
        return SourceError(f"upstream-local:{tag.version} cannot be built: the Go module proxy answers "
                           f"`{_one_line(found['Error'])}`; use a release it serves (pinned here: {pinned}) or "
                           f"an LWS checkout (upstream-local:/path/to/lws)")
    return SourceError(f"upstream-local:{tag.version} is served by the Go module proxy but not pinned here "
                       f"(pinned: {pinned}); pin it with a Go module under upstream/ (go.mod with `tool "
                       f"{versions.MAIN_PACKAGE}`, then `go get {versions.MODULE}@{tag.version} && go mod tidy`) "
                       f"and a row in lwsconf/upstream/versions.py")


def _git(path: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def checkout_facts(checkout: versions.Checkout) -> Facts:
    """A checkout's commit and dirty flag (both None when it is not a git working tree)."""
    head = _git(checkout.path, "rev-parse", "HEAD")
    status = _git(checkout.path, "status", "--porcelain", "--untracked-files=normal") if head else None
    return Facts(source=checkout, dir=checkout.path, version="checkout",
                 commit=head.strip() if head else None, dirty=bool(status.strip()) if status is not None else None)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def snapshot_facts(snapshot: versions.Snapshot, folder: Path | None = None, cache: Path | None = None) -> Facts:
    """The snapshot's archive checked and unpacked (once; an unpacked tree is reused); its tree and commit."""
    where = folder or versions.snapshot_dir()
    archive = where / snapshot.archive
    if not archive.is_file():
        raise SnapshotMissing(f"upstream-local:{snapshot.version}: its source snapshot {snapshot.archive} is not in "
                          f"{where}; put upstream's unmodified archive there or set {versions.SNAPSHOTS_ENV} to the "
                          f"folder that holds it (or test a release the Go module proxy serves: "
                          f"upstream-local:{versions.DEFAULT.version})")
    unpacked = (cache or gobuild.cache_root()) / "lws-src" / f"{snapshot.version}-{snapshot.sha256[:12]}"
    if not (unpacked / "go.mod").is_file():
        found = _sha256(archive)
        if found != snapshot.sha256:
            raise SourceError(f"upstream-local:{snapshot.version}: {archive} has SHA-256 {found}, not the pinned "
                              f"{snapshot.sha256} (lwsconf/upstream/versions.py): not the archive this harness "
                              f"pins; restore the original")
        _unpack(archive, unpacked)
    return Facts(source=snapshot, dir=unpacked, version=snapshot.version, checksum=f"sha256:{snapshot.sha256}",
                 commit=snapshot.commit)


def _unpack(archive: Path, into: Path) -> None:
    """Unpack the archive's one top folder as `into`, atomically (a half-unpacked tree is never left there)."""
    into.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=into.parent) as scratch:
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(scratch, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise SourceError(f"cannot unpack {archive}: {exc}") from None
        tops = [p for p in Path(scratch).iterdir() if p.is_dir()]
        if len(tops) != 1 or not (tops[0] / "go.mod").is_file():
            raise SourceError(f"{archive} does not hold one LWS source folder with a go.mod at its top")
        shutil.rmtree(into, ignore_errors=True)
        tops[0].rename(into)


def facts(source: versions.Source, go: str) -> Facts:
    """The facts of any source; SourceError for an unpinned tag (with the reason)."""
    if isinstance(source, versions.Release):
        return release_facts(source, go)
    if isinstance(source, versions.Checkout):
        return checkout_facts(source)
    if isinstance(source, versions.Snapshot):
        return snapshot_facts(source)
    raise check_unpinned(source, go)
