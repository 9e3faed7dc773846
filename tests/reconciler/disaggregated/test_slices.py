"""One slice of a DisaggregatedSet, decision by decision (docs/disaggregatedset-contract.md 2.3, 4.1-4.3, 4.7).

`World` stands in for the API and the LWS controller: it applies a decision's writes and, when told, makes every
LWS's replicas ready. Driving `slices.decide` through whole rollouts checks the decision layer (start, gate,
steps, newest-first coordinated drain, deletion of drained revisions, Services) against the contract's traces.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from lwsconf import disaggapi
from lwsconf.reconciler.disaggregated import objects, slices


def _role(name: str, replicas: int, image: str = "img:1", config: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "leaderWorkerTemplate": {"size": 1, "workerTemplate": {
        "spec": {"containers": [{"name": "c", "image": image}]}}}}
    if config is not None:
        spec["rolloutStrategy"] = {"type": "RollingUpdate", "rollingUpdateConfiguration": config}
    return {"name": name, "spec": spec}


def _ds(*roles: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "ds", "namespace": "ns", "uid": "u"}, "spec": {"roles": list(roles)}}


@dataclass
class World:
    lws: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    clock: int = 0
    events: list[slices.Event] = field(default_factory=list)

    def decide(self, ds: dict[str, Any]) -> slices.SliceDecision:
        rev = objects.revision(ds["spec"]["roles"])
        targets = {r["name"]: objects.target(r, None) for r in ds["spec"]["roles"]}
        decision = slices.decide(ds, 0, rev, targets, list(self.lws.values()), list(self.services.values()))
        self.apply(decision)
        return decision

    def apply(self, decision: slices.SliceDecision) -> None:
        self.events += decision.events
        for action in decision.actions:
            if isinstance(action, slices.Create):
                obj = copy.deepcopy(action.obj)
                self.clock += 1
                obj["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{self.clock:02d}Z"
                target = self.lws if obj["kind"] == "LeaderWorkerSet" else self.services
                assert obj["metadata"]["name"] not in target, f"created twice: {obj['metadata']['name']}"
                target[obj["metadata"]["name"]] = obj
            elif isinstance(action, slices.SetReplicas):
                self.lws[action.name]["spec"]["replicas"] = action.replicas
            elif isinstance(action, slices.Annotate):
                self.lws[action.name]["metadata"].setdefault("annotations", {})[disaggapi.INITIAL_REPLICAS] = \
                    str(action.initial_replicas)
            else:
                (self.lws if action.kind == "LeaderWorkerSet" else self.services).pop(action.name)

    def ready(self) -> None:
        """The LWS controller and kubelets catch up: every LWS's groups exist and are ready."""
        for obj in self.lws.values():
            n = obj["spec"]["replicas"]
            obj["status"] = {"replicas": n, "readyReplicas": n, "updatedReplicas": n}

    def counts(self, rev: str, roles: list[str]) -> tuple[int, ...]:
        old = [sum(o["spec"]["replicas"] for o in self.lws.values()
                   if o["metadata"]["labels"][disaggapi.ROLE] == r and o["metadata"]["labels"][disaggapi.REVISION]
                   != rev) for r in roles]
        new = [next((o["spec"]["replicas"] for o in self.lws.values()
                     if o["metadata"]["labels"][disaggapi.ROLE] == r
                     and o["metadata"]["labels"][disaggapi.REVISION] == rev), 0) for r in roles]
        return (*old, *new)

    def run(self, ds: dict[str, Any], limit: int = 60) -> list[tuple[int, ...]]:
        """Reconcile until nothing is left to do, the new revision's replicas ready after every write; the
        (old..., new...) counts after each reconcile that changed something."""
        rev = objects.revision(ds["spec"]["roles"])
        roles = [r["name"] for r in ds["spec"]["roles"]]
        seen = [self.counts(rev, roles)]
        for _ in range(limit):
            decision = self.decide(ds)
            self.ready()
            if not decision.actions:
                return seen
            if self.counts(rev, roles) != seen[-1]:
                seen.append(self.counts(rev, roles))
        raise AssertionError(f"no end after {limit} reconciles: {seen}")


def test_a_new_set_gets_one_lws_per_role_at_its_target_then_services_once_ready() -> None:
    world, ds = World(), _ds(_role("prefill", 2), _role("decode", 3))
    first = world.decide(ds)
    assert [type(a).__name__ for a in first.actions] == ["Create", "Create"] and not first.events
    rev = objects.revision(ds["spec"]["roles"])
    assert sorted((o["metadata"]["name"], o["spec"]["replicas"]) for o in world.lws.values()) == [
        (f"ds-0-{rev}-decode", 3), (f"ds-0-{rev}-prefill", 2)]
    assert not world.services, "no Service before every role has a ready group (DT6)"
    world.ready()
    world.decide(ds)
    assert sorted(world.services) == [f"ds-0-{rev}-decode-prv", f"ds-0-{rev}-prefill-prv"]
    assert not world.decide(ds).actions, "steady: nothing more to write"


def test_scaling_without_a_rollout_is_one_write_per_role_and_no_event() -> None:
    world, ds = World(), _ds(_role("prefill", 1), _role("decode", 1))
    world.decide(ds)
    world.ready()
    world.decide(ds)
    ds["spec"]["roles"][0]["spec"]["replicas"] = 3
    decision = world.decide(ds)
    assert decision.actions == (slices.SetReplicas(f"ds-0-{objects.revision(ds['spec']['roles'])}-prefill", 3),)
    assert not decision.events, "ScalingUp/Down belong to rollouts (4.3)"


def _rolled(world: World, ds: dict[str, Any], roles: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    world.run(ds)
    ds["spec"]["roles"] = roles
    return world.run(ds)


def test_trace_a_through_the_decisions() -> None:
    """Contract 4.7.4 trace A (upstream e2e E12): P 10 -> 6, D 2 -> 8 with an image change, surge 2."""
    config = {"maxSurge": 2, "maxUnavailable": 0}
    world, ds = World(), _ds(_role("p", 10, config=config), _role("d", 2, config=config))
    seen = _rolled(world, ds, [_role("p", 6, "img:2", config), _role("d", 8, "img:2", config)])
    assert seen == [(10, 2, 0, 0), (8, 2, 0, 0), (6, 2, 0, 0), (6, 2, 2, 2), (4, 1, 2, 2), (4, 1, 3, 4),
                    (4, 1, 4, 5), (2, 1, 4, 5), (2, 1, 5, 7), (2, 1, 6, 8), (0, 0, 6, 8)]
    rev = objects.revision(ds["spec"]["roles"])
    assert {o["metadata"]["labels"][disaggapi.REVISION] for o in world.lws.values()} == {rev}, "drained LWS deleted"
    reasons = [e.reason for e in world.events]
    assert reasons.count("RollingUpdateStarted") == 1 and "ScalingUp" in reasons and "ScalingDown" in reasons
    assert reasons.count("LWSDeleted") == 2


def test_the_gate_holds_until_the_new_revision_is_ready() -> None:
    world, ds = World(), _ds(_role("p", 2), _role("d", 2))
    world.run(ds)
    ds["spec"]["roles"] = [_role("p", 2, "img:2"), _role("d", 2, "img:2")]
    start = world.decide(ds)
    assert start.requeue and [e.reason for e in start.events] == ["RollingUpdateStarted"]
    assert sum(isinstance(a, slices.Annotate) for a in start.actions) == 2
    world.ready()
    up = world.decide(ds)
    assert up.step is not None and up.step.kind == "scale-up"
    waiting = world.decide(ds)  # the new groups are not ready yet
    assert waiting.requeue and not waiting.actions


def test_a_second_change_mid_rollout_drains_the_newer_old_revision_first() -> None:
    """Contract 4.7.5 (upstream E19): A -> B -> C; B reaches 0 before A is touched below its count."""
    world, ds = World(), _ds(_role("p", 3), _role("d", 3))
    world.run(ds)
    rev_a = objects.revision(ds["spec"]["roles"])
    ds["spec"]["roles"] = [_role("p", 3, "img:B"), _role("d", 3, "img:B")]
    for _ in range(4):  # part of the way to B
        world.decide(ds)
        world.ready()
    rev_b = objects.revision(ds["spec"]["roles"])
    ds["spec"]["roles"] = [_role("p", 3, "img:C"), _role("d", 3, "img:C")]

    def total(rev: str) -> int:
        return sum(o["spec"]["replicas"] for o in world.lws.values()
                   if o["metadata"]["labels"][disaggapi.REVISION] == rev)
    a_before, b_before = total(rev_a), total(rev_b)
    assert b_before > 0, "B serves when C arrives"
    for _ in range(40):
        decision = world.decide(ds)
        world.ready()
        if total(rev_b) > 0:
            assert total(rev_a) == a_before, "A shrank while B still served"
        for rev in (rev_a, rev_b):  # coordinated drain: no old revision serves with one role gone
            serving = [o["spec"]["replicas"] > 0 for o in world.lws.values()
                       if o["metadata"]["labels"][disaggapi.REVISION] == rev]
            assert all(serving) or not any(serving), (rev, serving)
        if not decision.actions:
            break
    assert total(rev_a) == total(rev_b) == 0 and world.counts(objects.revision(ds["spec"]["roles"]), ["p", "d"]) \
        == (0, 0, 3, 3)


def test_a_revision_never_serves_with_a_role_gone() -> None:
    """E4: after every reconcile, an old revision has replicas in all its roles or in none."""
    config = {"maxSurge": 1, "maxUnavailable": 1}
    world, ds = World(), _ds(_role("p", 5, config=config), _role("d", 2, config=config))
    world.run(ds)
    old = objects.revision(ds["spec"]["roles"])
    ds["spec"]["roles"] = [_role("p", 5, "img:2", config), _role("d", 2, "img:2", config)]
    for _ in range(40):
        decision = world.decide(ds)
        world.ready()
        serving = [o["spec"]["replicas"] > 0 for o in world.lws.values()
                   if o["metadata"]["labels"][disaggapi.REVISION] == old]
        assert all(serving) or not any(serving), serving
        if not decision.actions:
            break


def test_old_services_stay_while_their_revision_is_ready_on_every_role() -> None:
    world, ds = World(), _ds(_role("p", 2), _role("d", 2))
    world.run(ds)
    old_services = set(world.services)
    ds["spec"]["roles"] = [_role("p", 2, "img:2"), _role("d", 2, "img:2")]
    saw_both = False
    for _ in range(30):
        decision = world.decide(ds)
        world.ready()
        saw_both = saw_both or (old_services < set(world.services) and len(world.services) == 4)
        if not decision.actions:
            break
    assert saw_both, "for a while both revisions' Services exist (2.3)"
    assert not old_services & set(world.services), "the old revision's Services went once it drained"
    assert len(world.services) == 2


def test_a_drain_that_empties_one_role_of_an_old_revision_empties_all_of_it() -> None:
    """Coordinated drain (4.7.2, 4): A (p 2, d 1) -> B, two steps in -> C. Draining B's d to 0 takes B's p to 0 in
    the same pass, so B never serves prefill without decode."""
    world, ds = World(), _ds(_role("p", 2), _role("d", 1))
    world.run(ds)
    ds["spec"]["roles"] = [_role("p", 2, "B"), _role("d", 1, "B")]
    for _ in range(2):
        world.decide(ds)
        world.ready()
    ds["spec"]["roles"] = [_role("p", 2, "C"), _role("d", 1, "C")]
    olds = {o["metadata"]["labels"][disaggapi.REVISION] for o in world.lws.values()}
    for _ in range(40):
        decision = world.decide(ds)
        world.ready()
        for rev in olds:
            serving = [o["spec"]["replicas"] > 0 for o in world.lws.values()
                       if o["metadata"]["labels"][disaggapi.REVISION] == rev]
            assert all(serving) or not any(serving), (rev, serving)
        if not decision.actions:
            break
    assert world.counts(objects.revision(ds["spec"]["roles"]), ["p", "d"]) == (0, 0, 2, 1)
