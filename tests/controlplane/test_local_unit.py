"""The local control plane without the real binaries: its flags, certificates, and a component that dies.

Real etcd and kube-apiserver are exercised by test_local.py when a build is in the cache.
"""

from __future__ import annotations

import ipaddress
import stat
import sys
from pathlib import Path

import pytest
from cryptography import x509

from lwsconf.controlplane import flags, local, pki, versions
from lwsconf.waits.core import WaitTimeout


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_every_address_in_the_flags_is_loopback(tmp_path: Path) -> None:
    pair = pki.Pair(tmp_path / "c", tmp_path / "k")
    argv = flags.apiserver_argv(Path("/bin/kube-apiserver"), tmp_path, 2379, 6443, pair, pair, pair, pair,
                                service_range="127.77.128.0/17")
    given = dict(a.removeprefix("--").split("=", 1) for a in argv[1:])
    assert given["bind-address"] == given["advertise-address"] == "127.0.0.1"
    assert given["etcd-servers"] == "http://127.0.0.1:2379"
    assert given["secure-port"] == "6443"
    assert given["service-cluster-ip-range"] == "127.77.128.0/17"
    assert given["authorization-mode"] == "Node,RBAC"
    assert given["enable-admission-plugins"] == "NodeRestriction"
    etcd = flags.etcd_argv(Path("/bin/etcd"), tmp_path / "data", 2379, 2380)
    urls = [etcd[i + 1] for i, a in enumerate(etcd) if a.endswith("-urls")]
    assert urls and all(u.startswith("http://127.0.0.1:") for u in urls)
    for component in (flags.controller_manager_argv(Path("/bin/kcm"), tmp_path, 10257, tmp_path / "kc", pair, pair),
                      flags.scheduler_argv(Path("/bin/sched"), tmp_path, 10259, tmp_path / "kc")):
        given = dict(a.removeprefix("--").split("=", 1) for a in component[1:])
        assert given["bind-address"] == "127.0.0.1" and given["leader-elect"] == "false"
    kcm = dict(a.removeprefix("--").split("=", 1) for a in flags.controller_manager_argv(
        Path("/bin/kcm"), tmp_path, 10257, tmp_path / "kc", pair, pair)[1:])
    assert kcm["use-service-account-credentials"] == "true" and kcm["allocate-node-cidrs"] == "false"
    assert kcm["controllers"].startswith("*,") and kcm["secure-port"] == "10257"
    assert ipaddress.ip_network(local.SERVICE_RANGE).is_loopback
    assert flags.kubernetes_service_ip("127.77.128.0/17") == "127.77.128.1"


def test_certificates_chain_to_the_ca_with_the_service_names(tmp_path: Path) -> None:
    ca = pki.Authority(tmp_path)
    serving = ca.issue("apiserver", "kube-apiserver", server_ips=("127.0.0.1", "127.77.128.1"),
                       server_names=("localhost", "kubernetes.default.svc"))
    admin = ca.issue("admin", "lwsconf-admin", org="system:masters")
    ca_cert = x509.load_pem_x509_certificate(ca.pair.cert.read_bytes())
    server_cert = x509.load_pem_x509_certificate(serving.cert.read_bytes())
    server_cert.verify_directly_issued_by(ca_cert)
    alt = server_cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"),
                                                        ipaddress.ip_address("127.77.128.1")]
    assert "kubernetes.default.svc" in alt.get_values_for_type(x509.DNSName)
    admin_cert = x509.load_pem_x509_certificate(admin.cert.read_bytes())
    admin_cert.verify_directly_issued_by(ca_cert)
    assert admin_cert.subject.rfc4514_string() == "O=system:masters,CN=lwsconf-admin"
    assert stat.S_IMODE(admin.key.stat().st_mode) == 0o600


def test_start_timeouts_from_env() -> None:
    assert local.StartTimeouts.from_env({}) == local.StartTimeouts()
    assert local.StartTimeouts.from_env({"LWSCONF_LOCAL_APISERVER_READY": "7"}).apiserver_ready == 7.0
    with pytest.raises(ValueError, match="LWSCONF_LOCAL_ETCD_READY='soon' is not a number"):
        local.StartTimeouts.from_env({"LWSCONF_LOCAL_ETCD_READY": "soon"})


def test_component_that_exits_fails_the_start_at_once_with_its_log_tail(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.tempfile, "tempdir", str(tmp_path))
    etcd = _script(tmp_path / "etcd", "import sys; print('etcd: bad flag --unsafe-no-fsync'); sys.exit(3)")
    never = _script(tmp_path / "kube-apiserver", "raise SystemExit('must not be started')")
    cluster = local.LocalControlPlane(versions.DEFAULT, {"etcd": etcd, "kube-apiserver": never},
                                      timeouts=local.StartTimeouts(etcd_ready=60, apiserver_ready=60))
    with pytest.raises(WaitTimeout) as failure:
        cluster.start()
    message = str(failure.value)
    assert "gave up early: etcd exited with status 3" in message
    assert "etcd: bad flag --unsafe-no-fsync" in message
    assert failure.value.elapsed < 60  # gave up when etcd exited, not at etcd_ready
    assert [c.name for c in cluster.components] == ["etcd"]
    assert not cluster.folder.exists()


def test_etcd_that_never_answers_times_out_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.tempfile, "tempdir", str(tmp_path))
    etcd = _script(tmp_path / "etcd", "import time\nprint('etcd: starting', flush=True)\ntime.sleep(600)")
    cluster = local.LocalControlPlane(versions.DEFAULT, {"etcd": etcd, "kube-apiserver": etcd},
                                      timeouts=local.StartTimeouts(etcd_ready=1.5))
    with pytest.raises(WaitTimeout, match=r"(?s)limit 1\.5s.*etcd on 127\.0\.0\.1:\d+ to be healthy.*etcd: starting"):
        cluster.start()
    assert cluster.components[0].exited() is not None
    assert not cluster.folder.exists()


def test_up_without_a_build_says_what_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from lwsconf.localcluster import cli as local_cli

    monkeypatch.setenv("LWSCONF_CACHE_DIR", str(tmp_path))
    assert local_cli.main(["up", "--kubernetes-version", "1.36", "--kubeconfig", str(tmp_path / "kc")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lwsconf local: no Kubernetes 1.36.3 control plane is built: run "
                          "`lwsconf controlplane build --kubernetes-version 1.36.3`")
    assert local_cli.main(["down", "--kubeconfig", str(tmp_path / "kc")]) == 2
    assert "no local control plane is running" in capsys.readouterr().err


def test_the_egress_selector_sends_cluster_traffic_to_a_unix_socket_proxy_only_when_asked(tmp_path: Path) -> None:
    """kube-apiserver's `cluster` egress (pods/services proxy, kubelet API, Service webhooks) goes to our CONNECT
    proxy on a unix socket (`lwsconf.localcluster.egress`); `controlplane` and `etcd` stay direct."""
    pair = pki.Pair(tmp_path / "c", tmp_path / "k")
    config = flags.egress_selector_configuration(tmp_path / "cluster.sock")
    assert config == {"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
                      "egressSelections": [{"name": "cluster", "connection": {
                          "proxyProtocol": "HTTPConnect",
                          "transport": {"uds": {"udsName": str(tmp_path / "cluster.sock")}}}}]}
    plain = flags.apiserver_argv(Path("/bin/kube-apiserver"), tmp_path, 2379, 6443, pair, pair, pair, pair,
                                 service_range="127.77.128.0/17")
    assert not [a for a in plain if a.startswith("--egress-selector-config-file")]
    proxied = flags.apiserver_argv(Path("/bin/kube-apiserver"), tmp_path, 2379, 6443, pair, pair, pair, pair,
                                   service_range="127.77.128.0/17", egress_selector_config=tmp_path / "egress.yaml")
    assert f"--egress-selector-config-file={tmp_path / 'egress.yaml'}" in proxied
