"""Label and field selectors on lists, pagination with limit/continue, and the errors of bad ones."""

from __future__ import annotations

from lwsconf.fidelity.corpus._build import CORE, configmap, create, get, pod
from lwsconf.fidelity.model import Scenario, Step

CMS = f"{CORE}/configmaps"
PODS = f"{CORE}/pods"


def _names(name: str, path: str, **query: str) -> Step:
    return get(name, path, query=query)


LABELS = Scenario("selectors", "selectors-labels", (
    create("create-a", CMS, configmap("a", labels={"tier": "web", "env": "prod"})),
    create("create-b", CMS, configmap("b", labels={"tier": "db", "env": "prod"})),
    create("create-c", CMS, configmap("c", labels={"tier": "web"})),
    create("create-d", CMS, configmap("d")),
    _names("equals", CMS, labelSelector="tier=web"),
    _names("double-equals", CMS, labelSelector="tier==web"),
    _names("not-equals", CMS, labelSelector="tier!=web"),
    _names("in", CMS, labelSelector="tier in (web,db)"),
    _names("notin", CMS, labelSelector="tier notin (web)"),
    _names("exists", CMS, labelSelector="env"),
    _names("not-exists", CMS, labelSelector="!env"),
    _names("and", CMS, labelSelector="tier=web,env=prod"),
    _names("no-match", CMS, labelSelector="tier=cache"),
    _names("invalid-operator", CMS, labelSelector="tier>>web"),
    _names("invalid-value", CMS, labelSelector="tier=-bad-"),
    _names("empty-in-set", CMS, labelSelector="tier in ()"),
    _names("limit-1", CMS, limit="1"),
    _names("limit-2-selected", CMS, labelSelector="env=prod", limit="1"),
    _names("limit-zero", CMS, limit="0"),
    _names("continue-garbage", CMS, limit="1", **{"continue": "not-a-token"}),
    _names("limit-negative", CMS, limit="-1"),
))

FIELDS = Scenario("selectors", "selectors-fields", (
    create("pod-a", PODS, pod("a", {"app": "x"})),
    create("pod-b", PODS, pod("b", {"app": "y"}, nodeName="node-1")),
    create("cm-x", CMS, configmap("x")),
    _names("metadata-name", PODS, fieldSelector="metadata.name=a"),
    _names("metadata-name-not", PODS, fieldSelector="metadata.name!=a"),
    _names("metadata-namespace", PODS, fieldSelector="metadata.namespace=${ns}"),
    _names("spec-node-name", PODS, fieldSelector="spec.nodeName=node-1"),
    _names("spec-node-name-empty", PODS, fieldSelector="spec.nodeName="),
    _names("status-phase", PODS, fieldSelector="status.phase=Pending"),
    _names("unsupported-pod-field", PODS, fieldSelector="spec.containers=main"),
    _names("unsupported-cm-field", CMS, fieldSelector="data.a=1"),
    _names("set-based-field", PODS, fieldSelector="metadata.name in (a,b)"),
    _names("both-selectors", PODS, fieldSelector="metadata.name=b", labelSelector="app=y"),
    _names("cluster-wide-by-namespace", "/api/v1/pods", fieldSelector="metadata.namespace=${ns}"),
    _names("cm-name", CMS, fieldSelector="metadata.name=x"),
))

SCENARIOS: tuple[Scenario, ...] = (LABELS, FIELDS)
