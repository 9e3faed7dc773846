"""lwsconf.kindnode.build for real: the kind node image built from the cached parts, and kind driven with it.

Runs under `make kind-node-image` (LWSCONF_KINDNODE_TESTS=1): a build is about a minute and a GiB of disk, so
`make unit` skips it. Skips, saying why, when not root (the preload runs our containerd over the image's root), when
the parts are not built (`make kind-node-image` builds kind, kubeadm and crictl after `make controlplane nodes`), or
when debootstrap is missing. Without a Docker daemon the archive is built and read here but not loaded or run.

The second test drives the real `kind create cluster --image <ours>` through the kind backend, only where Docker
refuses `--privileged` containers as this project's machines do; there it asserts the backend's one message carrying
kind's refusal. Where Docker can run privileged containers it skips: a node starting there is not verified here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from fixtures.backends.kind import cluster as kind_cluster
from lwsconf.controlplane import build as controlplane_build
from lwsconf.controlplane import versions
from lwsconf.kindnode import build, plan
from lwsconf.realnodes import build as nodes_build

RELEASE = versions.DEFAULT
TAG = plan.image_tag(RELEASE.kubernetes)


def _docker() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return None
    answered = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=30, check=False)
    return docker if answered.returncode == 0 else None


def _require_parts() -> str:
    if os.environ.get("LWSCONF_KINDNODE_TESTS") != "1":
        pytest.skip("builds the kind node image (about a minute, a GiB of disk): run by `make kind-node-image`, or "
                    "set LWSCONF_KINDNODE_TESTS=1")
    if os.geteuid() != 0:
        pytest.skip("the kind node image's preload runs containerd over the image's root: run as root")
    if shutil.which("debootstrap") is None:
        pytest.skip("no debootstrap (apt-get install debootstrap)")
    if nodes_build.installed(RELEASE) is None or controlplane_build.installed(RELEASE) is None:
        pytest.skip(f"the control plane and node parts of {RELEASE.kubernetes} are not built (make controlplane nodes)")
    root = nodes_build.cache_dir(RELEASE)
    missing = [n for p in build.go_parts(RELEASE) for n in p.binaries if not (root / p.name / "bin" / n).is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not built (make kind-node-image)")
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go: kind's node files are read from its module through `go mod download`")
    return go


@pytest.fixture(scope="module")
def node_image() -> build.NodeImage:
    go = _require_parts()
    return build.build(RELEASE, go=go, load=_docker() is not None, notify=lambda line: None)


def _layer_members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as outer:
        manifest = json.loads(outer.extractfile("manifest.json").read())  # type: ignore[union-attr]
        layer = outer.extractfile(manifest[0]["Layers"][0])
        assert layer is not None
        with tarfile.open(fileobj=layer, mode="r|") as inner:
            return {m.name: m for m in inner}


def test_the_archive_holds_kinds_files_our_binaries_and_the_preloaded_store(node_image: build.NodeImage) -> None:
    with tarfile.open(node_image.archive) as outer:
        manifest = json.loads(outer.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(outer.extractfile(manifest[0]["Config"]).read())  # type: ignore[union-attr]
    assert manifest[0]["RepoTags"] == [TAG]
    assert config["config"]["Entrypoint"] == list(plan.ENTRYPOINT)
    assert config["config"]["StopSignal"] == plan.STOP_SIGNAL
    members = _layer_members(node_image.archive)
    for path in ("usr/bin/kubelet", "usr/bin/kubeadm", "usr/bin/kubectl", "usr/local/bin/containerd",
                 "usr/local/sbin/runc", "usr/local/bin/crictl", "opt/cni/bin/ptp", "usr/local/bin/entrypoint",
                 "kind/version", "kind/manifests/default-cni.yaml", "etc/containerd/cri-base.json",
                 "etc/containerd/config.toml", "etc/containerd/lwsconf-cni.template",
                 "var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db"):
        assert path in members, path
    assert members["usr/local/bin/entrypoint"].mode & 0o111
    assert members["usr/sbin/init"].linkname == "/usr/lib/systemd/systemd"  # bookworm's /sbin is a link to usr/sbin
    assert members["etc/systemd/system/multi-user.target.wants/kubelet.service"].issym()
    blobs = [n for n in members if n.startswith("var/lib/containerd/io.containerd.content.v1.content/blobs/")]
    assert len(blobs) >= 3 * len(node_image.preloaded)  # index/manifest, config and layer of each image
    assert [i["reference"] for i in node_image.preloaded][-1] == "registry.k8s.io/pause:3.10"


def test_docker_runs_the_loaded_images_binaries(node_image: build.NodeImage) -> None:
    docker = _docker()
    if docker is None or not node_image.loaded:
        pytest.skip("no Docker daemon answering: the archive was built but not loaded")
    inspect = json.loads(subprocess.run([docker, "image", "inspect", TAG], capture_output=True, text=True,
                                        timeout=60, check=True).stdout)[0]
    assert inspect["Id"] == node_image.image_id
    assert "container=docker" in inspect["Config"]["Env"] and inspect["Config"]["StopSignal"] == "SIGRTMIN+3"
    ran = subprocess.run([docker, "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", TAG, "-c",
                          "kubeadm version -o short; kubelet --version; cat /kind/version; "
                          "grep -c conf_template /etc/containerd/config.toml"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:4] == [f"v{RELEASE.kubernetes}", f"Kubernetes v{RELEASE.kubernetes}",
                                          f"v{RELEASE.kubernetes}", "1"]


def test_kind_create_with_our_image_is_refused_here_and_the_backend_says_so_in_one_message(
        node_image: build.NodeImage, monkeypatch: pytest.MonkeyPatch) -> None:
    docker = _docker()
    if docker is None or not node_image.loaded:
        pytest.skip("no Docker daemon answering")
    probe = subprocess.run([docker, "run", "--rm", "--privileged", "--network", "none", "--entrypoint", "/bin/true",
                            TAG], capture_output=True, text=True, timeout=120, check=False)
    if probe.returncode == 0:
        pytest.skip("this Docker runs privileged containers: a kind node could start here, which this test does not "
                    "cover (run the suite with --cluster=kind --kind-node-image instead)")
    assert kind_cluster.PRIVILEGED_REFUSED in probe.stderr, probe.stderr
    kind = build.kind_binary(RELEASE)
    assert kind is not None
    monkeypatch.setenv("PATH", f"{kind.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    options = kind_cluster.KindOptions(node_image=TAG, run_id="kindnode")
    with pytest.raises(kind_cluster.KindError) as info, kind_cluster.open_kind_cluster(options, notify=lambda m: None):
        pytest.fail("a kind node started on a machine whose Docker refuses --privileged")
    message = str(info.value)
    lines = message.splitlines()
    assert lines[1].startswith("  ERROR: failed to create cluster: command \"docker run --name lwsconf-kindnode")
    assert "unable to apply caps: operation not permitted" in message
    assert "--cluster=local --nodes=real" in message and "Traceback" not in message
    left = subprocess.run([docker, "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster=lwsconf-kindnode"],
                          capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert left == []
