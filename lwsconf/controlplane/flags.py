"""The command lines of the local control plane's components, and the kubeconfigs they read.

Pure functions (no I/O but reading the certificates into a kubeconfig), so the unit tests can check
every flag without the binaries. What a kind cluster of the same release runs is the model: kind
starts the control plane with kubeadm, whose kube-apiserver adds only `NodeRestriction` to the
default admission plugins (`--enable-admission-plugins=NodeRestriction`, kubeadm's
`cmd/kubeadm/app/phases/controlplane/manifests.go`) and sets no feature gates; kind itself adds none
by default (its `featureGates`/`runtimeConfig` are empty unless a config sets them). So: the release's
default admission chain plus NodeRestriction, no feature gates. MutatingAdmissionPolicy: the
`admissionregistration.k8s.io/v1` API (GA in 1.36) is served by default by both pinned releases, so no
`--runtime-config` is needed (see `MAP_RUNTIME_CONFIG`).

Loopback only: every component binds 127.0.0.1, etcd listens on 127.0.0.1, the API server advertises
127.0.0.1, and ClusterIPs come from the loopback `service_range` the caller reserved (the backend's
kube-proxy binds them). kube-controller-manager runs every default controller plus kubeadm's two
token controllers, with no node IPAM (`--allocate-node-cidrs=false`: our nodes' pod ranges are the
simulator's loopback ones, set by the node agents).
"""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

from lwsconf.controlplane import pki

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMISSION_PLUGINS = "NodeRestriction"
"""Enabled on top of the release's defaults, as kubeadm (hence kind) does."""
MAP_RUNTIME_CONFIG: tuple[str, ...] = ()
"""`--runtime-config` entries: none, MutatingAdmissionPolicy v1 is on by default in 1.36 and 1.37."""
CONTROLLERS = "*,bootstrapsigner,tokencleaner"
"""kubeadm's `--controllers`: every default controller and the two bootstrap-token ones."""


def kubernetes_service_ip(service_range: str) -> str:
    """The first address of the range: kube-apiserver gives it to the `kubernetes` Service."""
    return str(next(ipaddress.ip_network(service_range).hosts()))


def etcd_argv(binary: Path, data: Path, client_port: int, peer_port: int) -> list[str]:
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [str(binary), "--name", "lwsconf", "--data-dir", str(data),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"lwsconf={peer}", "--initial-cluster-state", "new",
            "--unsafe-no-fsync", "--log-level", "warn"]


def egress_selector_configuration(uds: Path) -> dict[str, object]:
    """kube-apiserver's EgressSelectorConfiguration: its `cluster` traffic through an HTTP CONNECT proxy
    on unix socket `uds` (`lwsconf.localcluster.egress` says which traffic that is and why UDS: over TCP
    kube-apiserver speaks TLS with a client key pair to the proxy, k8s.io/apiserver egress_selector.go).
    `controlplane` and `etcd` stay direct (loopback)."""
    return {"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
            "egressSelections": [{"name": "cluster", "connection": {
                "proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(uds)}}}}]}


def apiserver_argv(binary: Path, folder: Path, etcd_port: int, port: int, serving: pki.Pair,
                   ca: pki.Pair, sa: pki.Pair, kubelet_client: pki.Pair, *, service_range: str,
                   egress_selector_config: Path | None = None, advertise_address: str | None = None) -> list[str]:
    """`--endpoint-reconciler-type=none`: 1.37 refuses a loopback advertise address for the `kubernetes`
    Service's endpoints (kubernetes/kubernetes#138102), so the control plane writes them itself. With an
    `advertise_address` (real nodes reach the API server there) the default lease reconciler keeps them.
    `egress_selector_config`: the file of `egress_selector_configuration`, if the caller runs that proxy."""
    extra = [f"--runtime-config={','.join(MAP_RUNTIME_CONFIG)}"] if MAP_RUNTIME_CONFIG else []
    if egress_selector_config is not None:
        extra.append(f"--egress-selector-config-file={egress_selector_config}")
    return [str(binary), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            *([f"--advertise-address={advertise_address}"] if advertise_address else
              ["--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"]),
            f"--secure-port={port}",
            f"--cert-dir={folder}", f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
            f"--client-ca-file={ca.cert}",
            f"--service-account-key-file={sa.cert}", f"--service-account-signing-key-file={sa.key}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-cluster-ip-range={service_range}",
            "--authorization-mode=Node,RBAC", f"--enable-admission-plugins={ADMISSION_PLUGINS}",
            "--allow-privileged=true", "--profiling=false", *extra,
            f"--kubelet-client-certificate={kubelet_client.cert}", f"--kubelet-client-key={kubelet_client.key}",
            # logs/exec/attach/port-forward dial the Node's InternalIP (loopback); the default order tries
            # its Hostname address first, a name nothing resolves to loopback (KUBELETAPI helper's edit)
            "--kubelet-preferred-address-types=InternalIP"]


def controller_manager_argv(binary: Path, folder: Path, port: int, kubeconfig: Path, ca: pki.Pair,
                            sa: pki.Pair) -> list[str]:
    """Each controller with its own service account (as kubeadm), signing with the cluster CA."""
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={folder}", "--leader-elect=false", "--use-service-account-credentials=true",
            f"--controllers={CONTROLLERS}", "--allocate-node-cidrs=false",
            f"--service-account-private-key-file={sa.key}", f"--root-ca-file={ca.cert}",
            f"--client-ca-file={ca.cert}",
            f"--cluster-signing-cert-file={ca.cert}", f"--cluster-signing-key-file={ca.key}",
            "--profiling=false"]


def scheduler_argv(binary: Path, folder: Path, port: int, kubeconfig: Path) -> list[str]:
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={folder}", "--leader-elect=false", "--profiling=false"]


def kubeconfig(server: str, ca: pki.Pair, user: pki.Pair, name: str = "lwsconf-admin") -> dict[str, object]:
    """A kubeconfig with the CA and the client certificate inline (one file to hand around)."""

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return {"apiVersion": "v1", "kind": "Config", "current-context": "lwsconf-local",
            "clusters": [{"name": "lwsconf-local",
                          "cluster": {"server": server, "certificate-authority-data": b64(ca.cert)}}],
            "users": [{"name": name, "user": {"client-certificate-data": b64(user.cert),
                                               "client-key-data": b64(user.key)}}],
            "contexts": [{"name": "lwsconf-local", "context": {"cluster": "lwsconf-local", "user": name}}]}
