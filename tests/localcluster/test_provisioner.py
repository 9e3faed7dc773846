"""The local cluster's volume provisioner: which claims get a volume, and its shape."""

from __future__ import annotations

from lwsconf.localcluster import provisioner


def claim(**spec: object) -> dict[str, object]:
    return {"metadata": {"name": "pvc-mu-0", "namespace": "ns", "uid": "u1"},
            "spec": {"storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Mi"}}, **spec}, "status": {"phase": "Pending"}}


def test_a_pending_claim_of_the_class_gets_a_prebound_volume_of_its_size() -> None:
    volume = provisioner.volume_for(claim())
    assert volume is not None
    assert volume["metadata"]["name"] == "pvc-u1"
    assert volume["spec"]["capacity"] == {"storage": "1Mi"} and volume["spec"]["storageClassName"] == "standard"
    assert volume["spec"]["claimRef"] == {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "ns",
                                          "name": "pvc-mu-0", "uid": "u1"}
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == provisioner.PROVISIONER


def test_claims_of_another_class_or_already_bound_get_none() -> None:
    assert provisioner.volume_for(claim(storageClassName="fast")) is None
    assert provisioner.volume_for(claim(volumeName="pv-1")) is None
    bound = claim()
    bound["status"] = {"phase": "Bound"}
    assert provisioner.volume_for(bound) is None
    assert provisioner.storage_class()["metadata"]["annotations"] == {
        "storageclass.kubernetes.io/is-default-class": "true"}


def test_the_volume_folder_lies_under_the_root_it_is_given() -> None:
    """Beside real nodes the real kubelet makes the hostPath folder: there the root is a folder of the run's."""
    volume = provisioner.volume_for(claim(), "/tmp/run/volumes")
    assert volume is not None
    assert volume["spec"]["hostPath"] == {"path": "/tmp/run/volumes/pvc-u1", "type": "DirectoryOrCreate"}
    default = provisioner.volume_for(claim())
    assert default is not None and default["spec"]["hostPath"]["path"] == f"{provisioner.VOLUME_ROOT}/pvc-u1"
