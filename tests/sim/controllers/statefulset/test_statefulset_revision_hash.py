"""The StatefulSet revision name is the one kube-controller-manager gives the same template.

The expected value is what kube-controller-manager 1.37.2 named the revision of the corpus's
StatefulSet in `lwsconf fidelity --topic controllers` (controllers/ctl-statefulset/first-pod:
`controller-revision-hash: web-5fbf5f4544`): pkg/controller/history/controller_history.go
`HashControllerRevision` hashes the data bytes and then the collision count, which
pkg/controller/statefulset/stateful_set_control.go `getStatefulSetRevisions` always passes, 0 included.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.controllers.statefulset import revisions as revs

DEFAULTED_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"automountServiceAccountToken": False,
             "containers": [{"image": "busybox:1.36", "imagePullPolicy": "IfNotPresent", "name": "main",
                             "resources": {}, "terminationMessagePath": "/dev/termination-log",
                             "terminationMessagePolicy": "File"}],
             "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
             "securityContext": {}, "terminationGracePeriodSeconds": 30}}


def _sts() -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns", "uid": "u"}, "spec": {"template": DEFAULTED_TEMPLATE}}


def test_revision_name_matches_kube_controller_manager_for_collision_count_zero() -> None:
    revision = revs.new_revision(_sts(), 1, 0)
    assert revision["metadata"]["name"] == "web-5fbf5f4544"
    # the revision's own label key is controller.kubernetes.io/hash (pkg/controller/history, 1.37.2: the held-out
    # fidelity corpus), pods keep controller-revision-hash: <revision name>
    assert revision["metadata"]["labels"]["controller.kubernetes.io/hash"] == "5fbf5f4544"
    assert "controller-revision-hash" not in revision["metadata"]["labels"]


def test_a_collision_count_changes_the_hash() -> None:
    data = revs.patch_data(_sts())
    assert revs.revision_hash(data, 1) != revs.revision_hash(data, 0)
