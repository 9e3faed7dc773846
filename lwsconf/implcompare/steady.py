"""What steady state is, judged on raw objects read from the API (the waits in `run.py` poll this). No I/O here."""

from __future__ import annotations

from typing import Any

from lwsconf.implcompare.model import Obj


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _lws_problem(lws: Obj) -> str | None:
    replicas = (lws.get("spec") or {}).get("replicas")
    status: dict[str, Any] = lws.get("status") or {}
    available = [c for c in status.get("conditions") or [] if c.get("type") == "Available"]
    if not available or available[0].get("status") != "True":
        seen = [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
        return f"LWS not Available (conditions {seen})"
    for counter in ("replicas", "readyReplicas", "updatedReplicas"):
        if status.get(counter) != replicas:
            return f"LWS status.{counter} is {status.get(counter)}, want spec.replicas {replicas}"
    return None


def problem(raw: list[Obj], lws_name: str, expected_pods: int) -> str | None:
    """Why `raw` is not steady yet, or None: the LWS is Available with every group ready and updated, exactly
    `expected_pods` pods exist, all Ready and none terminating, and every StatefulSet has all its replicas
    ready on its update revision."""
    lws = [o for o in raw if o.get("kind") == "LeaderWorkerSet" and (o.get("metadata") or {}).get("name") == lws_name]
    if not lws:
        return f"no LeaderWorkerSet {lws_name}"
    found = _lws_problem(lws[0])
    if found:
        return found
    pods = [o for o in raw if o.get("kind") == "Pod"]
    terminating = [p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")]
    if terminating:
        return f"pods terminating: {sorted(terminating)}"
    unready = sorted(p["metadata"]["name"] for p in pods if not _ready(p))
    if len(pods) != expected_pods or unready:
        return f"{len(pods)} pods ({len(pods) - len(unready)} Ready), want {expected_pods} Ready; unready {unready}"
    for sts in (o for o in raw if o.get("kind") == "StatefulSet"):
        want = (sts.get("spec") or {}).get("replicas")
        status = sts.get("status") or {}
        if status.get("readyReplicas", 0) != want or status.get("updatedReplicas", 0) != want \
                or status.get("currentRevision") != status.get("updateRevision"):
            return (f"StatefulSet {sts['metadata']['name']}: ready {status.get('readyReplicas', 0)}, updated "
                    f"{status.get('updatedReplicas', 0)} of {want}, revision {status.get('currentRevision')} -> "
                    f"{status.get('updateRevision')}")
    return None


def fingerprint(raw: list[Obj]) -> frozenset[tuple[str, str, str, str]]:
    """(kind, name, uid, resourceVersion) of every StatefulSet and pod: a step has been acted on once it changes."""
    return frozenset((str(o.get("kind")), str(o["metadata"].get("name")), str(o["metadata"].get("uid")),
                      str(o["metadata"].get("resourceVersion")))
                     for o in raw if o.get("kind") in ("StatefulSet", "Pod"))
