"""The defaulted view of a LeaderWorkerSet (contract 1.2-1.3) and the event texts (4.6)."""

from __future__ import annotations

import pytest

from lwsconf.reconciler import events, labels, spec
from tests.reconciler import factories as f


def test_defaults_apply_to_an_object_the_crd_did_not_default() -> None:
    view = spec.LwsSpec.of(f.lws(replicas=None, size=None))
    assert (view.replicas, view.size, view.partition, view.max_unavailable, view.max_surge) == (1, 1, 0, 1, 0)
    assert (view.restart_policy, view.startup_policy, view.subdomain_policy) == (
        "RecreateGroupOnPodRestart", "LeaderCreated", "Shared")
    assert view.subgroup_size is None and view.leader_template is None and view.volume_claim_templates == ()


def test_default_restart_policy_reads_as_none() -> None:
    view = spec.LwsSpec.of(f.lws(restartPolicy="Default"))
    assert view.restart_policy == "None" and not view.recreates_groups


def test_rollout_configuration_and_subgroups_are_read() -> None:
    obj = f.with_spec(f.lws(subGroupPolicy={"subGroupSize": 2}),
                      rolloutStrategy=f.rollout_config(max_unavailable="25%", max_surge=2, partition=1))
    view = spec.LwsSpec.of(obj)
    assert (view.max_unavailable, view.max_surge, view.partition) == ("25%", 2, 1)
    assert (view.subgroup_size, view.subgroup_type) == (2, "LeaderWorker")


def test_topology_annotations() -> None:
    view = spec.LwsSpec.of(f.lws(annotations={labels.EXCLUSIVE_TOPOLOGY: "", labels.SUBGROUP_EXCLUSIVE_TOPOLOGY: "r"}))
    assert view.exclusive_topology is None
    assert view.subgroup_exclusive_topology is None, "ignored without a subGroupPolicy (sim accepts such objects)"


@pytest.mark.parametrize(("obj", "message"), [
    ({"metadata": {"name": "x"}, "spec": {"leaderWorkerTemplate": {}}}, "workerTemplate is required"),
    (f.lws(size="2"), "size must be an integer"),
    (f.lws(subGroupPolicy={"subGroupPolicyType": "LeaderWorker"}), "subGroupSize is required"),
    (f.lws(subGroupPolicy={"subGroupSize": 0}), "subGroupSize must be >= 1"),
    (f.with_spec(f.lws(), rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": 1.5}}), "maxSurge must be"),
], ids=["no worker template", "size not int", "subGroupSize missing", "subGroupSize 0", "maxSurge float"])
def test_unreadable_objects_raise_naming_the_field(obj: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec.LwsSpec.of(obj)


def test_event_texts() -> None:
    assert events.updating_replicas(3, 4).note == "Updating replica 3"
    assert events.updating_replicas(0, 4).note == "Updating replicas 0 to 3 (inclusive)"
    assert events.deleting_surge("n", 4, 5).note == "deleting surge replica n-4"
    assert events.deleting_surge("n", 4, 7).note == "deleting surge replicas from n-4 to n-6"
    assert events.created_worker_statefulset("n-0").note == "Created worker statefulset for leader pod n-0"
    assert events.failed_leader_statefulset("n", "boom", creating=False) == events.Event(
        "Warning", "FailedUpdate", "Failed to update leader statefulset n: boom", "Update")
    with pytest.raises(ValueError, match="cause must be one of"):
        events.creating_revision("k", cause="other")
