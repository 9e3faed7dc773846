"""A whole DisaggregatedSet's decision (docs/disaggregatedset-contract.md 2.4, 4.4, 4.6, 4.8)."""

from __future__ import annotations

import copy
from typing import Any

from lwsconf import disaggapi
from lwsconf.reconciler.disaggregated import objects, sets, slices
from tests.reconciler.disaggregated.test_slices import _ds, _role


def _apply(decision: sets.SetDecision, lws: dict[str, Any], services: dict[str, Any],
           scalers: dict[str, Any]) -> dict[str, Any]:
    """Apply the writes to the stand-in stores; the set's status write is returned."""
    written: dict[str, Any] = {}
    for action in decision.actions:
        if isinstance(action, slices.Create):
            obj = copy.deepcopy(action.obj)
            store = {"LeaderWorkerSet": lws, "Service": services}.get(obj["kind"], scalers)
            store[obj["metadata"]["name"]] = obj
        elif isinstance(action, slices.SetReplicas):
            lws[action.name]["spec"]["replicas"] = action.replicas
        elif isinstance(action, slices.Delete):
            {"LeaderWorkerSet": lws, "Service": services}.get(action.kind, scalers).pop(action.name)
        elif isinstance(action, sets.StatusWrite):
            if action.kind == disaggapi.KIND:
                written = action.status
            else:
                scalers[action.name]["status"] = action.status
    return written


def _ready(lws: dict[str, Any]) -> None:
    for obj in lws.values():
        n = obj["spec"]["replicas"]
        obj["status"] = {"replicas": n, "readyReplicas": n, "updatedReplicas": n}


def test_slices_are_copies_and_a_lowered_count_deletes_the_extra_ones() -> None:
    ds = _ds(_role("p", 2), _role("d", 1))
    ds["spec"]["slices"] = 2
    lws: dict[str, Any] = {}
    _apply(sets.decide(ds, [], [], {}, "t"), lws, {}, {})
    assert sorted((o["metadata"]["labels"][disaggapi.SLICE], o["metadata"]["labels"][disaggapi.ROLE],
                   o["spec"]["replicas"]) for o in lws.values()) == [("0", "d", 1), ("0", "p", 2), ("1", "d", 1),
                                                                     ("1", "p", 2)]
    ds["spec"]["slices"] = 1
    decision = sets.decide(ds, list(lws.values()), [], {}, "t")
    _apply(decision, lws, {}, {})
    assert {o["metadata"]["labels"][disaggapi.SLICE] for o in lws.values()} == {"0"}
    assert sorted(e.note.split()[-1] for _, e in decision.events if e.reason == "LWSDeleted") == ["1", "1"]


def test_an_external_role_gets_a_seeded_scaler_that_then_drives_it() -> None:
    ds = _ds(_role("p", 2), {**_role("d", 5), "scaling": {"mode": "External"}})
    lws: dict[str, Any] = {}
    scalers: dict[str, Any] = {}
    first = sets.decide(ds, [], [], {}, "t")
    _apply(first, lws, {}, scalers)
    assert scalers["ds-d"]["spec"] == {"replicas": 1}, "seeded 1 with no LWS yet; the role's own 5 is ignored"
    assert ("Normal", slices.Event("ScalerCreated", "Create", "Created scaler ds-d for role d")) in first.events
    d = next(o for o in lws.values() if o["metadata"]["labels"][disaggapi.ROLE] == "d")
    assert d["spec"]["replicas"] == 1
    scalers["ds-d"]["spec"]["replicas"] = 3  # kubectl scale / an HPA through /scale
    _apply(sets.decide(ds, list(lws.values()), [], scalers, "t"), lws, {}, scalers)
    assert d["spec"]["replicas"] == 3
    _ready(lws)
    _apply(sets.decide(ds, list(lws.values()), [], scalers, "t"), lws, {}, scalers)
    assert scalers["ds-d"]["status"]["replicas"] == 3
    assert scalers["ds-d"]["status"]["selector"] == objects.scaler_selector("ds", "d")
    assert scalers["ds-d"]["status"]["conditions"][0]["reason"] == "Bound"
    ds["spec"]["roles"][1] = _role("d", 3)  # back to Static: the scaler goes in the same pass
    back = sets.decide(ds, list(lws.values()), [], scalers, "t")
    _apply(back, lws, {}, scalers)
    assert not scalers and any(e.reason == "ScalerDeleted" for _, e in back.events)


def test_a_foreign_scaler_is_not_adopted_and_the_role_holds() -> None:
    ds = _ds(_role("p", 1), {**_role("d", 1), "scaling": {"mode": "External"}})
    foreign = {"metadata": {"name": "ds-d", "labels": {}, "ownerReferences": []}, "spec": {"replicas": 9}}
    decision = sets.decide(ds, [], [], {"ds-d": foreign}, "t")
    assert ("Warning", "ScalerConflict") in [(kind, e.reason) for kind, e in decision.events]
    lws: dict[str, Any] = {}
    written = _apply(decision, lws, {}, {"ds-d": foreign})
    d = next(o for o in lws.values() if o["metadata"]["labels"][disaggapi.ROLE] == "d")
    assert d["spec"]["replicas"] == 0, "no usable scaler: the role keeps its size, 0 with no LWS yet (4.6)"
    assert {c["type"]: c["status"] for c in written["conditions"]} == {"Progressing": "True"}


def test_the_set_becomes_available_once_every_role_is_ready_and_updated() -> None:
    ds = _ds(_role("p", 2), _role("d", 1))
    ds["metadata"]["generation"] = 3
    lws: dict[str, Any] = {}
    written = _apply(sets.decide(ds, [], [], {}, "t1"), lws, {}, {})
    assert written["observedGeneration"] == 3 and written["roleStatuses"] == [{"name": "p"}, {"name": "d"}]
    _ready(lws)
    ds["status"] = written
    written = _apply(sets.decide(ds, list(lws.values()), [], {}, "t2"), lws, {}, {})
    conds = {c["type"]: (c["status"], c["reason"]) for c in written["conditions"]}
    assert conds == {"Progressing": ("False", "AllRolesReady"), "Available": ("True", "AllRolesReady")}
    assert written["roleStatuses"][0] == {"name": "p", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}
