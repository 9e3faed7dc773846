"""The projected service-account token: which source, what is asked, and an API server without TokenRequest."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lwsconf.kubeclient import errors
from lwsconf.sim.nodes.kubelet import satoken

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
    "spec": {"serviceAccountName": "runner", "volumes": [
        {"name": "data", "emptyDir": {}},
        {"name": "kube-api-access-x", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": "kube-root-ca.crt"}}]}}]}}
CONTAINER = {"name": "c", "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/var/run/secrets"}]}


class FakeClient:
    def __init__(self, answer: Any) -> None:
        self.answer, self.calls = answer, []  # type: ignore[var-annotated]

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append((method, path, kwargs.get("body")))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer  # type: ignore[no-any-return]


def test_the_request_is_bound_to_the_pod_with_the_sources_lifetime() -> None:
    fake = FakeClient({"status": {"token": "jwt"}})
    assert asyncio.run(satoken.fetch(fake, POD, CONTAINER)) == "jwt"  # type: ignore[arg-type]
    method, path, body = fake.calls[0]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/serviceaccounts/runner/token")
    assert body["spec"] == {"audiences": [], "expirationSeconds": 3607,
                            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u-1"}}


def test_no_mounted_source_asks_nothing_and_an_unserved_api_gives_an_empty_token() -> None:
    fake = FakeClient({"status": {"token": "jwt"}})
    assert asyncio.run(satoken.fetch(fake, POD, {"name": "c"})) == ""  # type: ignore[arg-type]
    assert fake.calls == []
    missing = FakeClient(errors.ApiError(404, "NotFound", {"message": "the server could not find it"}))
    assert asyncio.run(satoken.fetch(missing, POD, CONTAINER)) == ""  # type: ignore[arg-type]
    refused = FakeClient(errors.ApiError(403, "Forbidden", {"message": "no"}))
    with pytest.raises(errors.ApiError):
        asyncio.run(satoken.fetch(refused, POD, CONTAINER))  # type: ignore[arg-type]
