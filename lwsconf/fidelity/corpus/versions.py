"""resourceVersion semantics: optimistic concurrency (409), preconditions, resourceVersionMatch on
lists and gets, too-old (410) and too-new versions, and uid preconditions."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import CORE, configmap, create, delete, get, put
from lwsconf.fidelity.model import Scenario

CMS = f"{CORE}/configmaps"
CM = f"{CMS}/cm"


def _cm_at(rv: str, value: str) -> dict[str, object]:
    obj = configmap("cm", {"a": value})
    obj["metadata"]["resourceVersion"] = rv
    return obj


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("versions", "rv-concurrency", (
        create("create", CMS, configmap("cm", {"a": "1"}), save={"rv1": "metadata.resourceVersion",
                                                                 "uid": "metadata.uid"}),
        put("update-current", CM, _cm_at("${rv1}", "2"), save={"rv2": "metadata.resourceVersion"}),
        put("update-stale", CM, _cm_at("${rv1}", "3")),
        put("update-without-rv", CM, configmap("cm", {"a": "4"}), save={"rv3": "metadata.resourceVersion"}),
        put("update-garbage-rv", CM, _cm_at("abc", "5")),
        put("update-uid-mismatch", CM, {**configmap("cm", {"a": "6"}),
                                        "metadata": {"name": "cm", "uid": "00000000-0000-0000-0000-000000000000"}}),
        put("update-missing", f"{CMS}/absent", configmap("absent")),
        put("update-name-mismatch", CM, configmap("other")),
        delete("delete-stale-rv-precondition", CM, {"preconditions": {"resourceVersion": "${rv1}"}}),
        delete("delete-wrong-uid-precondition", CM,
               {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
        get("get-rv0", CM, query={"resourceVersion": "0"}),
        get("get-exact-current", CM, query={"resourceVersion": "${rv3}"}),
        delete("delete-right-preconditions", CM,
               {"preconditions": {"uid": "${uid}", "resourceVersion": "${rv3}"}}),
    )),
    Scenario("versions", "rv-lists", (
        create("create-a", CMS, configmap("a"), save={"rv_a": "metadata.resourceVersion"}),
        create("create-b", CMS, configmap("b"), save={"rv_b": "metadata.resourceVersion"}),
        get("list-rv0", CMS, query={"resourceVersion": "0"}),
        get("list-not-older-than", CMS, query={"resourceVersion": "${rv_a}", "resourceVersionMatch": "NotOlderThan"}),
        get("list-exact-after-a", CMS, query={"resourceVersion": "${rv_a}", "resourceVersionMatch": "Exact"}),
        get("list-exact-after-b", CMS, query={"resourceVersion": "${rv_b}", "resourceVersionMatch": "Exact"}),
        get("list-match-without-rv", CMS, query={"resourceVersionMatch": "Exact"}),
        get("list-match-unknown", CMS, query={"resourceVersion": "${rv_a}", "resourceVersionMatch": "Sometimes"}),
        get("list-exact-rv0", CMS, query={"resourceVersion": "0", "resourceVersionMatch": "Exact"}),
        get("list-garbage-rv", CMS, query={"resourceVersion": "abc"}),
        get("list-exact-too-old", CMS, query={"resourceVersion": "1", "resourceVersionMatch": "Exact"}),
        get("list-limit-with-rv0", CMS, query={"resourceVersion": "0", "limit": "1"}),
    )),
)
