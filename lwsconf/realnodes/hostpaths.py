"""Host paths a kubelet or containerd writes whatever their configuration says, removed with the last real node.

Everything else of a real node lives under the run's folder, but these paths are compiled in (k8s.io/kubernetes
v1.37.2: the device manager's socket /var/lib/kubelet/device-plugins/kubelet.sock, pkg/kubelet/cm/devicemanager/
manager.go; the container log links in /var/log/containers, pkg/kubelet/kubelet.go DefaultContainerLogsDir;
containerd's CNI library keeps its results cache in /var/lib/cni, which go-cni v1.1.14 does not let us move).
Several real-node clusters may run side by side and share them, so a path is removed only if no cluster of ours
found it when it started (a marker in the lock folder says so) and only by the last cluster to stop.
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

FIXED_PATHS = (Path("/var/lib/kubelet"), Path("/var/log/containers"), Path("/var/log/pods"), Path("/var/lib/cni"))


def _marker(lock_dir: Path, path: Path) -> Path:
    return lock_dir / "created" / str(path).strip("/").replace("/", "%")


def remember_missing(lock_dir: Path, paths: tuple[Path, ...] = FIXED_PATHS) -> None:
    """Mark each of `paths` that does not exist now: a run of ours will create it."""
    (lock_dir / "created").mkdir(parents=True, exist_ok=True)
    for path in paths:
        if not path.exists():
            _marker(lock_dir, path).touch()


def created_by_us(lock_dir: Path, path: Path) -> bool:
    """Whether a real-node cluster of ours created `path` (it is then removed when the last of them stops)."""
    return _marker(lock_dir, path).exists()


def others_running(lock_dir: Path, own_lock: Path) -> bool:
    """Whether another cluster holds a block lock in `lock_dir` (tried without waiting, released at once)."""
    for lock in lock_dir.glob("block-*.lock"):
        if lock == own_lock:
            continue
        with open(lock, "ab") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def remove_created(lock_dir: Path, paths: tuple[Path, ...] = FIXED_PATHS) -> list[str]:
    """Remove every marked path and its marker; what could not be removed is returned."""
    problems = []
    for path in paths:
        marker = _marker(lock_dir, path)
        if not marker.exists():
            continue
        shutil.rmtree(path, ignore_errors=True)
        if path.exists():
            problems.append(f"{path} (created by real nodes) could not be removed")
        else:
            marker.unlink(missing_ok=True)
    return problems
