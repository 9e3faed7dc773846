"""lwsconf.kindnode.plan: where kind's files and our binaries go, the image's config, the images preloaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwsconf.kindnode import plan

KUBEADM_1_37_2 = """registry.k8s.io/kube-apiserver:v1.37.2
registry.k8s.io/kube-controller-manager:v1.37.2
registry.k8s.io/kube-scheduler:v1.37.2
registry.k8s.io/kube-proxy:v1.37.2
registry.k8s.io/coredns/coredns:v1.14.6
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.7.0-0
"""
"""`kubeadm config images list --kubernetes-version v1.37.2` of our kubeadm build, as it printed it here."""


def _kind_files(root: Path) -> Path:
    """A folder shaped like kind v0.33.0's images/base/files (the names its Dockerfile copies)."""
    files = {"usr/local/bin/entrypoint": "#!/bin/bash\n", "usr/local/bin/clean-install": "#!/bin/sh\n",
             "kind/README.txt": "x\n", "kind/bin/mount-product-files.sh": "#!/bin/bash\n",
             "LICENSES/README.txt": "x\n", "etc/crictl.yaml": "runtime-endpoint: x\n",
             "etc/containerd/config.toml": 'sandbox_image = "registry.k8s.io/pause:3.10"\n',
             "etc/default/kubelet": "KUBELET_EXTRA_ARGS=\n", "etc/sysctl.d/10-network-magic.conf": "x\n",
             "etc/systemd/system/kubelet.service": "[Install]\nWantedBy=multi-user.target\n",
             "etc/systemd/system/kubelet.service.d/10-kubeadm.conf": "x\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_kind_files_land_where_its_base_dockerfile_copies_them_with_its_modes(tmp_path: Path) -> None:
    placed = {p.target: p.mode for p in plan.kind_files(_kind_files(tmp_path))}
    assert placed == {
        "/usr/local/bin/entrypoint": 0o755, "/usr/local/bin/clean-install": 0o755,
        "/kind/README.txt": 0o644, "/kind/bin/mount-product-files.sh": 0o755,
        "/LICENSES/README.txt": 0o644, "/etc/crictl.yaml": 0o644, "/etc/containerd/config.toml": 0o644,
        "/etc/default/kubelet": 0o644, "/etc/sysctl.d/10-network-magic.conf": 0o644,
        "/etc/systemd/system/kubelet.service": 0o644,
        "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf": 0o644}


def test_a_kind_version_without_a_folder_its_dockerfile_names_is_refused(tmp_path: Path) -> None:
    files = _kind_files(tmp_path)
    for item in (files / "etc" / "sysctl.d").iterdir():
        item.unlink()
    (files / "etc" / "sysctl.d").rmdir()
    with pytest.raises(FileNotFoundError, match="sysctl.d"):
        plan.kind_files(files)


def test_binaries_go_where_kind_puts_them_and_a_missing_one_is_named(tmp_path: Path) -> None:
    paths = {name: tmp_path / name for name in plan.BINARY_TARGETS}
    placed = {p.target: p.source.name for p in plan.binary_files(paths)}
    assert placed["/usr/bin/kubelet"] == "kubelet"  # kind's kubelet.service runs /usr/bin/kubelet
    assert placed["/usr/bin/kubeadm"] == "kubeadm" and placed["/usr/bin/kubectl"] == "kubectl"
    assert placed["/usr/local/sbin/runc"] == "runc" and placed["/usr/local/bin/crictl"] == "crictl"
    assert sorted(t for t in placed if t.startswith("/opt/cni/bin/")) == [
        "/opt/cni/bin/host-local", "/opt/cni/bin/loopback", "/opt/cni/bin/portmap", "/opt/cni/bin/ptp"]
    del paths["kubeadm"]
    with pytest.raises(KeyError, match="kubeadm"):
        plan.binary_files(paths)


def test_the_image_starts_systemd_as_kinds_base_image_does() -> None:
    config = plan.image_config("sha256:" + "a" * 64)
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/entrypoint", "/sbin/init"]
    assert "container=docker" in config["config"]["Env"]
    assert config["config"]["StopSignal"] == "SIGRTMIN+3"
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:" + "a" * 64]}
    assert plan.ROOTFS_LINKS == {"sbin/init": "/usr/lib/systemd/systemd"}


def test_the_archive_manifest_is_what_docker_load_reads() -> None:
    assert plan.archive_manifest("c.json", "l/layer.tar", "lwsconf.local/kind-node:v1.37.2") == [
        {"Config": "c.json", "RepoTags": ["lwsconf.local/kind-node:v1.37.2"], "Layers": ["l/layer.tar"]}]
    assert plan.image_tag("1.37.2") == "lwsconf.local/kind-node:v1.37.2"


def test_units_are_enabled_and_masked_as_kinds_dockerfile_does() -> None:
    links = plan.enable_links()
    assert links["etc/systemd/system/multi-user.target.wants/kubelet.service"] == "/etc/systemd/system/kubelet.service"
    assert links["etc/systemd/system/multi-user.target.wants/containerd.service"].endswith("/containerd.service")
    assert links["etc/systemd/system/systemd-binfmt.service"] == "/dev/null"


def test_cri_base_spec_gets_the_product_files_hook_and_loses_rlimits() -> None:
    spec = {"ociVersion": "1.3.0", "process": {"cwd": "/", "rlimits": [{"type": "RLIMIT_NOFILE"}]},
            "hooks": {"createContainer": [{"path": "/other"}]}}
    made = plan.cri_base_spec(spec)
    assert made["hooks"]["createContainer"] == [{"path": "/other"}, {"path": "/kind/bin/mount-product-files.sh"}]
    assert made["process"] == {"cwd": "/"}
    assert spec["process"]["rlimits"]  # the input is left alone
    assert plan.cri_base_spec({})["hooks"] == {"createContainer": [{"path": "/kind/bin/mount-product-files.sh"}]}


def test_preloaded_images_are_kubeadms_names_with_the_sandbox_image_for_its_pause() -> None:
    config = '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n'
    sandbox = plan.sandbox_image(config)
    made = plan.preload(plan.parse_image_list(KUBEADM_1_37_2), sandbox)
    assert [i.reference for i in made] == [
        "registry.k8s.io/kube-apiserver:v1.37.2", "registry.k8s.io/kube-controller-manager:v1.37.2",
        "registry.k8s.io/kube-scheduler:v1.37.2", "registry.k8s.io/kube-proxy:v1.37.2",
        "registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/etcd:3.7.0-0", "registry.k8s.io/pause:3.10"]
    assert [i.component for i in made] == ["kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                           "kube-proxy", "coredns", "etcd", "pause"]
    coredns = next(i for i in made if i.component == "coredns")
    assert "v1.15.0" in coredns.made_of and "no forward" in coredns.made_of  # says it is not kubeadm's CoreDNS


def test_an_image_no_build_of_ours_makes_is_refused() -> None:
    with pytest.raises(ValueError, match="registry.k8s.io/other:v1"):
        plan.preload(["registry.k8s.io/other:v1"], "registry.k8s.io/pause:3.10")
    with pytest.raises(ValueError, match="sandbox_image"):
        plan.sandbox_image("version = 2\n")


def test_the_default_cni_manifest_says_there_is_none_and_version_is_the_release() -> None:
    files = plan.text_files("1.37.2")
    assert files["kind/version"] == "v1.37.2\n"
    cni = files["kind/manifests/default-cni.yaml"]
    assert "kind: ConfigMap" in cni and "kindnetd" in cni
    assert "would you kindly" not in cni  # kind templates or patches a manifest carrying that phrase
    assert "kind/manifests/default-storage.yaml" not in files  # kind then installs its own fallback class


CTR_IMAGES_CHECK = """\
REF                                                                                       TYPE                                       DIGEST                                                                  STATUS         SIZE              UNPACKED
import-2026-12-06@sha256:1d6264c1b57eb36656aacf4d36479218ae85d2fb9b85c12527e7cd1c92f9caf3 application/vnd.oci.image.index.v1+json    sha256:1d6264c1b57eb36656aacf4d36479218ae85d2fb9b85c12527e7cd1c92f9caf3 complete (2/2) 23.8 MiB/23.8 MiB false
registry.k8s.io/etcd:3.7.0-0                                                              application/vnd.oci.image.manifest.v1+json sha256:d79c6c4bb698b07e6c776044be6eb12988c478011942591ac0ab5e65134ed4c6 complete (2/2) 23.8 MiB/23.8 MiB false
registry.k8s.io/pause:3.10                                                                application/vnd.oci.image.manifest.v1+json sha256:1cc7290a00456194cf208351a047bd7aafa9ab1293ecf0462650128306b782ea incomplete (1/2) 0.0 B/1.4 MiB   false
"""  # noqa: E501
"""`ctr images check` of our containerd v2.4.2 after `ctr images import --no-unpack --digests` of etcd and pause (the
pause line edited to show a missing blob)."""


def test_only_images_with_all_their_content_count_as_preloaded() -> None:
    assert plan.complete_images(CTR_IMAGES_CHECK) == {
        "import-2026-12-06@sha256:1d6264c1b57eb36656aacf4d36479218ae85d2fb9b85c12527e7cd1c92f9caf3",
        "registry.k8s.io/etcd:3.7.0-0"}
