"""The host's inotify instance limit: raised while real nodes run, put back by the last of them to stop.

Why: every real node holds inotify instances (measured 2026-12-06 with 3 nodes up: kubelet 6, containerd 2,
kube-proxy 1 per node) and so does each control plane (kube-apiserver 3, kube-controller-manager 7, kube-scheduler 1).
The kernel counts them per user against `fs.inotify.max_user_instances`, 128 by default: the suite at `-n 2` runs two
clusters of 6 nodes (2 x 65 = 130), and the kubelet that comes last dies at start with "Failed to start cAdvisor"
err="inotify_init: too many open files" (seen in a run beside a soak; kind's known issues name the same limit for
clusters of several nodes). So while any cluster of ours runs the limit is at least `INSTANCES`; the value found
before is kept in the lock folder, and the last cluster to stop writes it back. A run killed outright leaves the limit
raised until the next run's last cluster stops, as `hostpaths` does with the paths it removes.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

LIMIT_FILE = Path("/proc/sys/fs/inotify/max_user_instances")
INSTANCES = 1024
"""The limit while real nodes run: room for several 6-node clusters beside whatever the host runs."""
MARKER = "inotify-max-user-instances"


def raise_limit(lock_dir: Path, limit_file: Path = LIMIT_FILE, wanted: int = INSTANCES) -> str:
    """Raise the limit to `wanted` when it is lower, remembering the value found first; "" or why it could not."""
    try:
        current = int(limit_file.read_text().strip())
        if current >= wanted:
            return ""
        marker = lock_dir / MARKER
        if not marker.exists():
            marker.write_text(f"{current}\n")
        limit_file.write_text(f"{wanted}\n")
    except (OSError, ValueError) as exc:
        message = (f"could not raise {limit_file} to {wanted} ({exc}); with many real nodes a kubelet may fail with "
                   f"'inotify_init: too many open files': raise it by hand (sysctl fs.inotify.max_user_instances)")
        log.warning("%s", message)
        return message
    return ""


def restore_limit(lock_dir: Path, limit_file: Path = LIMIT_FILE) -> list[str]:
    """Write back the value `raise_limit` found (the last cluster to stop calls this); what failed is returned."""
    marker = lock_dir / MARKER
    if not marker.exists():
        return []
    try:
        limit_file.write_text(marker.read_text())
    except OSError as exc:
        return [f"{limit_file} could not be put back to {marker.read_text().strip()}: {exc}"]
    marker.unlink(missing_ok=True)
    return []
