"""`lwsconf local up|down` with the real etcd and kube-apiserver: the official client lists namespaces.

Needs a build in the cache; without one it skips saying what to run (LWSCONF_REQUIRE_GO=1 turns the
skip into a failure). While it runs, every TCP socket of its processes (found by LWSCONF_RUN_ID, their
sockets matched in /proc/net/tcp by inode) has a 127.0.0.0/8 local address and peer (a listener's peer is
the unspecified address). After `down`, no process of the run and nothing in its TMPDIR may be left, and the
kubeconfig and state file are removed.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from kubernetes import client, config

from lwsconf import shutdown
from lwsconf.controlplane import build, local, versions
from lwsconf.localcluster.cluster import NODES_READY
from lwsconf.waits.core import NotYet, wait_until

from .test_binaries import REQUIRE_ENV

UP_TIMEOUT = sum(getattr(local.StartTimeouts(), f.name) for f in dataclasses.fields(local.StartTimeouts)) + NODES_READY
"""Seconds `lwsconf local up` may take to print its kubeconfig line (the sum of its own named timeouts)."""
EXIT_TIMEOUT = 90.0
"""Seconds `up` may take to exit after `down` (stop timeouts of two components, plus slack)."""


def _binaries_or_skip(release: versions.Release) -> None:
    if build.installed(release) is None:
        reason = (f"no Kubernetes {release.kubernetes} control plane is built: run "
                  f"`lwsconf controlplane build --kubernetes-version {release.kubernetes}` (needs Go)")
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 forbids skipping", pytrace=False)
        pytest.skip(reason)


def _tcp_sockets(pids: list[int]) -> list[tuple[str, str]]:
    """(local, peer) IPv4/IPv6 addresses of every TCP socket the processes hold."""
    inodes: set[str] = set()
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        for fd in fds.iterdir() if fds.exists() else ():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                found.append((_address(fields[1][:width]), _address(fields[2][:width])))
    return found


def _address(hex_ip: str) -> str:
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word is little-endian
    return str(ipaddress.ip_address(words))


def _is_loopback(address: str, *, unspecified_ok: bool = False) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or (unspecified_ok and ip.is_unspecified)


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["down", "ctrl-c"])
@pytest.mark.parametrize("release", versions.under_test(), ids=lambda r: r.kubernetes)
def test_local_up_serves_the_official_client_and_down_leaves_nothing(tmp_path: Path, release: versions.Release,
                                                                     stop: str) -> None:
    """Stopped by `lwsconf local down` (SIGTERM) or by Ctrl-C (SIGINT, as a terminal sends it to `up`)."""
    _binaries_or_skip(release)
    # A short TMPDIR of its own: the GPU nodes' device-plugin sockets live under it (107-byte path limit).
    rid, tmpdir = secrets.token_hex(6), Path(tempfile.mkdtemp(prefix="lt"))
    kubeconfig = tmp_path / "local" / "kubeconfig"
    env = {**os.environ, shutdown.RUN_ID_ENV: rid, "TMPDIR": str(tmpdir)}
    up = subprocess.Popen([sys.executable, "-m", "lwsconf.cli", "local", "up", "--kubeconfig", str(kubeconfig),
                           "--kubernetes-version", release.kubernetes], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    threading.Thread(target=lambda: [lines.put(line) for line in up.stdout or ()], daemon=True).start()

    def kubeconfig_written() -> bool:
        while not lines.empty():
            seen.append(lines.get())
        if any(line.startswith("kubeconfig written to") for line in seen):
            return True
        if up.poll() is not None:
            pytest.fail(f"`lwsconf local up` exited with {up.returncode}:\n{''.join(seen)}")
        raise NotYet("no kubeconfig line yet")

    try:
        wait_until(kubeconfig_written, what="`lwsconf local up` to write its kubeconfig", timeout=UP_TIMEOUT,
                   poll=0.2, describe=lambda: "".join(seen))
        api = config.new_client_from_config(config_file=str(kubeconfig))
        names = {ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items}
        nodes = client.CoreV1Api(api).list_node().items
        assert len(nodes) == 6 and all(
            [c.status for c in n.status.conditions if c.type == "Ready"] == ["True"] for n in nodes)
        assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
        version = client.VersionApi(api).get_code()
        assert version.git_version == f"v{release.kubernetes}"
        server = api.configuration.host
        assert server.startswith("https://127.0.0.1:")
        api.close()
        pids = [p.pid for p in shutdown.marked_processes(rid)]
        sockets = _tcp_sockets(pids)
        # up, etcd, kube-apiserver, kube-controller-manager, kube-scheduler and their sockets
        assert len(pids) >= 5 and len(sockets) >= 5, (pids, sockets)
        assert [s for s in sockets if not (_is_loopback(s[0]) and _is_loopback(s[1], unspecified_ok=True))] == []
    finally:
        if stop == "down":
            down = subprocess.run([sys.executable, "-m", "lwsconf.cli", "local", "down", "--kubeconfig",
                                   str(kubeconfig)], env=env, capture_output=True, text=True, timeout=EXIT_TIMEOUT)
        else:
            up.send_signal(signal.SIGINT)
            down = subprocess.CompletedProcess([], 0, "", "")
        try:
            up.wait(timeout=EXIT_TIMEOUT)
        finally:
            if up.poll() is None:
                up.kill()
    assert down.returncode == 0, down.stderr
    assert up.returncode == 0, "".join(seen)
    assert shutdown.marked_processes(rid) == []
    # lwsconf-podnet is the machine-wide folder of pod-network lock files (ipam), meant to outlive runs
    assert [p.name for p in tmpdir.iterdir() if p.name != "lwsconf-podnet"] == []
    shutil.rmtree(tmpdir)
    assert not kubeconfig.exists()
    assert not (kubeconfig.parent / "local-up.json").exists()
