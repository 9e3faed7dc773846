"""Kubernetes' published OpenAPI v3 documents in the user cache: `lwsconf sim openapi fetch`, and what the sim loads.

Why a cache and not the repository: the documents are upstream's text (every field's description), which
this project never copies into its source. They are obtained at install or first use from the pinned
`k8s.io/kubernetes` Go module (its `api/openapi-spec/v3/*.json`), the module whose release the real control
plane is built at, and checked before use:

* the module zip's `h1:` hash (Go's dirhash: SHA-256 over the sorted "sha256  name" lines of its files) is
  computed here and must equal `ZIP_HASH`, the go.sum line of `controlplane/k8s-1.37/go.sum`;
* each extracted document's SHA-256 is written to `manifest.json` and checked again whenever the sim reads it.

Where the zip comes from: `lwsconf sim openapi fetch` (and `make openapi`, which `make test` and so CI run) asks
`go mod download -json`, which finds it in the Go module cache or fetches it through the Go module proxy; at sim
start, `for_sim_start` installs it on its own when the zip is already in the Go module cache (no Go or network
needed: a machine that built the control plane has it). Without either the sim keeps its generated permissive
schemas, and says once, naming the command, that `kubectl explain` of built-in kinds will fail.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lwsconf.controlplane import build
from lwsconf.sim.apiserver.schema.openapi_builtin import BuiltinSpecs, key_of_file

log = logging.getLogger("lwsconf.sim.apiserver.schema.openapi")

MODULE = "k8s.io/kubernetes"
VERSION = "v1.37.2"
"""The release the sim answers as (1.37; `discovery.KUBE_MINOR`), as pinned for the real control plane."""
ZIP_HASH = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
"""go.sum's hash of the module zip (the same line as `controlplane/k8s-1.37/go.sum`; a test checks they agree)."""
SPEC_FOLDER = "api/openapi-spec/v3/"
MANIFEST = "manifest.json"
FETCH_COMMAND = "lwsconf sim openapi fetch"
DOWNLOAD_TIMEOUT_ENV = "LWSCONF_OPENAPI_DOWNLOAD_TIMEOUT"
DOWNLOAD_TIMEOUT_SECONDS = 600.0
"""`go mod download` of the ~21 MiB module zip on a cold module cache (overridable by DOWNLOAD_TIMEOUT_ENV)."""
GO_ENV = {"GOTOOLCHAIN": "local", "GOWORK": "off", "GOFLAGS": "-mod=mod"}


class FetchError(RuntimeError):
    """The documents could not be obtained; the message is one line saying why and what to do."""


def cache_dir(root: Path | None = None) -> Path:
    """~/.cache/lwsconf/openapi/<version> (`$LWSCONF_CACHE_DIR` and `$XDG_CACHE_HOME` as for the control plane)."""
    return (root or build.cache_root()) / "openapi" / VERSION


def zip_hash(path: Path) -> str:
    """Go's `h1:` hash of a module zip (golang.org/x/mod/sumdb/dirhash Hash1 over the zip's files)."""
    lines: list[str] = []
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith("/"):
                continue
            lines.append(f"{hashlib.sha256(archive.read(name)).hexdigest()}  {name}\n")
    return "h1:" + base64.b64encode(hashlib.sha256("".join(lines).encode()).digest()).decode()


def install_from_zip(path: Path, dest: Path | None = None) -> Path:
    """Check the module zip against the pin, then write its group-version documents and manifest into `dest`.

    The folder appears whole or not at all (written beside it, then renamed), so two sims starting at once
    on one machine never read half of it. Returns `dest`.
    """
    dest = dest or cache_dir()
    expected_hash, prefix = ZIP_HASH, f"{MODULE}@{VERSION}/"
    found = zip_hash(path)
    if found != expected_hash:
        raise FetchError(f"{path} has hash {found}, not the pinned {expected_hash} of {MODULE}@{VERSION}: "
                         f"remove it (go clean -modcache, or that file) and run `{FETCH_COMMAND}` again")
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        files: dict[str, str] = {}
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                inside = name.removeprefix(prefix)
                if not inside.startswith(SPEC_FOLDER) or "/" in inside.removeprefix(SPEC_FOLDER):
                    continue
                base = inside.removeprefix(SPEC_FOLDER)
                if key_of_file(base) is None:
                    continue
                data = archive.read(name)
                (scratch / base).write_bytes(data)
                files[base] = hashlib.sha256(data).hexdigest()
        if not files:
            raise FetchError(f"{path} holds no {SPEC_FOLDER}*.json under {prefix}: not the module it should be")
        manifest = {"module": MODULE, "version": VERSION, "zipHash": expected_hash, "files": files}
        (scratch / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        try:
            scratch.rename(dest)
        except OSError:  # another process finished first, or an earlier folder is in the way
            if _read_manifest(dest) is None:
                shutil.rmtree(dest, ignore_errors=True)
                scratch.rename(dest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def module_cache_zip(environ: Mapping[str, str] | None = None) -> Path | None:
    """The pinned module's zip in the Go module cache, when it is there ($GOMODCACHE, else $GOPATH or ~/go)."""
    env = os.environ if environ is None else environ
    if env.get("GOMODCACHE"):
        root = Path(env["GOMODCACHE"])
    else:
        gopath = (env.get("GOPATH") or "").split(os.pathsep)[0]
        root = (Path(gopath) if gopath else Path(env.get("HOME") or Path.home()) / "go") / "pkg" / "mod"
    found = root / "cache" / "download" / MODULE / "@v" / f"{VERSION}.zip"
    return found if found.is_file() else None


def _download_timeout(environ: Mapping[str, str]) -> float:
    raw = environ.get(DOWNLOAD_TIMEOUT_ENV)
    return float(raw) if raw else DOWNLOAD_TIMEOUT_SECONDS


def download_zip(go: str, environ: Mapping[str, str] | None = None) -> Path:
    """`go mod download -json k8s.io/kubernetes@VERSION`: the zip's path; FetchError with Go's reason otherwise."""
    env = dict(os.environ if environ is None else environ)
    timeout = _download_timeout(env)
    wanted = f"{MODULE}@{VERSION}"
    with tempfile.TemporaryDirectory(prefix="lwsconf-openapi-") as scratch:
        try:
            proc = subprocess.run([go, "mod", "download", "-json", wanted], cwd=scratch, env={**env, **GO_ENV},
                                  capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise FetchError(f"`go mod download {wanted}` took over {timeout:g}s ({DOWNLOAD_TIMEOUT_ENV}); "
                             "check the Go module proxy (GOPROXY) is reachable and run it again") from None
        except OSError as exc:
            raise FetchError(f"could not run {go}: {exc}; install Go 1.26 and put `go` on PATH") from None
    try:
        record: Any = json.loads(proc.stdout)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        why = " ".join((proc.stderr or proc.stdout).split()) or f"exit status {proc.returncode}"
        raise FetchError(f"`go mod download {wanted}` failed: {why}")
    if record.get("Error") or not record.get("Zip"):
        why = " ".join(str(record.get("Error") or "it printed no Zip path").split())
        raise FetchError(f"`go mod download {wanted}` failed: {why}. The sim keeps its permissive schemas "
                         f"(kubectl explain of built-in kinds fails); run `{FETCH_COMMAND}` again once the "
                         "Go module proxy (GOPROXY) serves the module")
    return Path(str(record["Zip"]))


def fetch(go_path: str | None = None, dest: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Install the documents into `dest` (the user cache) unless they are there; the folder they are in.

    Uses the zip already in the Go module cache when there is one; else `go mod download` (Go needed).
    """
    dest = dest or cache_dir()
    if _read_manifest(dest) is not None:
        return dest
    env = os.environ if environ is None else environ
    zip_path = module_cache_zip(env)
    if zip_path is None:
        try:
            go, _ = build.find_go(go_path, purpose=f"fetching Kubernetes' OpenAPI documents ({MODULE}@{VERSION})",
                                  instead="go on without them: the sim serves permissive schemas and kubectl "
                                  "explain of built-in kinds fails")
        except build.GoMissing as exc:
            raise FetchError(str(exc)) from None
        zip_path = download_zip(go, env)
    return install_from_zip(zip_path, dest)


def _read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or (manifest.get("module"), manifest.get("version"),
                                          manifest.get("zipHash")) != (MODULE, VERSION, ZIP_HASH):
        return None
    files = manifest.get("files")
    return manifest if isinstance(files, dict) and files else None


_loaded: dict[Path, BuiltinSpecs] = {}
_loaded_lock = threading.Lock()
_warned = False


def installed(folder: Path | None = None) -> BuiltinSpecs | None:
    """The installed documents (one instance per folder and process), or None when there are none."""
    folder = folder or cache_dir()
    with _loaded_lock:
        if folder in _loaded:
            return _loaded[folder]
        manifest = _read_manifest(folder)
        if manifest is None:
            return None
        files: dict[str, str] = manifest["files"]
        by_key = {key: (name, digest) for name, digest in files.items() if (key := key_of_file(name)) is not None}

        def load(key: str) -> bytes | None:
            name, digest = by_key[key]
            try:
                data = (folder / name).read_bytes()
            except OSError as exc:
                log.error("OpenAPI document %s unreadable (%s): serving a permissive schema for %s; "
                          "remove %s and run `%s`", name, exc, key, folder, FETCH_COMMAND)
                return None
            if hashlib.sha256(data).hexdigest() != digest:
                log.error("OpenAPI document %s does not match its manifest: serving a permissive schema for %s; "
                          "remove %s and run `%s`", folder / name, key, folder, FETCH_COMMAND)
                return None
            return data

        specs = BuiltinSpecs(VERSION, by_key, load)
        _loaded[folder] = specs
        return specs


def for_sim_start(folder: Path | None = None, environ: Mapping[str, str] | None = None) -> BuiltinSpecs | None:
    """What a starting sim serves: the installed documents, installed now from a warm Go module cache, or None.

    None is logged once per process as a warning naming the fetch command: the one visible sign, at start, of
    why `kubectl explain deployment` fails on this sim.
    """
    global _warned
    folder = folder or cache_dir()
    specs = installed(folder)
    if specs is not None:
        return specs
    zip_path = module_cache_zip(environ)
    if zip_path is not None:
        try:
            install_from_zip(zip_path, folder)
            log.info("installed Kubernetes' OpenAPI documents from %s into %s", zip_path, folder)
            return installed(folder)
        except (FetchError, OSError, zipfile.BadZipFile) as exc:
            log.warning("could not install OpenAPI documents from %s: %s", zip_path, exc)
    if not _warned:
        _warned = True
        log.warning("Kubernetes' OpenAPI documents are not installed (%s): built-in kinds get permissive schemas, "
                    "so `kubectl explain` of them fails; run `%s` (needs Go and the Go module proxy) to fetch them",
                    folder, FETCH_COMMAND)
    return None


def main(argv: list[str]) -> int:
    """`lwsconf sim openapi fetch [--cache-dir DIR]`: exit 0 with the folder, 2 with one line saying what to do."""
    parser = argparse.ArgumentParser(prog="lwsconf sim openapi",
                                     description="Kubernetes' OpenAPI v3 documents for the sim's built-in kinds")
    sub = parser.add_subparsers(dest="action", required=True)
    get = sub.add_parser("fetch", help=f"install {MODULE}@{VERSION}'s api/openapi-spec/v3 into the user cache "
                         "(from the Go module cache, else `go mod download`; checked against the go.sum pin)")
    get.add_argument("--cache-dir", type=Path, default=None, help=f"where to put them (default: {cache_dir()})")
    args = parser.parse_args(argv)
    try:
        folder = fetch(dest=args.cache_dir)
    except (FetchError, OSError, zipfile.BadZipFile) as exc:
        print(f"lwsconf sim openapi fetch: {exc}", file=sys.stderr)
        return 2
    count = len((_read_manifest(folder) or {}).get("files", {}))
    print(f"{count} OpenAPI v3 documents of {MODULE}@{VERSION} in {folder}")
    return 0
