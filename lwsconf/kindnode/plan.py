"""What the offline kind node image holds and how it starts. Pure: no I/O beyond listing kind's files folder.

kind builds its node image in two steps: a base image (kind v0.33.0 `images/base/Dockerfile`: a Debian userspace
with systemd and the networking tools, kind's node files from `images/base/files/`, containerd, runc, crictl and
four CNI plugins, then one squashed layer with `ENV container=docker`, `STOPSIGNAL SIGRTMIN+3` and the entrypoint
`/usr/local/bin/entrypoint /sbin/init`), then the node image (`pkg/build/nodeimage/buildcontext.go`: kubelet,
kubeadm and kubectl into /usr/bin, /kind/version, the images `kubeadm config images list` names with the pause image
replaced by the containerd config's `sandbox_image`, imported with `ctr -n k8s.io images import --no-unpack`
(`imageimporter.go`), and the default CNI and storage manifests under /kind/manifests). We do the same from our
parts, on this machine, with the choices below (each a difference from kind's own image, said where it is made):

- The root filesystem is Debian bookworm minbase from debootstrap with `ROOTFS_PACKAGES`: kind's package list minus
  what serves only rootless nodes (fuse-overlayfs), storage e2e tests (nfs-common, open-iscsi) and downloads (curl).
- kind's node files are read from its Go module (`kind_files`), placed with the modes its Dockerfile gives them.
- Our binaries (`BINARY_TARGETS`): the same paths as kind's image. No containerd-fuse-overlayfs-grpc (rootless only).
- /etc/containerd/cri-base.json is `ctr oci spec` of our containerd with kind's two edits (`cri_base_spec`).
- Preloaded images (`preload`): each name kubeadm lists, pause replaced by the sandbox image, built from our
  binaries; the CoreDNS and etcd binaries are ours under kubeadm's tags (`PreloadImage.made_of` says which).
- No kindnetd (`DEFAULT_CNI_MANIFEST`): kind's default CNI is an image from a registry, and the Go module proxy does
  not serve its module. Instead the node's own containerd writes the CNI config from the node's pod CIDR, which the
  kubelet hands it (containerd's `conf_template`, `cni_template`: ptp and host-local, no masquerade, routes to the
  pod and Service subnets only, so no pod has a route out); kind's `kubectl apply` of the manifest gets a ConfigMap
  saying so. What kindnetd also does, routes between nodes' pod CIDRs, the kind backend does after the nodes are
  Ready (`fixtures/backends/kind/cluster.py`, for this image only). No default storage manifest: kind then installs
  its own fallback StorageClass (kind pkg/cluster/internal/create/actions/installstorage/storage.go), no provisioner.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KIND_MODULE = "sigs.k8s.io/kind"
KIND_VERSION = "v0.33.0"
"""Pinned by nodes/kind/go.mod; the node files are read from this version's module directory."""
KIND_FILES = "images/base/files"
IMAGE_REPOSITORY = "lwsconf.local/kind-node"

ROOTFS_LABEL = "kindnode"
ROOTFS_PACKAGES = (
    "systemd", "conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux", "mount", "kmod",
    "libseccomp2", "pigz", "e2fsprogs", "bash", "ca-certificates", "jq", "procps",
)
"""kind v0.33.0 images/base/Dockerfile's `clean-install` list without fuse-overlayfs, nfs-common, open-iscsi, curl."""
ROOTFS_LINKS = {"sbin/init": "/usr/lib/systemd/systemd"}
"""What kind's Dockerfile links after installing (`ln -s /usr/lib/systemd/systemd /sbin/init`)."""

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENTRYPOINT = ("/usr/local/bin/entrypoint", "/sbin/init")
ENV = (PATH_ENV, "container=docker")
"""systemd reads `container` to know it runs in a container (kind's `ENV container=docker`)."""
STOP_SIGNAL = "SIGRTMIN+3"
"""systemd halts on SIGRTMIN+3; SIGTERM would make it re-execute (kind's STOPSIGNAL)."""

DIR_MODE, SCRIPT_MODE, FILE_MODE = 0o755, 0o755, 0o644


@dataclass(frozen=True)
class FileGroup:
    """One COPY line of kind's base Dockerfile: the files directly in `source` (under images/base/files) go into
    `target` with `mode`; `recursive` for a whole tree (`COPY files/kind/ /kind/`)."""

    source: str
    target: str
    mode: int
    recursive: bool = False


KIND_FILE_GROUPS = (
    FileGroup("usr/local/bin", "/usr/local/bin", SCRIPT_MODE),
    FileGroup("kind", "/kind", FILE_MODE, recursive=True),
    FileGroup("kind/bin", "/kind/bin", SCRIPT_MODE),
    FileGroup("LICENSES", "/LICENSES", FILE_MODE),
    FileGroup("etc", "/etc", FILE_MODE),
    FileGroup("etc/containerd", "/etc/containerd", FILE_MODE),
    FileGroup("etc/default", "/etc/default", FILE_MODE),
    FileGroup("etc/sysctl.d", "/etc/sysctl.d", FILE_MODE),
    FileGroup("etc/systemd/system", "/etc/systemd/system", FILE_MODE),
    FileGroup("etc/systemd/system/kubelet.service.d", "/etc/systemd/system/kubelet.service.d", FILE_MODE),
)
"""kind v0.33.0 images/base/Dockerfile's COPY lines, in order (a later line wins: kind/bin's scripts are 0755)."""


@dataclass(frozen=True)
class Placement:
    """One file of the image: where it comes from on this machine, where it goes, and its mode."""

    source: Path
    target: str
    mode: int


def kind_files(files_dir: Path) -> list[Placement]:
    """kind's node files as its base Dockerfile places them, from `files_dir` (<kind module>/images/base/files).

    Raises:
        FileNotFoundError: `files_dir` lacks a folder a COPY line names (a kind version this plan does not know).
    """
    placed: dict[str, Placement] = {}
    for group in KIND_FILE_GROUPS:
        folder = files_dir / group.source
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: kind {KIND_VERSION}'s base image files are not where its Dockerfile "
                                    "has them")
        found = sorted(p for p in (folder.rglob("*") if group.recursive else folder.iterdir()) if p.is_file())
        for path in found:
            target = f"{group.target}/{path.relative_to(folder).as_posix()}"
            placed[target] = Placement(path, target, group.mode)
    return [placed[t] for t in sorted(placed)]


BINARY_TARGETS = {
    "kubelet": "/usr/bin/kubelet", "kubeadm": "/usr/bin/kubeadm", "kubectl": "/usr/bin/kubectl",
    "containerd": "/usr/local/bin/containerd", "containerd-shim-runc-v2": "/usr/local/bin/containerd-shim-runc-v2",
    "ctr": "/usr/local/bin/ctr", "crictl": "/usr/local/bin/crictl", "runc": "/usr/local/sbin/runc",
    "host-local": "/opt/cni/bin/host-local", "loopback": "/opt/cni/bin/loopback", "ptp": "/opt/cni/bin/ptp",
    "portmap": "/opt/cni/bin/portmap",
}
"""Where kind puts each binary: Kubernetes' into /usr/bin (its kubelet.service runs /usr/bin/kubelet), the runtime's
and the CNI plugins' as the base Dockerfile does."""


def binary_files(paths: Mapping[str, Path]) -> list[Placement]:
    """Our built binaries at kind's paths; KeyError names the first one `paths` lacks."""
    missing = sorted(set(BINARY_TARGETS) - set(paths))
    if missing:
        raise KeyError(f"binaries missing for the kind node image: {', '.join(missing)}")
    return [Placement(paths[name], target, SCRIPT_MODE) for name, target in sorted(BINARY_TARGETS.items())]


# --- systemd, as the base Dockerfile's RUN lines leave it -----------------------------------------------------------

REMOVE_GLOBS = (
    "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
    "lib/systemd/system/multi-user.target.wants/*",
    "etc/systemd/system/*.wants/*",
    "lib/systemd/system/local-fs.target.wants/*",
    "lib/systemd/system/sockets.target.wants/*udev*",
    "lib/systemd/system/sockets.target.wants/*initctl*",
    "lib/systemd/system/basic.target.wants/*",
)
"""Units kind's base image removes from systemd's start-up (paths in the root)."""
ENABLED_UNITS = ("kubelet.service", "containerd.service", "undo-mount-hacks.service")
"""`systemctl enable` in kind's Dockerfile: each unit's [Install] says WantedBy=multi-user.target."""
MASKED_UNITS = ("systemd-binfmt.service",)
JOURNALD_APPEND = "ReadKMsg=no\n"
EMPTY_DIRS = ("etc/kubernetes/manifests",)


def enable_links() -> dict[str, str]:
    """Symlinks (path in the root -> target) that enabling and masking the units makes."""
    links = {f"etc/systemd/system/multi-user.target.wants/{unit}": f"/etc/systemd/system/{unit}"
             for unit in ENABLED_UNITS}
    links.update({f"etc/systemd/system/{unit}": "/dev/null" for unit in MASKED_UNITS})
    return links


MOUNT_HOOK = "/kind/bin/mount-product-files.sh"


def cri_base_spec(oci_spec: Mapping[str, Any]) -> dict[str, Any]:
    """kind's two edits to `ctr oci spec`: the product-files hook appended to createContainer, rlimits removed."""
    spec: dict[str, Any] = {**oci_spec}
    hooks = dict(spec.get("hooks") or {})
    hooks["createContainer"] = [*(hooks.get("createContainer") or []), {"path": MOUNT_HOOK}]
    spec["hooks"] = hooks
    spec["process"] = {k: v for k, v in (spec.get("process") or {}).items() if k != "rlimits"}
    return spec


# --- images preloaded into the node's containerd ---------------------------------------------------------------------

def sandbox_image(containerd_config: str) -> str:
    """The `sandbox_image` of kind's containerd config (kind's findSandboxImage); ValueError when there is none."""
    match = re.search(r'sandbox_image\s+=\s+"([^\n"]+)"', containerd_config)
    if match is None:
        raise ValueError("kind's containerd config names no sandbox_image")
    return match[1]


@dataclass(frozen=True)
class PreloadImage:
    """One image preloaded into the node: its reference, what makes it, and in words what it is."""

    reference: str
    component: str
    """pause, etcd, coredns, kube-proxy or a control-plane binary's name: what build.py makes it from."""
    made_of: str


def _component(reference: str) -> str:
    name = reference.rsplit("/", 1)[-1].split(":", 1)[0]
    return name


def preload(kubeadm_images: Sequence[str], sandbox: str) -> list[PreloadImage]:
    """The images to preload, as kind chooses them: kubeadm's list without its pause, plus the sandbox image.

    Raises:
        ValueError: kubeadm lists an image none of our builds makes.
    """
    out: list[PreloadImage] = []
    for reference in [*(r for r in kubeadm_images if "pause" not in r), sandbox]:
        component = _component(reference)
        tag = reference.rsplit(":", 1)[-1]
        if component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            made_of = f"our {component} {tag} (controlplane build), static, alone in the image"
        elif component == "kube-proxy":
            made_of = f"our kube-proxy {tag} over the node's Debian root filesystem (iptables, nftables, conntrack)"
        elif component == "etcd":
            made_of = "our etcd (controlplane build), static, alone in the image"
        elif component == "coredns":
            made_of = ("our CoreDNS v1.15.0 build (nodes/coredns: no forward, loop, reload, loadbalance or "
                       "prometheus plugin) under kubeadm's tag")
        elif component == "pause":
            made_of = "our pause (nodes/pause), static"
        else:
            raise ValueError(f"kubeadm lists {reference}, which no build of ours makes")
        out.append(PreloadImage(reference, component, made_of))
    return out


def parse_image_list(output: str) -> list[str]:
    """`kubeadm config images list` output: one reference per line."""
    return [line.strip() for line in output.splitlines() if line.strip()]


def complete_images(check_output: str) -> set[str]:
    """The references `ctr images check` reports with all their content present (STATUS `complete (n/n)`)."""
    out = set()
    for line in check_output.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4 and fields[3] == "complete":
            out.add(fields[0])
    return out


# --- manifests kind applies ------------------------------------------------------------------------------------------

DEFAULT_CNI_MANIFEST = """\
# lwsconf's kind node image runs no CNI daemon: kind's default (kindnetd) is an image from a registry, and no
# offline build of it exists here. Each node's containerd writes its CNI config from the node's pod CIDR
# (conf_template, /etc/containerd/lwsconf-cni.template); lwsconf's kind backend routes the nodes' pod CIDRs.
apiVersion: v1
kind: ConfigMap
metadata:
  name: lwsconf-kind-node-cni
  namespace: kube-system
data:
  cni: "containerd conf_template: ptp + host-local from the node's pod CIDR, no masquerade"
"""

POD_SUBNET = "10.244.0.0/16"
SERVICE_SUBNET = "10.96.0.0/16"
"""kind's default networking.podSubnet and serviceSubnet (kind v0.33.0 pkg/apis/config/v1alpha4/default.go), which
the kind backend's cluster config keeps."""
CNI_TEMPLATE = "/etc/containerd/lwsconf-cni.template"


def cni_template(pod_subnet: str = POD_SUBNET, service_subnet: str = SERVICE_SUBNET) -> str:
    """containerd's CNI config template (a Go template: containerd fills {{.PodCIDR}} with the node's pod CIDR, which
    the kubelet hands it): a veth per pod (ptp), addresses from the node's pod CIDR, no masquerade, and routes to the
    cluster's pod and Service subnets only: no default route, so a pod has no way out of the cluster."""
    ipam = {"type": "host-local", "ranges": [[{"subnet": "{{.PodCIDR}}"}]],
            "routes": [{"dst": pod_subnet}, {"dst": service_subnet}]}
    conf = {"cniVersion": "1.0.0", "name": "lwsconf-kind", "plugins": [
        {"type": "ptp", "ipMasq": False, "mtu": 1500, "ipam": ipam},
        {"type": "portmap", "capabilities": {"portMappings": True}}]}
    return json.dumps(conf, indent=2) + "\n"


def containerd_cni_patch(template: str = CNI_TEMPLATE) -> str:
    """What is appended to kind's containerd config (version 2; it has no cni table of its own)."""
    return f'\n[plugins."io.containerd.grpc.v1.cri".cni]\n  conf_template = "{template}"\n'


def text_files(kubernetes: str) -> dict[str, str]:
    """Files written into the image from text (path in the root -> content)."""
    return {"kind/version": f"v{kubernetes}\n", "kind/manifests/default-cni.yaml": DEFAULT_CNI_MANIFEST,
            CNI_TEMPLATE.lstrip("/"): cni_template()}


# --- the image's config and Docker archive -------------------------------------------------------------------------

def image_tag(kubernetes: str) -> str:
    return f"{IMAGE_REPOSITORY}:v{kubernetes}"


def image_config(layer_digest: str, *, created: str = "1970-01-01T00:00:00Z") -> dict[str, Any]:
    """The image config (one layer): kind's entrypoint, env and stop signal."""
    return {"architecture": "amd64", "os": "linux", "created": created,
            "config": {"Env": list(ENV), "Entrypoint": list(ENTRYPOINT), "Cmd": None, "StopSignal": STOP_SIGNAL,
                       "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            "history": [{"created": created, "created_by": "lwsconf.kindnode", "comment": "built offline"}]}


def archive_manifest(config_name: str, layer_name: str, tag: str) -> list[dict[str, Any]]:
    """The docker-archive `manifest.json` `docker load` reads (Docker 20.10 needs it; an OCI layout alone is not
    enough there)."""
    return [{"Config": config_name, "RepoTags": [tag], "Layers": [layer_name]}]
