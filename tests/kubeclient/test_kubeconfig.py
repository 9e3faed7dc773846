"""Reading kubeconfigs for the asyncio client: token, client certificates, unsupported plugins."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from lwsconf.kubeclient import kubeconfig


def write(tmp_path: Path, user: dict[str, object], cluster: dict[str, object] | None = None) -> Path:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster or {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": user}]}))
    return path


def test_token_user_and_inline_ca(tmp_path: Path) -> None:
    ca = base64.b64encode(b"PEM").decode()
    creds = kubeconfig.load(write(tmp_path, {"token": "t0k"}, {"server": "https://127.0.0.1:1",
                                                                "certificate-authority-data": ca}))
    assert (creds.server, creds.token, creds.ca_pem) == ("https://127.0.0.1:1", "t0k", b"PEM")


def test_client_certificate_files_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "c.crt").write_bytes(b"CERT")
    (tmp_path / "c.key").write_bytes(b"KEY")
    creds = kubeconfig.load(write(tmp_path, {"client-certificate": "c.crt", "client-key": "c.key"}))
    assert (creds.client_cert_pem, creds.client_key_pem, creds.token) == (b"CERT", b"KEY", None)


def test_exec_plugins_are_refused_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match="exec/auth-provider plugin.*token or client-certificate"):
        kubeconfig.load(write(tmp_path, {"exec": {"command": "gcloud"}}))


def test_unknown_context_is_named(tmp_path: Path) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match="no context named 'other'"):
        kubeconfig.load(write(tmp_path, {"token": "t"}), context="other")


def test_in_cluster_outside_a_cluster_says_to_pass_a_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(kubeconfig.KubeconfigError, match="pass --kubeconfig"):
        kubeconfig.in_cluster()
