"""A container's termination message, as the kubelet reads it when the container has exited. Pure but for reading
the two files it is given.

What the kubelet does (k8s.io/kubernetes@v1.37.2 pkg/kubelet/kuberuntime/kuberuntime_container.go):

* before each start of a container with a `terminationMessagePath`, it creates an empty file of its own (mode 0666)
  in the pod's container folder and mounts it at that path (:510-539, `makeMounts`); the sim does the same
  (`file_for`, mounted by `processes.ProcessLauncher`);
* when the container has exited, the message is the last `MAX_FILE_BYTES` of that file (:550-574,
  `getTerminationMessage`; kubecontainer.MaxContainerTerminationMessageLength, pkg/kubelet/container/runtime.go:828);
* with `terminationMessagePolicy: FallbackToLogsOnError`, a container that exited non-zero (and did not fail to
  run at all) and left the file empty gets the tail of its log instead: the last `MAX_LOG_LINES` lines, at most
  the last `MAX_LOG_BYTES` bytes of them (:576-584, :586-607; runtime.go:831-834).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Any

from lwsconf.sim.nodes.streams import logserver

DEFAULT_PATH = "/dev/termination-log"
"""The API's default terminationMessagePath (core/v1 defaults), for a container spec read before defaulting."""
MAX_FILE_BYTES = 4 * 1024
MAX_LOG_BYTES = 2 * 1024
MAX_LOG_LINES = 80
CANNOT_RUN = "ContainerCannotRun"


def message_path(container: dict[str, Any]) -> str:
    """Where the container writes its message ("" when it has none)."""
    if "terminationMessagePath" in container:
        return str(container.get("terminationMessagePath") or "")
    return DEFAULT_PATH


def file_for(container_dir: Path) -> Path:
    """A new empty file (0666) for one start of a container, in that container's folder (kubelet's makeUID name)."""
    container_dir.mkdir(parents=True, exist_ok=True)
    path = container_dir / f"{secrets.randbits(32):08x}"
    path.touch()
    os.chmod(path, 0o666)
    return path


def _tail_bytes(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        return handle.read()


def _log_tail(log_path: Path | None) -> str:
    if log_path is None:
        return ""
    with contextlib.suppress(OSError):
        data = log_path.read_text(errors="replace")
        text = "".join(e.render(False) for e in logserver.parse_lines(data, "")[-MAX_LOG_LINES:])
        return text.encode()[-MAX_LOG_BYTES:].decode(errors="replace")
    return ""


def read(container: dict[str, Any], message_file: Path | None, *, exit_code: int, reason: str,
         log_path: Path | None) -> str:
    """The termination message of a container that exited with `exit_code` (and `reason`)."""
    fallback = (container.get("terminationMessagePolicy") == "FallbackToLogsOnError" and exit_code != 0
                and reason != CANNOT_RUN)
    if message_file is None or not message_path(container):
        return _log_tail(log_path) if fallback else ""
    try:
        data = _tail_bytes(message_file, MAX_FILE_BYTES)
    except FileNotFoundError:
        return _log_tail(log_path) if fallback else ""
    except OSError as exc:
        return f"Error on reading termination log {message_file}: {exc}"
    if not data and fallback:
        return _log_tail(log_path)
    return data.decode(errors="replace")
