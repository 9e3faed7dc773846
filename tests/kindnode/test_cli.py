"""lwsconf kind node-image build: the exit status says whether the user has something to provide first (2) or the
build failed (1), by the kind of error, not by its words."""

from __future__ import annotations

import pytest

from lwsconf.controlplane import build as gobuild
from lwsconf.kindnode import build, cli
from lwsconf.realnodes import catalog


@pytest.mark.parametrize(("error", "status"), [
    (build.PrerequisiteMissing("the control plane 1.37.2 is not built: run `make controlplane` first"), 2),
    (build.PrerequisiteMissing("kubeadm is not built (...); `lwsconf kind node-image build` builds it"), 2),
    (catalog.ToolMissing("making the kindnode root filesystem needs debootstrap (apt-get install debootstrap)"), 2),
    (build.NodeImageError("ctr images import failed (exit 1)"), 1),
    (catalog.ImageBuildError("debootstrap of trixie failed 3 times"), 1),
])
def test_the_exit_status_follows_the_kind_of_error(monkeypatch: pytest.MonkeyPatch, error: Exception,
                                                    status: int) -> None:
    def fail(*_: object, **__: object) -> None:
        raise error

    monkeypatch.setattr(gobuild, "find_go", lambda **_: ("go", "go1.26"))
    monkeypatch.setattr(build, "go_plans", lambda *_, **__: ())
    monkeypatch.setattr(build, "build", fail)
    assert cli.main(["node-image", "build", "--no-load"]) == status
