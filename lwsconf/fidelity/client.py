"""Sending one step to one API server and reading its answer (the only HTTP of the corpus).

Both servers are reached the same way, from the kubeconfig they wrote: the sim with a bearer token,
kube-apiserver with a client certificate; every request carries the same User-Agent, because
kube-apiserver names the field manager of a write without `fieldManager` after it.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import requests

from lwsconf.fidelity.model import Answer
from lwsconf.kubeclient import kubeconfig

USER_AGENT = "lwsconf-fidelity"
REQUEST_TIMEOUT = 30.0
"""Seconds one request (or one watch, beyond its own timeoutSeconds) may take before it counts as no answer."""


class Endpoint:
    """One API server: its URL and a session holding its credentials."""

    def __init__(self, name: str, kubeconfig_path: Path) -> None:
        creds = kubeconfig.load(kubeconfig_path)
        if not creds.server.startswith("https://127."):
            raise ValueError(f"{name}: {creds.server} is not a loopback address")
        self.name, self.url = name, creds.server
        self._folder = tempfile.TemporaryDirectory(prefix="lwsconf-fidelity-")
        folder = Path(self._folder.name)
        self.session = requests.Session()
        self.session.trust_env = False  # no proxy from the environment: loopback only
        self.session.headers["User-Agent"] = USER_AGENT
        if creds.ca_pem:
            (folder / "ca.crt").write_bytes(creds.ca_pem)
            self.session.verify = str(folder / "ca.crt")
        if creds.token:
            self.session.headers["Authorization"] = f"Bearer {creds.token}"
        if creds.client_cert_pem and creds.client_key_pem:
            (folder / "client.crt").write_bytes(creds.client_cert_pem)
            (folder / "client.key").write_bytes(creds.client_key_pem)
            self.session.cert = (str(folder / "client.crt"), str(folder / "client.key"))

    def close(self) -> None:
        self.session.close()
        self._folder.cleanup()

    def send(self, request: dict[str, Any], *, watch: bool = False) -> Answer:
        """Send `request` (method, path, query, headers, body as bytes or None); never raises for a
        transport failure: that is an answer with code 0 saying what happened."""
        try:
            reply = self.session.request(request["method"], self.url + request["path"], params=request["query"],
                                         headers=request["headers"], data=request["body"], stream=watch,
                                         timeout=REQUEST_TIMEOUT)
        except requests.RequestException as exc:
            return Answer(0, f"no answer: {type(exc).__name__}: {exc}")
        with reply:
            warnings = [t for w in reply.raw.headers.getlist("Warning") for t in warning_texts(w)] if reply.raw else []
            if watch and reply.status_code == 200:
                return Answer(200, None, warnings, _events(reply))
            return Answer(reply.status_code, _decode(reply.content), warnings)


_WARNING = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def warning_texts(header: str) -> list[str]:
    """The texts of a Warning header: `299 - "text"`, several of them comma-separated when a server
    joins them into one header (RFC 9110 allows either form)."""
    found = [json.loads(f'"{m.group(1)}"') for m in _WARNING.finditer(header)]
    return found or [header]


def _decode(content: bytes) -> Any:
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content.decode(errors="replace")


def _events(reply: requests.Response) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    try:
        for line in reply.iter_lines():
            if line:
                events.append(json.loads(line))
    except (requests.RequestException, ValueError) as exc:
        events.append({"type": "CLIENT-ERROR", "object": f"{type(exc).__name__}: {exc}"})
    return events
