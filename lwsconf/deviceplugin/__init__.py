"""The kubelet device-plugin API (v1beta1) and a fake GPU device plugin speaking it.

Why this exists: LeaderWorkerSet workloads ask for `nvidia.com/gpu`. To test them without GPUs, nodes
must advertise fake GPUs the same way real ones are advertised: a device plugin registers with the
kubelet over gRPC on a unix socket, streams its device list (ListAndWatch) and answers Allocate with
the env a container needs. `plugin.FakeGPUPlugin` is such a plugin; it runs against a real kubelet
(the kind backend deploys it as a DaemonSet, `manifests/deviceplugin/daemonset.yaml`) and against the
simulator's kubelet side (`lwsconf.sim.nodes.devicemanager`).

Contents:
  * `v1beta1.proto` — our own definition of the wire API, matching upstream's package, services,
    messages and field numbers (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto);
    `v1beta1_pb2*.py{,i}` are generated from it by `regenerate.sh` (do not edit them).
  * `plugin.py` — `FakeGPUPlugin`; `cli.py` — `lwsconf deviceplugin`.

This package must not import the simulator: it ships alone in the plugin's container image.
"""

from __future__ import annotations

# Constants of the kubelet's side of the API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/constants.go).
VERSION = "v1beta1"
SUPPORTED_VERSIONS = (VERSION,)
DEFAULT_SOCKET_DIR = "/var/lib/kubelet/device-plugins"
KUBELET_SOCKET = "kubelet.sock"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"

# Unix socket paths (sockaddr_un.sun_path) hold 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107


def check_socket_path(path: str) -> None:
    """Raise ValueError with a fix when a unix socket path is too long for the kernel."""
    size = len(path.encode())
    if size > MAX_SOCKET_PATH:
        raise ValueError(
            f"unix socket path {path!r} is {size} bytes; the kernel allows at most {MAX_SOCKET_PATH}: "
            "use a shorter socket directory (e.g. tempfile.mkdtemp(prefix='dp'))"
        )
