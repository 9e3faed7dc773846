"""replicasets.apps/v1 as kube-apiserver serves it: validation, status checks, table columns, discovery.

The sim's Deployment controller writes ReplicaSets, so a ReplicaSet that kube-apiserver would refuse must be
refused here too (the controller's bugs show up as 422s, not as objects a real cluster could never hold).
"""

from __future__ import annotations

import copy
from typing import Any

from lwsconf.sim.apiserver.admission import defaults
from lwsconf.sim.apiserver.admission.validation import registry as validation
from lwsconf.sim.apiserver.storage import resources
from tests.sim.apiserver.tables.test_tables import cells, info, obj

KEY = ("apps", "replicasets")
SELECTOR = {"matchLabels": {"app": "web", "pod-template-hash": "abc"}}


def replicaset(**spec: Any) -> dict[str, Any]:
    body = {"selector": copy.deepcopy(SELECTOR),
            "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                         "spec": {"containers": [{"name": "py", "image": "python:3.12"}]}}}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-abc", "namespace": "default"},
            "spec": body}


def causes(obj_: dict[str, Any], old: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    obj_ = copy.deepcopy(obj_)
    defaults.default_builtin(KEY, obj_, old)
    return [(c.field, c.message) for c in validation.validate_builtin(KEY, obj_, old)]


def test_valid_replicaset_is_defaulted_to_one_replica_and_accepted() -> None:
    rs = replicaset()
    defaults.default_builtin(KEY, rs, None)
    assert rs["spec"]["replicas"] == 1
    assert validation.validate_builtin(KEY, rs, None) == []


def test_template_labels_must_match_the_selector_and_replicas_be_nonnegative() -> None:
    """ValidateReplicaSetSpec: '`selector` does not match template `labels`', replicas >= 0."""
    found = causes(replicaset(replicas=-1, selector={"matchLabels": {"app": "other"}}))
    assert [field for field, _ in found] == ["spec.replicas", "spec.template.metadata.labels"]
    assert found[1][1].endswith("`selector` does not match template `labels`")


def test_selector_is_immutable() -> None:
    old = replicaset()
    defaults.default_builtin(KEY, old, None)
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    assert [field for field, _ in causes(new, old)] == ["spec.selector"]


def test_status_counters_may_not_exceed_replicas() -> None:
    bad = validation.validate_builtin_status(KEY, {"status": {"replicas": 1, "readyReplicas": 2,
                                                              "availableReplicas": 2}})
    assert [c.field for c in bad] == ["status.readyReplicas", "status.availableReplicas"]


def test_table_columns_as_print_replicaset() -> None:
    """printReplicaSet: Desired, Current, Ready, Age; wide adds Containers, Images, Selector."""
    rs = obj("web-abc", spec={"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                              "template": {"spec": {"containers": [{"name": "py", "image": "python:3.12"}]}}},
             status={"replicas": 3, "readyReplicas": 2})
    assert cells(info(*KEY), rs) == {"Name": "web-abc", "Desired": 3, "Current": 3, "Ready": 2, "Age": "3m2s",
                                     "Containers": "py", "Images": "python:3.12", "Selector": "app=web"}


def test_served_with_short_name_rs_status_and_scale() -> None:
    served = resources.Registry().lookup("apps", "v1", "replicasets")
    assert served is not None
    assert (served.kind, served.short_names, served.categories) == ("ReplicaSet", ("rs",), ("all",))
    assert {"status", "scale"} <= set(served.subresources)
