"""Our Go modules under controlplane/ agree with the pinned releases in lwsconf.controlplane.versions.

Each module must require k8s.io/kubernetes at its release, map every staging module of that release to
the published v0.X.Y (a missing or wrong line builds against another Kubernetes or fails), list the
components and kubectl as tools, and pin the etcd server that Kubernetes release requires.
"""

from __future__ import annotations

import re

import pytest

from lwsconf.controlplane import build, versions


@pytest.mark.parametrize("release", versions.RELEASES, ids=lambda r: r.kubernetes)
def test_module_pins_its_release(release: versions.Release) -> None:
    module = versions.source_root() / release.module_dir
    go_mod = (module / "go.mod").read_text()
    assert re.search(rf"^\tk8s\.io/kubernetes v{re.escape(release.kubernetes)}( // indirect)?$", go_mod, re.M)
    assert re.search(rf"^\tgo\.etcd\.io/etcd/server/v3 v{re.escape(release.etcd)}\b", go_mod, re.M)
    tools = re.search(r"^tool \(\n(.*?)^\)", go_mod, re.M | re.S)
    assert tools is not None
    assert sorted(tools[1].split()) == sorted(c.package for c in build.COMPONENTS)
    replaces = re.findall(r"^\t(k8s\.io/\S+) => (k8s\.io/\S+) (v\S+)$", go_mod, re.M)
    published = "v0." + release.kubernetes.split(".", 1)[1]
    assert len(replaces) >= 30
    assert all(left == right and version == published for left, right, version in replaces), replaces
    for needed in ("k8s.io/api", "k8s.io/apiserver", "k8s.io/client-go", "k8s.io/kube-scheduler"):
        assert needed in {left for left, _, _ in replaces}
    go_sum = (module / "go.sum").read_text()
    assert f"k8s.io/kubernetes v{release.kubernetes} h1:" in go_sum
