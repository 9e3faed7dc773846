"""Gives a Python process started by the simulated kubelet its pod's view of the network and files.

Python imports `sitecustomize` from its path at start-up; the sim's runtime puts this directory
first on PYTHONPATH. Stdlib only, and a no-op unless the runtime set the variables below:

* LWSCONF_SIM_POD_IP - every pod shares the host's loopback interface, so a server that binds all
  addresses ("" or 0.0.0.0, or asyncio's host=None) would collide with the same port in other
  pods: such binds go to the pod IP instead, as they would inside a pod's own network namespace.
* LWSCONF_SIM_HOSTS_FILE (non-root fallback only; as root the file is bind-mounted on /etc/hosts) -
  names are looked up in this hosts file first, then as usual.
* LWSCONF_SIM_HOSTNAME (fallback only; as root the process has its own UTS namespace) -
  `socket.gethostname()`.
* LWSCONF_SIM_MOUNTS (fallback only) - JSON {mountPath: host path}: file functions of `os`, `open`
  and `io.open` see each volume at its mountPath.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import socket
from typing import Any

_POD_IP = os.environ.get("LWSCONF_SIM_POD_IP", "")
_HOSTS_FILE = os.environ.get("LWSCONF_SIM_HOSTS_FILE", "")
_HOSTNAME = os.environ.get("LWSCONF_SIM_HOSTNAME", "")
_MOUNTS: list[tuple[str, str]] = sorted(json.loads(os.environ.get("LWSCONF_SIM_MOUNTS") or "{}").items(),
                                        key=lambda item: -len(item[0]))
_WILDCARDS = ("", "0.0.0.0")
_cache: dict[str, Any] = {"key": None, "table": {}}

_orig_getaddrinfo = socket.getaddrinfo
_orig_gethostbyname = socket.gethostbyname
_orig_gethostbyname_ex = socket.gethostbyname_ex
_orig_bind = socket.socket.bind


def _hosts_table() -> dict[str, list[str]]:
    """name (lower case) -> IPv4 addresses from the hosts file, re-read when it changes."""
    try:
        st = os.stat(_HOSTS_FILE)
    except OSError:
        return {}
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    if _cache["key"] != key:
        table: dict[str, list[str]] = {}
        with builtins.open(_HOSTS_FILE, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split("#", 1)[0].split()
                if len(fields) < 2 or ":" in fields[0]:
                    continue
                for name in fields[1:]:
                    table.setdefault(name.lower(), []).append(fields[0])
        _cache["key"], _cache["table"] = key, table
    table_now: dict[str, list[str]] = _cache["table"]
    return table_now


def _lookup(host: Any) -> list[str] | None:
    if not _HOSTS_FILE or not isinstance(host, (str, bytes)):
        return None
    name = (host.decode() if isinstance(host, bytes) else host).rstrip(".").lower()
    return _hosts_table().get(name)


def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0,
                flags: int = 0) -> list[Any]:
    if host is None and _POD_IP and flags & socket.AI_PASSIVE and family in (0, socket.AF_INET):
        return _orig_getaddrinfo(_POD_IP, port, socket.AF_INET, type, proto, flags)
    addresses = _lookup(host)
    if addresses is None or family not in (0, socket.AF_INET):
        return _orig_getaddrinfo(host, port, family, type, proto, flags)
    out: list[Any] = []
    for address in addresses:
        out.extend(_orig_getaddrinfo(address, port, socket.AF_INET, type, proto, flags | socket.AI_NUMERICHOST))
    return out


def gethostbyname(host: str) -> str:
    addresses = _lookup(host)
    return addresses[0] if addresses else _orig_gethostbyname(host)


def gethostbyname_ex(host: str) -> tuple[str, list[str], list[str]]:
    addresses = _lookup(host)
    return (host, [], addresses) if addresses else _orig_gethostbyname_ex(host)


def _bind(self: socket.socket, address: Any) -> None:
    if (_POD_IP and self.family == socket.AF_INET and isinstance(address, tuple)
            and address and address[0] in _WILDCARDS):
        address = (_POD_IP, *address[1:])
    _orig_bind(self, address)


def _translate(path: Any) -> Any:
    """A container path under a mountPath -> the host path; anything else unchanged."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        return path
    text = os.fspath(path)
    if not isinstance(text, str) or not text.startswith("/"):
        return path
    for mount_path, host_path in _MOUNTS:
        if text == mount_path or text.startswith(mount_path.rstrip("/") + "/"):
            return host_path + text[len(mount_path):]
    return path


def _wrap_path_function(func: Any) -> Any:
    def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
        return func(_translate(path), *args, **kwargs)
    wrapper.__name__ = getattr(func, "__name__", "wrapper")
    wrapper.__doc__ = getattr(func, "__doc__", None)
    return wrapper


def _install() -> None:
    if _POD_IP:
        socket.socket.bind = _bind  # type: ignore[method-assign,assignment]
    if _POD_IP or _HOSTS_FILE:
        socket.getaddrinfo = getaddrinfo
        socket.gethostbyname = gethostbyname
        socket.gethostbyname_ex = gethostbyname_ex
    if _HOSTNAME:
        socket.gethostname = lambda: _HOSTNAME
    if _MOUNTS:
        builtins.open = _wrap_path_function(builtins.open)
        io.open = builtins.open
        for name in ("open", "stat", "lstat", "listdir", "scandir", "chdir", "access", "mkdir", "rmdir",
                     "remove", "unlink", "chmod", "readlink", "utime"):
            if hasattr(os, name):
                setattr(os, name, _wrap_path_function(getattr(os, name)))


_install()
