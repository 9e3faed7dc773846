"""The kind node image's CNI config comes from its containerd: our containerd build renders `plan.cni_template` with the
pod CIDR the kubelet hands it (here `crictl update-runtime-config`, the same CRI call), and kind's containerd config
with our patch still parses.

Runs under `make kind-node-image` (LWSCONF_KINDNODE_TESTS=1), as root (containerd with its CRI plugin), once the
node parts and crictl are built; skips saying which is missing otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from lwsconf.controlplane import versions
from lwsconf.kindnode import build, plan
from lwsconf.realnodes import build as nodes_build

RELEASE = versions.DEFAULT
SOCKET_TIMEOUT = float(os.environ.get("LWSCONF_KINDNODE_CONTAINERD_TIMEOUT") or 60)
"""containerd listening on its socket (the same override as the image build's preload)."""


def test_the_template_is_json_with_the_pod_cidr_placeholder_and_no_way_out() -> None:
    conf = json.loads(plan.cni_template())
    ptp, portmap = conf["plugins"]
    assert ptp["type"] == "ptp" and ptp["ipMasq"] is False and portmap["type"] == "portmap"
    assert ptp["ipam"]["ranges"] == [[{"subnet": "{{.PodCIDR}}"}]]
    assert ptp["ipam"]["routes"] == [{"dst": "10.244.0.0/16"}, {"dst": "10.96.0.0/16"}]  # no 0.0.0.0/0
    assert plan.containerd_cni_patch().strip().splitlines() == [
        '[plugins."io.containerd.grpc.v1.cri".cni]', f'  conf_template = "{plan.CNI_TEMPLATE}"']


def _parts() -> tuple[Path, Path]:
    if os.environ.get("LWSCONF_KINDNODE_TESTS") != "1":
        pytest.skip("starts containerd with its CRI plugin: run by `make kind-node-image`, or set "
                    "LWSCONF_KINDNODE_TESTS=1")
    if os.geteuid() != 0:
        pytest.skip("containerd's CRI plugin needs root")
    binaries = nodes_build.installed(RELEASE)
    crictl = nodes_build.cache_dir(RELEASE) / "crictl" / "bin" / "crictl"
    if binaries is None or not crictl.is_file():
        pytest.skip("the node parts or crictl are not built (make nodes kind-node-image)")
    return binaries.path("containerd"), crictl


def test_our_containerd_renders_the_cni_config_from_the_pod_cidr_it_is_given(tmp_path: Path) -> None:
    containerd, crictl = _parts()
    template = tmp_path / "lwsconf-cni.template"
    template.write_text(plan.cni_template())
    sock = tmp_path / "c.sock"
    config = (f'version = 2\nroot = "{tmp_path}/root"\nstate = "{tmp_path}/state"\n[grpc]\n  address = "{sock}"\n'
              f'[ttrpc]\n  address = "{sock}.ttrpc"\n'
              f'[plugins."io.containerd.grpc.v1.cri"]\n  stream_server_address = "127.0.0.1"\n'
              f'  stream_server_port = "0"\n'
              + plan.containerd_cni_patch(str(template)) + f'  conf_dir = "{tmp_path}/net.d"\n'
              f'  bin_dir = "{containerd.parent.parent.parent / "cni" / "bin"}"\n')
    (tmp_path / "config.toml").write_text(config)
    with open(tmp_path / "containerd.log", "w") as log:
        proc = subprocess.Popen([str(containerd), "--config", str(tmp_path / "config.toml")], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + SOCKET_TIMEOUT
        while not sock.exists():  # a poll with a named, overridable limit
            assert proc.poll() is None, (tmp_path / "containerd.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"no {sock} after {SOCKET_TIMEOUT:g}s"
            time.sleep(0.1)
        updated = subprocess.run([str(crictl), "--runtime-endpoint", f"unix://{sock}", "update-runtime-config",
                                  "--pod-cidr", "10.244.2.0/24"], capture_output=True, text=True, timeout=60,
                                 check=False)
        assert updated.returncode == 0, updated.stderr + (tmp_path / "containerd.log").read_text()[-2000:]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    rendered = json.loads((tmp_path / "net.d" / "10-containerd-net.conflist").read_text())
    assert rendered["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.2.0/24"}]]
    assert rendered["plugins"][0]["ipam"]["routes"] == [{"dst": "10.244.0.0/16"}, {"dst": "10.96.0.0/16"}]


def test_kinds_containerd_config_with_our_patch_names_the_template_once_containerd_reads_it(tmp_path: Path) -> None:
    containerd, _ = _parts()
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go: kind's containerd config is read from its module")
    kind_config = build.kind_module_dir(go) / plan.KIND_FILES / "etc" / "containerd" / "config.toml"
    (tmp_path / "config.toml").write_text(kind_config.read_text() + plan.containerd_cni_patch())
    dumped = subprocess.run([str(containerd), "--config", str(tmp_path / "config.toml"), "config", "dump"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert dumped.returncode == 0, dumped.stderr
    assert f"conf_template = '{plan.CNI_TEMPLATE}'" in dumped.stdout  # migrated from version 2 to the CRI plugin's
    assert "registry.k8s.io/pause:3.10" in dumped.stdout  # kind's own settings survive beside it
