"""The kind node image's I/O: builds what `plan` says, stages the image's root, preloads its images, loads it.

    go_plans(release, ...)  -> the GoBuilds of kind (nodes/kind), kubeadm (nodes/kubeadm-<minor>), crictl
                               (nodes/crictl), through `realnodes.build.plan`: same stamp, cache and progress lines
    build(release, ...)     -> NodeImage: the archive <cache>/kindnode/<release>/kind-node-v<release>.tar, and
                               `docker load`ed unless load=False

Choices (why):
- kubeadm and crictl are separate Go modules and separate builds from `make nodes` (`realnodes.build.parts` is
  untouched), so real nodes never build them and their stamps never move.
- The image's root is a staged folder (a copy of the cached root filesystem, then kind's files, our binaries, the
  text files, the CNI template and its line in kind's containerd config, and systemd links), not an in-memory layer:
  it is over a GiB with the preloaded images.
- The preload runs our own containerd on this machine against <staged root>/var/lib/containerd (its own socket,
  state and config, CRI off) and imports each OCI archive with `ctr -n k8s.io images import --no-unpack`, the flags
  kind's importer uses (kind v0.33.0 pkg/build/nodeimage/imageimporter.go): the node's containerd unpacks on first
  use. The same containerd build then runs inside the node.
- The archive is a docker-archive (`manifest.json`, the config, one uncompressed layer): Docker 20.10's `docker load`
  needs it. The layer is sorted, root-owned and dated 0, but containerd's metadata database inside it is not
  reproducible, so <cache>/kindnode/<release>/image.json records the digests instead of promising them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lwsconf import project_files
from lwsconf.controlplane import build as controlplane_build
from lwsconf.controlplane.versions import Release
from lwsconf.kindnode import plan
from lwsconf.realnodes import build as nodes_build
from lwsconf.realnodes import catalog, images
from lwsconf.waits import core

CONTAINERD_TIMEOUT_ENV = "LWSCONF_KINDNODE_CONTAINERD_TIMEOUT"
CONTAINERD_TIMEOUT = 60.0
"""Seconds our containerd may take to answer on its socket for the preload; $LWSCONF_KINDNODE_CONTAINERD_TIMEOUT."""
COMMAND_TIMEOUT = 600.0
"""One `ctr images import`, `cp -a` of the root filesystem, `go mod download` or `docker load` (a GiB archive)."""

Notify = Callable[[str], None]


class NodeImageError(Exception):
    """The image cannot be made; the message says what failed and what to do."""


class PrerequisiteMissing(NodeImageError):
    """Something the user provides first (a build, a tool on PATH): the CLI's exit status 2, not a failure's 1."""


def go_parts(release: Release) -> tuple[nodes_build.Part, ...]:
    """kind, kubeadm of `release` and crictl: the Go builds only the kind node image needs."""
    return (
        nodes_build.Part("kind", "kind", {"kind": plan.KIND_MODULE}, nodes_build.STATIC),
        nodes_build.Part("kubeadm", f"kubeadm-{release.minor}", {"kubeadm": "k8s.io/kubernetes/cmd/kubeadm"},
                         nodes_build.STATIC, kubernetes=True),
        nodes_build.Part("crictl", "crictl", {"crictl": "sigs.k8s.io/cri-tools/cmd/crictl"}, nodes_build.STATIC),
    )


def go_plans(release: Release, *, go: str, go_version: str, cache: Path | None = None,
             nice: str | None = None) -> tuple[controlplane_build.GoBuild, ...]:
    return tuple(nodes_build.plan(p, release, go=go, go_version=go_version, cache=cache, nice=nice)
                 for p in go_parts(release))


def kind_binary(release: Release, cache: Path | None = None) -> Path | None:
    """The kind binary our build made, if it is there."""
    path = nodes_build.cache_dir(release, cache) / "kind" / "bin" / "kind"
    return path if path.is_file() else None


def work_dir(release: Release, cache: Path | None = None) -> Path:
    return (cache or controlplane_build.cache_root()) / "kindnode" / release.kubernetes


def kind_module_dir(go: str) -> Path:
    """kind's module directory in the Go module cache (`go mod download -json`, from nodes/kind: the pinned version)."""
    module = project_files.project_dir(nodes_build.SOURCE_DIR) / "kind"
    result = subprocess.run([go, "mod", "download", "-json", f"{plan.KIND_MODULE}@{plan.KIND_VERSION}"], cwd=module,
                            capture_output=True, text=True, check=False, timeout=COMMAND_TIMEOUT,
                            env={**os.environ, "GOTOOLCHAIN": "local", "GOWORK": "off"})
    try:
        return Path(json.loads(result.stdout)["Dir"])
    except (ValueError, KeyError) as exc:
        raise NodeImageError(f"`go mod download -json {plan.KIND_MODULE}@{plan.KIND_VERSION}` in {module} gave no "
                             f"module directory (exit {result.returncode}): {result.stderr.strip()[-400:]}") from exc


def _run(argv: list[str], what: str, *, timeout: float = COMMAND_TIMEOUT, **kwargs: Any) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout, **kwargs)
    if result.returncode != 0:
        raise NodeImageError(f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n"
                             f"{(result.stderr or result.stdout).strip()[-800:]}")
    return str(result.stdout)


@dataclass(frozen=True)
class Inputs:
    """Every built file the image is made of: binaries by name, the root filesystem, kind's module."""

    binaries: Mapping[str, Path]
    rootfs: Path
    kind_dir: Path


def gather(release: Release, *, go: str, cache: Path | None = None) -> Inputs:
    """What the previous builds left in the cache; NodeImageError names what to build first."""
    nodes = nodes_build.installed(release, cache)
    control = controlplane_build.installed(release, cache)
    if nodes is None:
        raise PrerequisiteMissing(f"the real node parts of {release.kubernetes} are not built: run `make nodes` "
                             f"(lwsconf nodes build) first")
    if control is None:
        raise PrerequisiteMissing(f"the control plane {release.kubernetes} is not built: run `make controlplane` first")
    binaries: dict[str, Path] = {**nodes.paths, **control}
    root = nodes_build.cache_dir(release, cache)
    for part in go_parts(release):
        for name in part.binaries:
            path = root / part.name / "bin" / name
            if not path.is_file():
                raise PrerequisiteMissing(f"{name} is not built ({path}); `lwsconf kind node-image build` builds it")
            binaries[name] = path
    rootfs = catalog.debootstrap_rootfs(plan.ROOTFS_LABEL, plan.ROOTFS_PACKAGES, plan.ROOTFS_LINKS, cache)
    return Inputs(binaries=binaries, rootfs=rootfs, kind_dir=kind_module_dir(go) / plan.KIND_FILES)


# --- the preloaded images ------------------------------------------------------------------------------------------

def preload_specs(release: Release, inputs: Inputs) -> list[tuple[plan.PreloadImage, images.ImageSpec]]:
    """Each image to preload with the spec that builds it (kubeadm's list from our kubeadm, the sandbox image from
    kind's containerd config)."""
    listed = _run([str(inputs.binaries["kubeadm"]), "config", "images", "list", "--kubernetes-version",
                   f"v{release.kubernetes}"], "kubeadm config images list", timeout=60)
    sandbox = plan.sandbox_image((inputs.kind_dir / "etc" / "containerd" / "config.toml").read_text())
    out = []
    for image in plan.preload(plan.parse_image_list(listed), sandbox):
        binary = inputs.binaries[image.component]
        if image.component == "pause":
            spec = images.ImageSpec(image.reference, files={"/pause": binary}, entrypoint=("/pause",))
        elif image.component == "coredns":
            spec = images.ImageSpec(image.reference, files={"/coredns": binary}, entrypoint=("/coredns",))
        elif image.component == "kube-proxy":
            spec = images.ImageSpec(image.reference, rootfs=inputs.rootfs,
                                    files={"/usr/local/bin/kube-proxy": binary})
        else:
            spec = images.ImageSpec(image.reference, files={f"/usr/local/bin/{image.component}": binary})
        out.append((image, spec))
    return out


def _cached_image(spec: images.ImageSpec, out: Path) -> images.BuiltImage:
    """`images.build` unless `out` was built from the same reference and files (path, size, modification time:
    the builds rename a new binary into place; kube-proxy's image archives the whole root filesystem)."""
    sources = [*spec.files.values(), *([spec.rootfs / "etc" / "os-release"] if spec.rootfs else [])]
    stamp = json.dumps([spec.reference, str(spec.rootfs)] + [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                                                             for p in sources])
    return images.cached_build(spec, out, stamp=stamp)


def _containerd_config(root: Path, state: Path, sock: Path) -> str:
    return f'''version = 3
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
                    "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim"]
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
'''


@contextlib.contextmanager
def _containerd(binaries: Mapping[str, Path], root: Path) -> Iterator[Path]:
    """Our containerd over `root` (the staged image's /var/lib/containerd) on a socket of its own; stopped after."""
    with tempfile.TemporaryDirectory(prefix="lwsconf-kindnode-") as tmp:
        folder = Path(tmp)
        sock = folder / "containerd.sock"
        (folder / "config.toml").write_text(_containerd_config(root, folder / "state", sock))
        with open(folder / "containerd.log", "w") as log:
            proc = subprocess.Popen([str(binaries["containerd"]), "--config", str(folder / "config.toml")],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            def answering() -> None:
                if proc.poll() is not None:
                    raise core.Terminal(f"containerd exited {proc.returncode}: "
                                        f"{(folder / 'containerd.log').read_text()[-600:]}")
                if not sock.exists():
                    raise core.NotYet(f"{sock} not there yet")
            timeout = float(os.environ.get(CONTAINERD_TIMEOUT_ENV) or CONTAINERD_TIMEOUT)
            try:
                core.wait_until(answering, what="our containerd to listen for the preload", timeout=timeout, poll=0.1)
            except (core.WaitTimeout, core.Terminal) as exc:
                raise NodeImageError(f"{exc} ({CONTAINERD_TIMEOUT_ENV} raises the limit)") from None
            yield sock
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def preload_into(staged: Path, binaries: Mapping[str, Path], archives: list[images.BuiltImage]) -> None:
    """Import each archive into the staged root's containerd content store, namespace k8s.io, pinned, not
    unpacked; then `ctr images check` must find all of each image's content there (index, manifest, config, layer)."""
    with _containerd(binaries, staged / "var" / "lib" / "containerd") as sock:
        for built in archives:
            _run([str(binaries["ctr"]), "--address", str(sock), "--namespace", "k8s.io", "images", "import",
                  "--label=io.cri-containerd.pinned=pinned", "--no-unpack", "--digests", str(built.archive)],
                 f"importing {built.reference}")
        checked = _run([str(binaries["ctr"]), "--address", str(sock), "--namespace", "k8s.io", "images", "check"],
                       "checking the preloaded images")
    complete = plan.complete_images(checked)
    missing = sorted({b.reference for b in archives} - complete)
    if missing:
        raise NodeImageError(f"containerd does not have every blob of {missing} after importing them:\n{checked}")


# --- the image's root ------------------------------------------------------------------------------------------------

def _place(root: Path, placement: plan.Placement) -> None:
    target = root / placement.target.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    shutil.copyfile(placement.source, target)
    target.chmod(placement.mode)


def stage(staged: Path, release: Release, inputs: Inputs) -> None:
    """The image's root in `staged`: the root filesystem, then what kind's base Dockerfile and node build add."""
    shutil.rmtree(staged, ignore_errors=True)
    staged.parent.mkdir(parents=True, exist_ok=True)
    _run(["cp", "-a", str(inputs.rootfs), str(staged)], "copying the root filesystem")
    for pattern in plan.REMOVE_GLOBS:
        for path in staged.glob(pattern):
            if path.is_symlink() or path.is_file():
                path.unlink()
    with open(staged / "etc" / "systemd" / "journald.conf", "a") as journald:
        journald.write(plan.JOURNALD_APPEND)
    for placement in [*plan.kind_files(inputs.kind_dir), *plan.binary_files(inputs.binaries)]:
        _place(staged, placement)
    for directory in ("kind", "kind/bin"):
        (staged / directory).chmod(plan.DIR_MODE)
    for rel, text in plan.text_files(release.kubernetes).items():
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        (staged / rel).write_text(text)
    with open(staged / "etc" / "containerd" / "config.toml", "a") as config:
        config.write(plan.containerd_cni_patch())
    spec = json.loads(_run([str(inputs.binaries["ctr"]), "oci", "spec"], "ctr oci spec", timeout=60))
    (staged / "etc" / "containerd" / "cri-base.json").write_text(json.dumps(plan.cri_base_spec(spec), indent=4))
    for rel, target in plan.enable_links().items():
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        (staged / rel).unlink(missing_ok=True)
        (staged / rel).symlink_to(target)
    for rel in plan.EMPTY_DIRS:
        (staged / rel).mkdir(parents=True, exist_ok=True)


# --- the archive -----------------------------------------------------------------------------------------------------

class _Hashing(io.RawIOBase):
    """A write-only file that hashes and counts what passes through to `out`."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out, self.digest, self.size = out, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.digest.update(view)
        self.out.write(view)
        self.size += len(view)
        return len(view)


def write_layer(root: Path, out: Path) -> tuple[str, int]:
    """`root` as one uncompressed layer tar: sorted, root-owned, dated 0; device nodes and sockets left out.

    Returns the layer's digest (its diff id) and size."""
    with open(out, "wb") as raw:
        hashing = _Hashing(raw)
        # stream mode ("w|"): the hashing writer cannot tell or seek
        with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                for name in sorted([*dirnames, *filenames]):
                    full = Path(dirpath) / name
                    mode = os.lstat(full).st_mode
                    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                        continue  # the container runtime makes /dev; sockets are not files
                    info = tar.gettarinfo(str(full), arcname=str(full.relative_to(root)))
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mtime = 0
                    if info.isreg():
                        with open(full, "rb") as f:
                            tar.addfile(info, f)
                    else:
                        tar.addfile(info)
    return "sha256:" + hashing.digest.hexdigest(), hashing.size


@dataclass(frozen=True)
class NodeImage:
    """The built image: its tag, archive, image id (the config's digest) and what it preloads."""

    tag: str
    archive: Path
    image_id: str
    layer_bytes: int
    preloaded: list[dict[str, str]] = field(default_factory=list)
    loaded: bool = False


def write_archive(layer: Path, layer_digest: str, tag: str, out: Path) -> str:
    """The docker-archive of one layer; returns the image id (sha256 of the config)."""
    config = json.dumps(plan.image_config(layer_digest), sort_keys=True, separators=(",", ":")).encode()
    image_id = "sha256:" + hashlib.sha256(config).hexdigest()
    config_name = image_id.removeprefix("sha256:") + ".json"
    layer_name = layer_digest.removeprefix("sha256:") + "/layer.tar"
    manifest = json.dumps(plan.archive_manifest(config_name, layer_name, tag)).encode()
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("manifest.json", manifest), (config_name, config)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(layer_digest.removeprefix("sha256:"))
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        info = tar.gettarinfo(str(layer), arcname=layer_name)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        with open(layer, "rb") as f:
            tar.addfile(info, f)
    partial.replace(out)
    return image_id


def build(release: Release, *, go: str, cache: Path | None = None, load: bool = True,
          docker: str | None = None, notify: Notify = print) -> NodeImage:
    """The kind node image of `release` from what the cache holds, as an archive, and `docker load`ed if `load`."""
    began = time.monotonic()
    inputs = gather(release, go=go, cache=cache)
    folder = work_dir(release, cache)
    folder.mkdir(parents=True, exist_ok=True)
    specs = preload_specs(release, inputs)
    archives = [_cached_image(spec, folder / "images" / f"{image.component}.tar") for image, spec in specs]
    notify(f"kind node image: {len(archives)} images to preload built ({time.monotonic() - began:.0f}s)")
    staged, layer = folder / "root.partial", folder / "layer.tar.partial"
    tag = plan.image_tag(release.kubernetes)
    archive = folder / f"kind-node-v{release.kubernetes}.tar"
    try:
        stage(staged, release, inputs)
        preload_into(staged, inputs.binaries, archives)
        notify(f"kind node image: root staged and images preloaded ({time.monotonic() - began:.0f}s)")
        layer_digest, layer_bytes = write_layer(staged, layer)
        shutil.rmtree(staged, ignore_errors=True)
        image_id = write_archive(layer, layer_digest, tag, archive)
        notify(f"kind node image: archive written ({time.monotonic() - began:.0f}s)")
    finally:  # nothing half-made stays: the staged root and the loose layer are over a GiB each
        shutil.rmtree(staged, ignore_errors=True)
        layer.unlink(missing_ok=True)
    preloaded = [{"reference": image.reference, "digest": built.manifest_digest, "made_of": image.made_of}
                 for (image, _), built in zip(specs, archives, strict=True)]
    loaded = False
    if load:
        engine = docker or shutil.which("docker")
        if engine is None:
            raise PrerequisiteMissing(f"the archive {archive} is built, but `docker` is not on PATH to load it")
        before = subprocess.run([engine, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT, check=False).stdout.strip()
        _run([engine, "load", "-i", str(archive)], f"docker load of {archive}")
        loaded = True
        if before and before != image_id:  # our previous build of this tag: untagged now, a GiB nobody names
            subprocess.run([engine, "image", "rm", before], capture_output=True, timeout=COMMAND_TIMEOUT, check=False)
    made = NodeImage(tag=tag, archive=archive, image_id=image_id, layer_bytes=layer_bytes, preloaded=preloaded,
                     loaded=loaded)
    (folder / "image.json").write_text(json.dumps({**made.__dict__, "archive": str(archive),
                                                   "seconds": round(time.monotonic() - began, 1)}, indent=2) + "\n")
    return made
