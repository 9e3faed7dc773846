"""Container images built offline, as OCI image archives a real container runtime imports (issue 31).

No registry is ever contacted: the images the suite's pods run are made here from files on this machine (a
Debian root filesystem made with debootstrap, our own static binaries) and imported into each node's containerd
under the references the manifests use. `build` is reproducible: entries are sorted, owned by root, dated
`SOURCE_DATE_EPOCH` (0 by default), so the same files give the same digest, which the report records.

The archive is an OCI image layout (image-spec v1.1: `oci-layout`, `index.json`, `blobs/sha256/...`) holding one
uncompressed layer; `index.json` names the image with the `io.containerd.image.name` annotation (what
`ctr images import` names an image by) and `org.opencontainers.image.ref.name`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"


@dataclass(frozen=True)
class ImageSpec:
    """What an image is: its reference, the root filesystem its one layer holds, and how it starts.

    `files` adds single files on top of `rootfs` (path in the image -> file on this machine), e.g. a static
    binary for an image without a root filesystem."""

    reference: str
    rootfs: Path | None = None
    files: Mapping[str, Path] = field(default_factory=dict)
    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Sequence[str] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    working_dir: str = "/"


@dataclass(frozen=True)
class BuiltImage:
    """An archive on disk and the digests the runtime and the report know it by."""

    reference: str
    archive: Path
    manifest_digest: str
    """sha256:... of the manifest: what `crictl images --digests` and the pod's imageID show."""
    layer_bytes: int


def _entries(spec: ImageSpec) -> Iterator[tuple[str, Path]]:
    """(path in the image, path here) for every entry of the layer, parents before children, sorted."""
    seen: dict[str, Path] = {}
    if spec.rootfs is not None:
        root = spec.rootfs
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted([*dirnames, *filenames]):
                full = Path(dirpath) / name
                seen[str(full.relative_to(root))] = full
    for inside, here in spec.files.items():
        rel = inside.strip("/")
        parts = rel.split("/")
        for i in range(1, len(parts)):
            seen.setdefault("/".join(parts[:i]), Path("/"))
        seen[rel] = here
    for rel in sorted(seen):
        yield rel, seen[rel]


def layer_tar(spec: ImageSpec, mtime: int) -> bytes:
    """The layer as an uncompressed tar, reproducible: sorted, root-owned, every entry dated `mtime`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, here in _entries(spec):
            info = tar.gettarinfo(str(here), arcname=rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = mtime
            info.pax_headers = {}
            if stat.S_ISREG(os.lstat(here).st_mode):
                with open(here, "rb") as f:
                    tar.addfile(info, f)
            elif info.isdev() or info.isfifo():
                continue  # device nodes and fifos are the runtime's to create
            else:
                tar.addfile(info)
    return buffer.getvalue()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def build(spec: ImageSpec, out: Path, *, mtime: int | None = None) -> BuiltImage:
    """Write `spec` as an OCI image layout archive to `out`; the same inputs give the same bytes."""
    when = int(os.environ.get("SOURCE_DATE_EPOCH", "0")) if mtime is None else mtime
    layer_digest, layer = _blob(layer_tar(spec, when))
    config: dict[str, object] = {
        "architecture": "amd64", "os": "linux",
        "config": {"Env": list(spec.env), "Entrypoint": list(spec.entrypoint) or None, "Cmd": list(spec.cmd) or None,
                   "WorkingDir": spec.working_dir},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created_by": "lwsconf.realnodes.images", "comment": "built offline"}]}
    config_digest, config_bytes = _blob(_canonical(config))
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE,
                "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": config_digest, "size": len(config_bytes)},
                "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": layer_digest, "size": len(layer)}]}
    manifest_digest, manifest_bytes = _blob(_canonical(manifest))
    index = {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE,
             "manifests": [{"mediaType": MANIFEST_MEDIA_TYPE, "digest": manifest_digest, "size": len(manifest_bytes),
                            "platform": {"architecture": "amd64", "os": "linux"},
                            "annotations": {"io.containerd.image.name": spec.reference,
                                            "org.opencontainers.image.ref.name": spec.reference}}]}
    files = [("oci-layout", _canonical({"imageLayoutVersion": "1.0.0"})), ("index.json", _canonical(index))]
    files += [(f"blobs/sha256/{d.removeprefix('sha256:')}", b)
              for d, b in ((layer_digest, layer), (config_digest, config_bytes), (manifest_digest, manifest_bytes))]
    out.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per writer: clusters started side by side (xdist workers) build the same archive at once,
    # and with one shared temporary name the first rename took the file from under the second (CI, 0004eeb:
    # "No such file or directory: '.pause.tar.partial' -> 'pause.tar'"). Same inputs give the same bytes, so
    # whichever rename lands last leaves the same archive; a reader never sees a half-written one.
    fd, partial_name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    partial = Path(partial_name)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for directory in ("blobs", "blobs/sha256"):
                info = tarfile.TarInfo(directory)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, when
                tar.addfile(info)
            for name, data in files:
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, when
                tar.addfile(info, io.BytesIO(data))
        partial.chmod(0o644)
        partial.replace(out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return BuiltImage(reference=spec.reference, archive=out, manifest_digest=manifest_digest, layer_bytes=len(layer))


def cached_build(spec: ImageSpec, out: Path, *, stamp: str) -> BuiltImage:
    """`build` unless `out` was built from the same `stamp` (a string naming its inputs, kept beside the archive in
    `<out>.json`): a large root filesystem takes seconds to archive (the python image's 13 s; CoreDNS is 52 MiB)."""
    record = out.with_suffix(".json")
    try:
        known = json.loads(record.read_text())
        if known["stamp"] == stamp and out.is_file():
            return BuiltImage(reference=spec.reference, archive=out, manifest_digest=known["digest"],
                              layer_bytes=known["layer_bytes"])
    except (OSError, ValueError, KeyError):
        pass
    built = build(spec, out)
    record.write_text(json.dumps({"stamp": stamp, "digest": built.manifest_digest, "layer_bytes": built.layer_bytes}))
    return built


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
