"""lwsconf.realnodes.hostpaths: a compiled-in host path goes with the last cluster that found it missing."""

from __future__ import annotations

import fcntl
from pathlib import Path

from lwsconf.realnodes import hostpaths


def test_only_what_was_missing_is_removed_and_only_by_the_last_cluster(tmp_path: Path) -> None:
    locks, host = tmp_path / "locks", tmp_path / "host"
    locks.mkdir()
    existing, missing = host / "var-log-containers", host / "var-lib-kubelet"
    existing.mkdir(parents=True)
    paths = (existing, missing)
    hostpaths.remember_missing(locks, paths)
    missing.mkdir()
    (missing / "device-plugins").mkdir()  # what the kubelets then write
    own, other = locks / "block-0.lock", locks / "block-1.lock"
    own.touch()
    with open(other, "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert hostpaths.others_running(locks, own) is True
    assert hostpaths.others_running(locks, own) is False
    assert hostpaths.remove_created(locks, paths) == []
    assert existing.is_dir() and not missing.exists()
    missing.mkdir()
    assert hostpaths.remove_created(locks, paths) == [] and missing.is_dir(), "a marker is used once"
