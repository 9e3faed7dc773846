"""Fixtures for the project's own tests: an in-process simulated API server on a background loop."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client, config

from lwsconf import _loopthread, shutdown
from lwsconf.sim.apiserver.http import app


@pytest.fixture(autouse=True)
def own_run_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test (and every run it starts) gets a run id of its own, not the one of the `make test` run around it.

    Why: a conformance run started by a test (pytester) would otherwise inherit the outer run's
    LWSCONF_RUN_ID, and its end-of-run sweep of "this run's" temp folders (fixtures/interrupts.py) removed the
    folders of clusters other tests of the outer run were still using (seen: a local cluster's kubeconfig gone
    mid-test while tests/fixtures/test_worker_crash.py ran on the other worker).
    """
    monkeypatch.delenv(shutdown.RUN_ID_ENV, raising=False)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test: bound (no SO_REUSEADDR), never listening.

    Why not pick a free port and close it: a parallel xdist worker can then bind that port and answer, so a
    test of "nothing listens there" meets someone else's server (seen in CI: an emulator worker joined another
    test's leader). Without SO_REUSEADDR on our socket no other bind succeeds (Linux inet_csk_bind_conflict),
    and with no listen() the kernel refuses every connect.
    """
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


@dataclass
class SimAPI:
    """A running API server plus an official-client ApiClient and a kubeconfig pointing at it."""

    server: app.APIServer
    loop: _loopthread.LoopThread
    kubeconfig: Path
    ca_file: Path
    api: client.ApiClient

    @property
    def url(self) -> str:
        return self.server.url

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A raw HTTP request with the bearer token, for what the typed client cannot express."""
        headers = {"Authorization": f"Bearer {self.server.token}", **kwargs.pop("headers", {})}
        return requests.request(method, self.url + path, headers=headers, timeout=kwargs.pop("timeout", 10),
                                verify=str(self.ca_file), **kwargs)


def start_sim_api(tmp: Path, **kwargs: object) -> tuple[SimAPI, _loopthread.LoopThread]:
    loop = _loopthread.LoopThread("test-apiserver").start()
    server = app.APIServer(**kwargs)  # type: ignore[arg-type]
    loop.run(server.start())
    kubeconfig = server.write_kubeconfig(tmp / "kubeconfig")
    ca_file = tmp / "ca.crt"
    ca_file.write_bytes(server.ca_pem)
    api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    return SimAPI(server, loop, kubeconfig, ca_file, api), loop


@contextlib.contextmanager
def running_sim_api(tmp: Path, **kwargs: object) -> Iterator[SimAPI]:
    """`start_sim_api`, stopped (client, server, loop) when the block ends."""
    sim, loop = start_sim_api(tmp, **kwargs)
    try:
        yield sim
    finally:
        sim.api.close()  # type: ignore[no-untyped-call]
        loop.run(sim.server.stop())
        loop.stop()


@pytest.fixture
def sim_api(tmp_path: Path) -> Iterator[SimAPI]:
    """A fresh API server (no controllers) per test."""
    with running_sim_api(tmp_path) as sim:
        yield sim
