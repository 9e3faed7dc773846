"""Reading credentials for `Client`: a kubeconfig context, or the in-cluster service account.

Supported: bearer tokens (what `lwsconf sim up` writes and ServiceAccounts use), client certificates
(what `kind` writes), `certificate-authority(-data)` and `insecure-skip-tls-verify`. Exec and
auth-provider plugins (cloud logins) are not: the error says to use a token or certificate user,
or to run the reconciler in the cluster. No network I/O here.
"""

from __future__ import annotations

import base64
import os
import pathlib
from dataclasses import dataclass
from typing import Any

import yaml

SERVICE_ACCOUNT = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says what to change."""


@dataclass(frozen=True)
class Credentials:
    server: str
    token: str | None = None
    ca_pem: bytes | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    insecure: bool = False


def _data(entry: dict[str, Any], key: str, base: pathlib.Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(str(entry[f"{key}-data"]))
    if entry.get(key):
        return (base / str(entry[key])).read_bytes()
    return None


def _named(items: Any, name: str, what: str, path: pathlib.Path) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item.get(what) or {})
    raise KubeconfigError(f"{path}: no {what} named {name!r}")


def load(path: str | os.PathLike[str], context: str | None = None) -> Credentials:
    """Credentials of `context` (default: current-context) in the kubeconfig at `path`."""
    file = pathlib.Path(path)
    try:
        config = yaml.safe_load(file.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {file}: {exc}") from None
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError(f"{file}: no current-context; pass a context name")
    ctx = _named(config.get("contexts"), name, "context", file)
    cluster = _named(config.get("clusters"), ctx.get("cluster", ""), "cluster", file)
    user = _named(config.get("users"), ctx.get("user", ""), "user", file)
    if user.get("exec") or user.get("auth-provider"):
        raise KubeconfigError(f"{file}: context {name!r} authenticates with an exec/auth-provider plugin, which "
                              "lwsconf's client does not run; use a token or client-certificate user, or run the "
                              "reconciler in the cluster (manifests/reference/)")
    base = file.parent
    token = user.get("token") or (_data(user, "tokenFile", base) or b"").decode().strip() or None
    return Credentials(server=cluster["server"], token=token, ca_pem=_data(cluster, "certificate-authority", base),
                       client_cert_pem=_data(user, "client-certificate", base),
                       client_key_pem=_data(user, "client-key", base),
                       insecure=bool(cluster.get("insecure-skip-tls-verify")))


def in_cluster() -> Credentials:
    """The pod's service account, as client-go's InClusterConfig reads it."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset); pass --kubeconfig")
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return Credentials(server=server, token=(SERVICE_ACCOUNT / "token").read_text().strip(),
                       ca_pem=(SERVICE_ACCOUNT / "ca.crt").read_bytes())
