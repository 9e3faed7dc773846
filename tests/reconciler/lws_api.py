"""Helpers for tests of the LeaderWorkerSet CRD against the real sim API server.

`LwsAPI` wraps a running sim (from `tests.conftest.start_sim_api`) with the CRD of
`manifests/crd/leaderworkersets.yaml` installed, and speaks raw HTTP so that tests see status codes and
`Status` bodies exactly as a client would. `lws()` builds a minimal valid LeaderWorkerSet and `edit()`
applies dotted-path edits to it, so test tables can say what differs from the minimal object.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.conftest import SimAPI

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crd" / "leaderworkersets.yaml"
VAP_FILE = ROOT / "manifests" / "crd" / "validating-admission-policy.yaml"
GROUP, VERSION, PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
DELETE = object()  # an `edit()` value that removes the field


def load_crd() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return crd


def lws(name: str) -> dict[str, Any]:
    """The smallest LeaderWorkerSet the CRD accepts."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "LeaderWorkerSet", "metadata": {"name": name},
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {
            "spec": {"containers": [{"name": "main", "image": "registry.example/worker:1"}]}}}},
    }


def edit(obj: dict[str, Any], edits: dict[str, Any]) -> dict[str, Any]:
    """Set (or, with `DELETE`, remove) dotted paths such as `spec.leaderWorkerTemplate.size`, in place."""
    for path, value in edits.items():
        *parents, leaf = path.split(".")
        node = obj
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = copy.deepcopy(value)
    return obj


def get_path(obj: Any, path: str) -> Any:
    for key in path.split("."):
        obj = obj[key]
    return obj


class LwsAPI:
    """Raw-HTTP access to leaderworkersets on a sim API server that has the CRD installed."""

    def __init__(self, sim: SimAPI) -> None:
        self.sim = sim

    def install_crd(self) -> requests.Response:
        return self.sim.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=load_crd())

    def path(self, name: str | None = None, namespace: str = "default", sub: str | None = None) -> str:
        out = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
        return out + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")

    def create(self, body: dict[str, Any], namespace: str = "default", **params: str) -> requests.Response:
        return self.sim.request("POST", self.path(namespace=namespace), json=body, params=params)

    def get(self, name: str, namespace: str = "default") -> dict[str, Any]:
        reply = self.sim.request("GET", self.path(name, namespace))
        assert reply.status_code == 200, f"GET {name}: {reply.status_code} {reply.text}"
        obj: dict[str, Any] = reply.json()
        return obj

    def update(self, name: str, edits: dict[str, Any]) -> requests.Response:
        """GET, apply `edits`, PUT: an update as a read-modify-write client makes it."""
        obj = edit(self.get(name), edits)
        return self.sim.request("PUT", self.path(name), json=obj)

    def merge_patch(self, name: str, patch: dict[str, Any], sub: str | None = None) -> requests.Response:
        return self.sim.request("PATCH", self.path(name, sub=sub), data=json.dumps(patch),
                                headers={"Content-Type": "application/merge-patch+json"})

    def create_namespace(self, name: str) -> None:
        reply = self.sim.request("POST", "/api/v1/namespaces",
                                 json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert reply.status_code == 201, reply.text


def describe(reply: requests.Response) -> str:
    """A failure message showing what the server answered."""
    return f"HTTP {reply.status_code}: {reply.text[:2000]}"
