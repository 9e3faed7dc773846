"""Image runtimes: a mapped image's programs run from a local prefix, their native binds kept on the pod IP.

The prefix here is a made-up install (a `bin/` with one program, a `serve` script run by the host's interpreter in
isolated mode, so the Python shim is not loaded and only the preloaded interposer can move its bind); the vLLM
CPU runtime is the same mechanism with a bigger prefix.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lwsconf.sim.nodes.runtime import imageruntimes, netshim, runtime
from tests.sim.nodes import kubelet_sim as ks
from tests.sim.nodes.kubelet_sim import NS, pod_body
from tests.sim.nodes.runtime.test_runtime import MODES, Pod, free_port, get, pod_ip, run, until

IMAGE = "registry.example/tools:1.0"
SERVE = """#!{python} -IS
import json, os, socket, sys, http.server
port = int(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"bound": self.server.socket.getsockname()[0], "argv": sys.argv[1:],
                           "tool_mode": os.environ.get("TOOL_MODE"), "path": os.environ.get("PATH"),
                           "virtual_env": os.environ.get("VIRTUAL_ENV")}}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args): pass
http.server.HTTPServer(("0.0.0.0", port), H).serve_forever()
"""
BIND_ANY = ("import socket, sys\n"
            "family = socket.AF_INET6 if sys.argv[1] == '6' else socket.AF_INET\n"
            "s = socket.socket(family); s.bind(('::' if family == socket.AF_INET6 else '0.0.0.0', 0))\n"
            "print(s.getsockname()[0])\n")


def _listeners(port: int) -> set[str]:
    """The local addresses of the machine's listening TCP sockets on `port` (/proc/net/tcp and tcp6, state 0A)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                raw = bytes.fromhex(address)
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # each 32-bit word host-order
                found.add(str(ipaddress.ip_address(words)))
    return found


def _prefix(tmp_path: Path) -> Path:
    prefix = tmp_path / "tools-prefix"
    (prefix / "bin").mkdir(parents=True)
    serve = prefix / "bin" / "serve"
    serve.write_text(SERVE.format(python=sys.executable))
    serve.chmod(0o755)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return prefix


def _file(tmp_path: Path, entries: list[dict[str, object]]) -> Path:
    path = tmp_path / "runtimes.yaml"
    path.write_text(yaml.safe_dump({"imageRuntimes": entries}))
    return path


@pytest.mark.parametrize(("entry", "message"), [
    ({"image": IMAGE}, "image and prefix must be non-empty strings"),
    ({"image": IMAGE, "prefix": "PREFIX", "cmd": ["x"]}, "unknown field(s) ['cmd']"),
    ({"image": IMAGE, "prefix": "/nonexistent/prefix"}, "has no bin/ folder: build it first"),
    ({"image": IMAGE, "prefix": "PREFIX", "env": {"N": 1}}, "env must map names to strings (quote numbers)"),
    ({"image": IMAGE, "prefix": "PREFIX", "entrypoint": "serve"}, "entrypoint must be a list of strings"),
])
def test_a_wrong_file_names_the_file_the_entry_and_what_to_change(tmp_path: Path, entry: dict[str, object],
                                                                   message: str) -> None:
    prefix = _prefix(tmp_path)
    fixed = {k: str(prefix) if v == "PREFIX" else v for k, v in entry.items()}
    path = _file(tmp_path, [fixed])
    with pytest.raises(imageruntimes.ImageRuntimeError) as failure:
        imageruntimes.load(path)
    assert str(failure.value).startswith(f"{path}: imageRuntimes[0]: ") and message in str(failure.value)


def test_an_image_mapped_twice_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    prefix = str(_prefix(tmp_path))
    with pytest.raises(imageruntimes.ImageRuntimeError, match=r"imageRuntimes\[1\]: image .* is mapped twice"):
        imageruntimes.load(_file(tmp_path, [{"image": IMAGE, "prefix": prefix}] * 2))
    with pytest.raises(imageruntimes.ImageRuntimeError, match="no such file: unset it"):
        imageruntimes.configured({imageruntimes.ENV: str(tmp_path / "missing.yaml")})
    assert imageruntimes.configured({}) == {}


def test_a_mapped_image_runs_what_its_prefix_provides_and_nothing_else(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path)
    mapped = imageruntimes.load(_file(tmp_path, [{"image": IMAGE, "prefix": str(prefix), "entrypoint": ["serve"]}]))
    assert runtime.runnable({"image": IMAGE, "args": ["8080"]}, mapped)               # the entrypoint
    assert runtime.runnable({"image": IMAGE, "command": ["/usr/local/bin/serve"]}, mapped)  # found by its name
    assert not runtime.runnable({"image": IMAGE, "command": ["nginx"]}, mapped)          # not in the prefix
    assert not runtime.runnable({"image": "registry.example/tools:2.0", "command": ["serve"]}, mapped)
    assert not runtime.runnable({"image": IMAGE, "command": ["serve"]}, {})               # unmapped: as before


@pytest.mark.parametrize(("family", "wildcard_becomes"), [("4", "{ip}"), ("6", "::ffff:{ip}")])
def test_the_interposer_moves_a_native_bind_of_all_addresses_to_the_pod_ip(family: str,
                                                                          wildcard_becomes: str) -> None:
    ip = pod_ip()
    # -I -S: no sitecustomize, so this bind reaches libc as native code's would
    argv = [sys.executable, "-I", "-S", "-c", BIND_ANY, family]
    env = {"PATH": os.environ.get("PATH", ""), "LD_PRELOAD": str(netshim.library())}
    moved = subprocess.run(argv, env={**env, "LWSCONF_SIM_POD_IP": ip}, capture_output=True, text=True, check=True)
    assert moved.stdout.strip() == wildcard_becomes.format(ip=ip), moved.stderr
    left = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert left.stdout.strip() == ("::" if family == "6" else "0.0.0.0"), "without a pod IP the bind is unchanged"


OUTBOUND = ("import errno, socket\n"
            "out = {}\n"
            "probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"  # a UDP connect sends nothing
            "try:\n    probe.connect(('203.0.113.1', 80)); out['connect'] = probe.getsockname()[0]\n"
            "except OSError as exc:\n    out['connect'] = errno.errorcode[exc.errno]\n"
            # bound to loopback first: without the shim the kernel refuses to route it (EINVAL), so even a broken
            # shim sends no packet off the machine
            "sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); sender.bind(('127.0.0.1', 0))\n"
            "try:\n    sender.sendto(b'x', ('203.0.113.1', 9)); out['sendto'] = 'sent'\n"
            "except OSError as exc:\n    out['sendto'] = errno.errorcode[exc.errno]\n"
            "local = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); local.connect(('127.0.0.1', 9))\n"
            "out['loopback'] = local.getsockname()[0]\n"
            "print(out)\n")


def test_the_interposer_gives_native_code_no_route_off_the_machines_loopback() -> None:
    """vLLM learns 'its' address with a UDP connect to a public address: on the sim's shared network that gave the
    machine's routable address, which a pod never sees. Now native code is as unrouted as a pod on our real nodes."""
    argv = [sys.executable, "-I", "-S", "-c", OUTBOUND]
    env = {"PATH": os.environ.get("PATH", ""), "LD_PRELOAD": str(netshim.library()), "LWSCONF_SIM_POD_IP": pod_ip()}
    seen = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert seen == "{'connect': 'ENETUNREACH', 'sendto': 'ENETUNREACH', 'loopback': '127.0.0.1'}", seen


@pytest.mark.parametrize("mode", MODES)
def test_a_mapped_container_runs_its_entrypoint_with_the_image_env_on_the_pod_ip(tmp_path: Path, mode: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = _prefix(tmp_path)
    monkeypatch.setenv(imageruntimes.ENV, str(_file(tmp_path, [
        {"image": IMAGE, "prefix": str(prefix), "entrypoint": ["serve"], "env": {"TOOL_MODE": "image-default"}}])))

    async def scenario() -> None:
        pods = [Pod(tmp_path / name, mode) for name in ("a", "b")]
        port = free_port(pods[0].ip)
        for pod in pods:  # the same port in two pods: only a bind to each pod's own IP lets both listen
            await pod.runtime.start(runtime.ContainerLaunch(
                "team", "web-0", "uid-1", "main", ["serve", str(port)], {}, pod.ip, "web-0", {}, "", pod.log,
                pod.hosts, image=IMAGE))
        for pod in pods:
            info = await until(f"serve answering on {pod.ip}:{port} (log: {pod.log})", lambda p=pod: get(p.ip, port))
            assert info["bound"] == pod.ip and info["argv"] == [str(port)], info
            assert info["tool_mode"] == "image-default" and info["virtual_env"] == str(prefix), info
            assert info["path"].startswith(f"{prefix}/bin:"), info
        assert _listeners(port) == {p.ip for p in pods}, "the port listens on another address of the machine"
        for pod in pods:
            await pod.runtime.close()
    tmp_path.joinpath("a").mkdir()
    tmp_path.joinpath("b").mkdir()
    run(scenario)


@pytest.mark.parametrize("mode", MODES)
def test_a_command_the_mapped_prefix_lacks_fails_to_start_as_runc_says(tmp_path: Path, mode: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(imageruntimes.ENV, str(_file(tmp_path, [{"image": IMAGE, "prefix": str(_prefix(tmp_path))}])))
    pod = Pod(tmp_path / "pod", mode) if (tmp_path / "pod").mkdir() is None else None
    assert pod is not None
    launch = runtime.ContainerLaunch("team", "web-0", "uid-1", "main", ["nginx"], {}, pod.ip, "web-0", {}, "",
                                     pod.log, pod.hosts, image=IMAGE)
    with pytest.raises(FileNotFoundError, match='exec: "nginx": executable file not found in \\$PATH'):
        asyncio.run(pod.runtime.start(launch))
    assert json.dumps(pod.runtime.image_runtimes[IMAGE].env) == "{}"


def test_a_pod_of_a_mapped_image_without_command_runs_the_entrypoint_with_its_args_and_becomes_ready(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the node agent, as the suite's pods run: the container gives only `args`, as pods of an image with
    an ENTRYPOINT do; its readiness comes from an httpGet probe on the pod IP."""
    prefix = _prefix(tmp_path)
    monkeypatch.setenv(imageruntimes.ENV, str(_file(tmp_path, [
        {"image": IMAGE, "prefix": str(prefix), "entrypoint": ["serve"], "env": {"TOOL_MODE": "image-default"}}])))
    main = {"name": "main", "image": IMAGE, "args": ["8080"], "env": [{"name": "TOOL_MODE", "value": "pod"}],
            "ports": [{"containerPort": 8080, "name": "http"}],
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}}

    async def scenario() -> None:
        async with ks.sim_with_nodes(tmp_path / "sim", processes=True) as sim:
            await ks.create_bound(sim.client, pod_body("tools", containers=[main]), "cpu-0")
            pod = await ks.pod_until(sim.client, "tools", ks.is_ready, "Running and Ready (HTTP probe)", timeout=30)
            info = await sim.client.request("GET", f"/api/v1/namespaces/{NS}/pods/tools:8080/proxy/")
            assert info["bound"] == pod["status"]["podIP"] and info["argv"] == ["8080"], info
            assert info["tool_mode"] == "pod", "the container's env overrides the image's"
    ks.run(scenario, timeout=90)


@pytest.mark.skipif(runtime.detect_mode() != runtime.MODE_NAMESPACES, reason="needs namespaces mode (root)")
def test_a_volume_over_a_parent_of_the_prefix_hides_neither_the_programs_nor_the_interposer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtimes live under ~/.cache/lwsconf by default, and serving pods mount an emptyDir on /root/.cache
    (vLLM's compile cache): the mapped prefix and the interposer are bound again over such a volume."""
    prefix = _prefix(tmp_path)
    monkeypatch.setenv(imageruntimes.ENV, str(_file(tmp_path, [{"image": IMAGE, "prefix": str(prefix)}])))
    (tmp_path / "pod").mkdir()
    pod = Pod(tmp_path / "pod", runtime.MODE_NAMESPACES)
    empty = tmp_path / "pod" / "empty-dir"
    empty.mkdir()
    pod.mounts[str(tmp_path)] = empty  # the prefix's parent, as /root/.cache over ~/.cache/lwsconf/runtimes
    shim_dir = str(netshim.library().parent)
    pod.mounts[shim_dir] = tmp_path / "pod" / "empty-shim-dir"
    (tmp_path / "pod" / "empty-shim-dir").mkdir()
    port = free_port(pod.ip)

    async def scenario() -> None:
        await pod.runtime.start(runtime.ContainerLaunch(
            "team", "web-0", "uid-1", "main", ["serve", str(port)], {}, pod.ip, "web-0", pod.mounts, "", pod.log,
            pod.hosts, image=IMAGE))
        info = await until(f"serve answering on {pod.ip}:{port} (log: {pod.log})", lambda: get(pod.ip, port))
        assert info["bound"] == pod.ip, info  # the interposer was loaded
        await pod.runtime.close()
    run(scenario)


def test_an_interposer_that_cannot_be_built_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LWSCONF_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "/bin/false")
    with pytest.raises(netshim.NetShimError, match=r"building the network interposer failed \(/bin/false, exit 1\)"):
        netshim.library()
    assert not list((tmp_path / "netshim").glob("*.so")), "a failed build leaves no library behind"
