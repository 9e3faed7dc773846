"""Pod volumes on disk: what each mountPath shows, laid out as the kubelet's volume plugins do.

Sources: kubernetes pkg/volume/util/atomic_writer.go (..data symlink swap), pkg/volume/configmap
and pkg/volume/secret (items, defaultMode 0644, optional), pkg/volume/downwardapi,
pkg/volume/projected, pkg/kubelet/kubelet_pods.go makeMounts (subPath created when missing,
subPathExpr from the container env), https://kubernetes.io/docs/concepts/storage/volumes/.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from lwsconf.sim.nodes.kubelet import volumes

Obj = dict[str, Any]


def make_pod(volume_list: list[Obj], mounts: list[Obj]) -> tuple[Obj, Obj]:
    container = {"name": "main", "volumeMounts": mounts, "resources": {"limits": {"memory": "2Gi"}}}
    pod = {"metadata": {"name": "web-0", "namespace": "team", "uid": "u1", "labels": {"b": "2", "a": "1"}},
           "spec": {"containers": [container], "volumes": volume_list}}
    return pod, container


CONFIGMAPS = {"cfg": {"metadata": {"name": "cfg"}, "data": {"app.yaml": "port: 80\n", "mode": "fast"},
                      "binaryData": {"blob": base64.b64encode(b"\x00\x01").decode()}}}
SECRETS = {"creds": {"metadata": {"name": "creds"}, "data": {"token": base64.b64encode(b"s3cret").decode()}}}


def materialize(tmp_path: Path, volume_list: list[Obj], mounts: list[Obj], **kwargs: Any) -> dict[str, Path]:
    pod, container = make_pod(volume_list, mounts)
    return volumes.materialize(pod, container, root=tmp_path / "vols", configmaps=kwargs.pop("configmaps", CONFIGMAPS),
                               secrets=kwargs.pop("secrets", SECRETS), **kwargs)


def test_config_map_volume_projects_every_key_with_default_mode_through_data_symlink(tmp_path: Path) -> None:
    got = materialize(tmp_path, [{"name": "c", "configMap": {"name": "cfg"}}], [{"name": "c", "mountPath": "/etc/app"}])
    root = got["/etc/app"]
    assert (root / "app.yaml").read_text() == "port: 80\n"
    assert (root / "blob").read_bytes() == b"\x00\x01"        # binaryData is projected too
    assert os.readlink(root / "mode") == "..data/mode"        # user-visible names go through ..data
    assert (root / "..data").is_symlink()
    assert (root / "mode").resolve().stat().st_mode & 0o777 == 0o644


def test_items_select_and_rename_keys_with_their_own_mode(tmp_path: Path) -> None:
    volume = {"name": "c", "configMap": {"name": "cfg", "defaultMode": 0o600,
                                          "items": [{"key": "app.yaml", "path": "conf/app.yaml"},
                                                    {"key": "mode", "path": "m", "mode": 0o400}]}}
    root = materialize(tmp_path, [volume], [{"name": "c", "mountPath": "/cfg"}])["/cfg"]
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("..")) == ["conf", "m"]
    assert (root / "conf" / "app.yaml").read_text() == "port: 80\n"
    assert (root / "conf" / "app.yaml").resolve().stat().st_mode & 0o777 == 0o600
    assert (root / "m").resolve().stat().st_mode & 0o777 == 0o400


def test_secret_volume_is_decoded(tmp_path: Path) -> None:
    root = materialize(tmp_path, [{"name": "s", "secret": {"secretName": "creds"}}],
                       [{"name": "s", "mountPath": "/var/run/creds"}])["/var/run/creds"]
    assert (root / "token").read_bytes() == b"s3cret"


@pytest.mark.parametrize("volume", [
    {"name": "v", "configMap": {"name": "absent"}},
    {"name": "v", "secret": {"secretName": "absent"}},
    {"name": "v", "configMap": {"name": "cfg", "items": [{"key": "nope", "path": "x"}]}},
])
def test_missing_object_or_key_fails_unless_optional(tmp_path: Path, volume: Obj) -> None:
    with pytest.raises(volumes.VolumeError):
        materialize(tmp_path, [volume], [{"name": "v", "mountPath": "/v"}])
    kind = "configMap" if "configMap" in volume else "secret"
    optional = {**volume, kind: {**volume[kind], "optional": True}}
    root = materialize(tmp_path, [optional], [{"name": "v", "mountPath": "/v"}])["/v"]
    assert [p.name for p in root.iterdir() if not p.name.startswith("..")] == []


def test_a_changed_config_map_swaps_the_whole_set_and_drops_removed_keys(tmp_path: Path) -> None:
    args = ([{"name": "c", "configMap": {"name": "cfg"}}], [{"name": "c", "mountPath": "/c"}])
    root = materialize(tmp_path, *args)["/c"]
    first_target = os.readlink(root / "..data")
    changed = {"cfg": {"metadata": {"name": "cfg"}, "data": {"mode": "slow"}}}
    materialize(tmp_path, *args, configmaps=changed)
    assert (root / "mode").read_text() == "slow"
    assert not (root / "app.yaml").exists()
    assert os.readlink(root / "..data") != first_target
    assert not (root / first_target).exists()               # the old generation is removed
    assert materialize(tmp_path, *args, configmaps=changed)["/c"] == root
    assert volumes.write_projection(root, {"mode": (b"slow", 0o644)}) is False   # unchanged: no rewrite


def test_downward_api_volume_writes_labels_and_resources(tmp_path: Path) -> None:
    volume = {"name": "d", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "mem", "resourceFieldRef": {"containerName": "main", "resource": "limits.memory", "divisor": "1Mi"}},
    ]}}
    root = materialize(tmp_path, [volume], [{"name": "d", "mountPath": "/etc/podinfo"}])["/etc/podinfo"]
    assert (root / "labels").read_text() == 'a="1"\nb="2"'
    assert (root / "name").read_text() == "web-0"
    assert (root / "mem").read_text() == "2048"


def test_projected_volume_combines_sources(tmp_path: Path) -> None:
    volume = {"name": "p", "projected": {"defaultMode": 0o440, "sources": [
        {"configMap": {"name": "cfg", "items": [{"key": "mode", "path": "mode"}]}},
        {"secret": {"name": "creds"}},
        {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        {"serviceAccountToken": {"path": "token-sa", "expirationSeconds": 3600}},
    ]}}
    root = materialize(tmp_path, [volume], [{"name": "p", "mountPath": "/proj"}],
                       service_account_token="fake.jwt")["/proj"]
    assert {p.name: p.read_text() for p in root.iterdir() if not p.name.startswith("..")} == {
        "mode": "fast", "token": "s3cret", "ns": "team", "token-sa": "fake.jwt"}
    assert (root / "ns").resolve().stat().st_mode & 0o777 == 0o440


def test_empty_dir_is_shared_by_containers_and_survives_restarts(tmp_path: Path) -> None:
    args = ([{"name": "scratch", "emptyDir": {"medium": "Memory"}}], [{"name": "scratch", "mountPath": "/dev/shm"}])
    first = materialize(tmp_path, *args)["/dev/shm"]
    (first / "state").write_text("kept")
    again = materialize(tmp_path, *args)["/dev/shm"]
    assert again == first and (again / "state").read_text() == "kept"


def test_pvc_and_host_path_volumes_are_plain_private_directories(tmp_path: Path) -> None:
    got = materialize(tmp_path, [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                                 {"name": "host", "hostPath": {"path": "/etc"}}],
                      [{"name": "data", "mountPath": "/data"}, {"name": "host", "mountPath": "/host-etc"}])
    assert got["/data"].is_dir() and got["/host-etc"].is_dir()
    assert got["/host-etc"].resolve() != Path("/etc") and list(got["/host-etc"].iterdir()) == []


def test_sub_path_mounts_a_file_or_a_created_directory_inside_the_volume(tmp_path: Path) -> None:
    got = materialize(tmp_path, [{"name": "c", "configMap": {"name": "cfg"}}, {"name": "e", "emptyDir": {}}],
                      [{"name": "c", "mountPath": "/etc/app.yaml", "subPath": "app.yaml"},
                       {"name": "e", "mountPath": "/work", "subPath": "nested/dir"}])
    assert got["/etc/app.yaml"].read_text() == "port: 80\n"
    assert got["/work"].is_dir() and got["/work"] == tmp_path / "vols" / "e" / "nested" / "dir"


def test_sub_path_expr_expands_the_environment_and_rejects_missing_values(tmp_path: Path) -> None:
    volume_list = [{"name": "e", "emptyDir": {}}]
    mounts = [{"name": "e", "mountPath": "/logs", "subPathExpr": "$(POD_NAME)/logs"}]
    got = materialize(tmp_path, volume_list, mounts, env={"POD_NAME": "web-0"})
    assert got["/logs"] == tmp_path / "vols" / "e" / "web-0" / "logs"
    with pytest.raises(volumes.VolumeError, match="POD_NAME"):
        materialize(tmp_path, volume_list, mounts, env={"POD_NAME": ""})


@pytest.mark.parametrize("sub_path", ["../escape", "/abs", "a/../../b"])
def test_sub_paths_cannot_leave_the_volume(tmp_path: Path, sub_path: str) -> None:
    with pytest.raises(volumes.VolumeError, match="relative"):
        materialize(tmp_path, [{"name": "e", "emptyDir": {}}], [{"name": "e", "mountPath": "/x", "subPath": sub_path}])


def test_mount_of_an_undeclared_volume_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(volumes.VolumeError, match="does not declare"):
        materialize(tmp_path, [], [{"name": "ghost", "mountPath": "/g"}])


def test_projected_kinds_and_read_only_mounts_are_read_only() -> None:
    pod, container = make_pod([{"name": "c", "configMap": {"name": "cfg"}}, {"name": "e", "emptyDir": {}},
                               {"name": "r", "emptyDir": {}}],
                              [{"name": "c", "mountPath": "/c"}, {"name": "e", "mountPath": "/e"},
                               {"name": "r", "mountPath": "/r/", "readOnly": True}])
    assert volumes.read_only_mounts(pod, container) == {"/c", "/r"}
