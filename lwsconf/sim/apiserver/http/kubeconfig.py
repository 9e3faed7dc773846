"""Writing a kubeconfig that points kubectl and the official client at the simulated server."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

CONTEXT_NAME = "lwsconf-sim"
DEFAULT_PATH = Path.home() / ".lwsconf" / "sim" / "kubeconfig"
"""Where `lwsconf sim up` writes the kubeconfig unless told otherwise (and where `lwsconf sim chaos` reads it)."""


def render(*, server: str, token: str, ca_pem: bytes) -> dict[str, object]:
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": cluster}],
        "users": [{"name": CONTEXT_NAME, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT_NAME, "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME,
                                                         "namespace": "default"}}],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }


def write(path: Path, *, server: str, token: str, ca_pem: bytes) -> Path:
    """Write the kubeconfig readable by the owner only (it holds the bearer token)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        yaml.safe_dump(render(server=server, token=token, ca_pem=ca_pem), fh, sort_keys=False)
    return path
