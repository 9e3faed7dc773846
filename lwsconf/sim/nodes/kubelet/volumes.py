"""Pod volumes as directories on the host, laid out the way the kubelet's volume plugins do.

A process container sees each `volumeMount.mountPath` backed by a host directory under the pod's
volume root (the runtime bind-mounts it, or rewrites paths in the non-root fallback). What ends up
in those directories follows the kubelet:

* configMap / secret / downwardAPI / projected volumes are written by an *atomic writer*
  (`pkg/volume/util/atomic_writer.go`): the files live in a timestamped `..<time>` directory, a
  `..data` symlink points at the current one and each top-level name is a symlink through
  `..data`, so a later `materialize` (a changed ConfigMap) swaps the whole set at once.
  `items` select and rename keys, `mode`/`defaultMode` set permissions (default 0644), a missing
  object or key is an error unless `optional` (`pkg/volume/configmap`, `pkg/volume/secret`).
* emptyDir (medium Memory too), persistentVolumeClaim and every other kind are plain
  directories that persist across container restarts of the pod. hostPath volumes are plain
  directories as well: the sim never exposes real host paths to a workload.
* `subPath` / `subPathExpr` mount a path inside the volume, created as a directory when missing
  (kubelet `makeMounts`); `subPathExpr` expands `$(VAR)` from the container's environment and a
  missing or empty variable is an error (`kubecontainer.ExpandContainerVolumeMounts`).
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lwsconf.sim.nodes.kubelet import env as env_mod

Obj = dict[str, Any]
Payload = dict[str, tuple[bytes, int]]
"""relative path -> (content, file mode)."""

DEFAULT_MODE = 0o644
PROJECTED_KINDS = ("configMap", "secret", "downwardAPI", "projected")
"""Volume kinds the kubelet always mounts read-only and fills with an atomic writer."""


class VolumeError(RuntimeError):
    """A volume cannot be set up (the pod stays ContainerCreating with a FailedMount event)."""


def materialize(pod: Obj, container: Obj, *, root: Path, configmaps: env_mod.Objects,
                secrets: env_mod.Objects, env: Mapping[str, str] | None = None,
                node_allocatable: Mapping[str, str] | None = None,
                service_account_token: str = "") -> dict[str, Path]:
    """Write the container's volumes under `root` and map each mountPath to its host path.

    Idempotent: volumes shared with other containers of the pod (same `root`) keep their
    content; projected volumes are rewritten only when their content changed.

    Args:
        root: the pod's volume directory (one per pod, e.g. `<pod dir>/volumes`).
        configmaps, secrets: objects of the pod's namespace by name (missing = not found).
        env: the container's environment, for `subPathExpr`.
        node_allocatable: defaults for unset limits in downwardAPI resourceFieldRef files.
        service_account_token: written for projected serviceAccountToken sources.

    Raises:
        VolumeError: a mount naming no volume, a missing non-optional object or key, a bad path.
    """
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or ():
        volume = volumes.get(mount.get("name"))
        if volume is None:
            raise VolumeError(f"container {container.get('name')!r} mounts volume {mount.get('name')!r}, "
                              "which the pod does not declare in spec.volumes")
        base = _prepare(pod, container, volume, root, configmaps, secrets, node_allocatable,
                        service_account_token)
        sub = _sub_path(mount, env or {})
        host = base / sub if sub else base
        if sub and not os.path.lexists(host):
            host.mkdir(parents=True, exist_ok=True)
        mounts[os.path.normpath(str(mount.get("mountPath") or "/"))] = host
    return mounts


def read_only_mounts(pod: Obj, container: Obj) -> frozenset[str]:
    """The container's mountPaths that are read-only: `readOnly: true` or a projected kind."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    out = set()
    for mount in container.get("volumeMounts") or ():
        volume = volumes.get(mount.get("name")) or {}
        if mount.get("readOnly") or any(kind in volume for kind in PROJECTED_KINDS):
            out.add(os.path.normpath(str(mount.get("mountPath") or "/")))
    return frozenset(out)


def _sub_path(mount: Obj, env: Mapping[str, str]) -> str:
    sub = str(mount.get("subPath") or "")
    if mount.get("subPathExpr"):
        missing: list[str] = []
        sub = env_mod.expand(str(mount["subPathExpr"]), _Present(env, missing))
        if missing:
            raise VolumeError(f"subPathExpr {mount['subPathExpr']!r}: missing value for "
                              f"{', '.join(sorted(set(missing)))}")
    if sub:
        _check_relative(sub, "subPath")
    return sub


class _Present(dict[str, str]):
    """A lookup that records names that are absent or empty (they fail a subPathExpr)."""

    def __init__(self, env: Mapping[str, str], missing: list[str]) -> None:
        super().__init__(env)
        self._missing = missing

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not self.get(key):
            self._missing.append(str(key))
        return True

    def __getitem__(self, key: str) -> str:
        return self.get(key, "")


def _check_relative(path: str, what: str) -> None:
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or not path.strip("/"):
        raise VolumeError(f"{what} {path!r} must be a relative path without '..'")


def _prepare(pod: Obj, container: Obj, volume: Obj, root: Path, configmaps: env_mod.Objects,
             secrets: env_mod.Objects, allocatable: Mapping[str, str] | None, token: str) -> Path:
    target = root / str(volume["name"])
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    payload: Payload | None = None
    if "configMap" in volume:
        source = volume["configMap"]
        payload = _object_payload("ConfigMap", configmaps.get(source.get("name") or ""), source, namespace,
                                  _mode(source.get("defaultMode")))
    elif "secret" in volume:
        source = volume["secret"]
        payload = _object_payload("Secret", secrets.get(source.get("secretName") or ""),
                                  {**source, "name": source.get("secretName")}, namespace,
                                  _mode(source.get("defaultMode")))
    elif "downwardAPI" in volume:
        source = volume["downwardAPI"]
        payload = _downward_payload(pod, container, source.get("items") or (), _mode(source.get("defaultMode")),
                                    allocatable)
    elif "projected" in volume:
        payload = _projected_payload(pod, container, volume["projected"], namespace, configmaps, secrets,
                                     allocatable, token)
    if payload is None:
        target.mkdir(parents=True, exist_ok=True)
    else:
        write_projection(target, payload)
    return target


def _mode(value: Any, default: int = DEFAULT_MODE) -> int:
    return int(value) if value is not None else default


def _object_payload(kind: str, obj: Obj | None, source: Obj, namespace: str, default_mode: int) -> Payload:
    """The files of a configMap/secret volume (or projection): all keys, or the listed `items`."""
    if obj is None:
        if source.get("optional"):
            return {}
        raise VolumeError(f"{kind} {namespace}/{source.get('name')} not found: create it or mark the "
                          "volume optional")
    data = _config_bytes(obj) if kind == "ConfigMap" else _secret_bytes(obj)
    items = source.get("items")
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    payload: Payload = {}
    for item in items:
        key = item.get("key")
        if key not in data:
            if source.get("optional"):
                continue
            raise VolumeError(f"{kind} {namespace}/{source.get('name')} has no key {key!r} (listed in items)")
        payload[str(item.get("path") or key)] = (data[key], _mode(item.get("mode"), default_mode))
    return payload


def _config_bytes(configmap: Obj) -> dict[str, bytes]:
    data = {k: v.encode() for k, v in env_mod.configmap_data(configmap).items()}
    for key, value in (configmap.get("binaryData") or {}).items():
        try:
            data[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise VolumeError(f"ConfigMap binaryData key {key!r} is not valid base64") from None
    return data


def _secret_bytes(secret: Obj) -> dict[str, bytes]:
    try:
        return env_mod.secret_data(secret)
    except env_mod.EnvError as exc:
        raise VolumeError(str(exc)) from None


def _downward_payload(pod: Obj, container: Obj, items: Any, default_mode: int,
                      allocatable: Mapping[str, str] | None) -> Payload:
    payload: Payload = {}
    try:
        for item in items:
            if item.get("fieldRef") is not None:
                value = env_mod.field_value(pod, str(item["fieldRef"].get("fieldPath") or ""))
            elif item.get("resourceFieldRef") is not None:
                value = env_mod.resource_value(item["resourceFieldRef"], pod, container, allocatable)
            else:
                continue
            payload[str(item.get("path"))] = (value.encode(), _mode(item.get("mode"), default_mode))
    except env_mod.EnvError as exc:
        raise VolumeError(f"downwardAPI volume: {exc}") from None
    return payload


def _projected_payload(pod: Obj, container: Obj, projected: Obj, namespace: str, configmaps: env_mod.Objects,
                       secrets: env_mod.Objects, allocatable: Mapping[str, str] | None, token: str) -> Payload:
    mode = _mode(projected.get("defaultMode"))
    payload: Payload = {}
    for source in projected.get("sources") or ():
        if source.get("configMap") is not None:
            cm = source["configMap"]
            payload.update(_object_payload("ConfigMap", configmaps.get(cm.get("name") or ""), cm, namespace, mode))
        elif source.get("secret") is not None:
            sec = source["secret"]
            payload.update(_object_payload("Secret", secrets.get(sec.get("name") or ""), sec, namespace, mode))
        elif source.get("downwardAPI") is not None:
            payload.update(_downward_payload(pod, container, source["downwardAPI"].get("items") or (), mode,
                                             allocatable))
        elif source.get("serviceAccountToken") is not None:
            path = str(source["serviceAccountToken"].get("path") or "token")
            payload[path] = (token.encode(), mode)
    return payload


# --- the atomic writer ----------------------------------------------------------------------------

DATA_DIR = "..data"


def write_projection(target: Path, payload: Payload) -> bool:
    """Make `target` hold exactly `payload`, swapping it in at once; False when nothing changed.

    Raises:
        VolumeError: a payload path that is absolute, contains '..' or starts with '..'.
    """
    for rel in payload:
        _check_relative(rel, "volume file path")
        if rel.startswith(".."):
            raise VolumeError(f"volume file path {rel!r} must not start with '..'")
    target.mkdir(parents=True, exist_ok=True)
    if _current_payload(target) == payload:
        return False
    stamp = target / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{uuid.uuid4().hex[:10]}"
    for rel, (data, mode) in payload.items():
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, mode)
    stamp.mkdir(exist_ok=True)
    tmp = target / "..data_tmp"
    tmp.unlink(missing_ok=True)
    os.symlink(stamp.name, tmp)
    os.replace(tmp, target / DATA_DIR)
    _relink_top_level(target, {rel.split("/")[0] for rel in payload})
    for entry in target.iterdir():
        if entry.name.startswith("..") and entry.name not in (DATA_DIR, stamp.name) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
    return True


def _relink_top_level(target: Path, tops: set[str]) -> None:
    for top in tops:
        link = target / top
        if link.is_symlink():
            continue
        if link.is_dir():
            shutil.rmtree(link)
        elif link.exists():
            link.unlink()
        os.symlink(f"{DATA_DIR}/{top}", link)
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.is_symlink() and entry.name not in tops:
            entry.unlink()


def _current_payload(target: Path) -> Payload | None:
    data_dir = target / DATA_DIR
    if not data_dir.is_symlink():
        return None
    out: Payload = {}
    real = data_dir.resolve()
    for path in real.rglob("*"):
        if path.is_file():
            out[str(path.relative_to(real))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return out
