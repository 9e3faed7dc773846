"""Content negotiation between JSON and Kubernetes protobuf, as kube-apiserver 1.37.2 answers it.

Observed on the real server (tests/sim/apiserver/protobuf/test_protobuf_vs_kube_apiserver.py):

* `Accept` clauses are taken by descending `q` (ties in the order sent): `protobuf;q=0.5, json;q=0.9`
  answers JSON;
* a protobuf clause carrying `as=Table` is passed over (Tables are JSON here), so `kubectl get`'s
  `application/json;as=Table;...` keeps its JSON Table;
* a custom resource has no protobuf form: `protobuf, application/json` answers JSON, protobuf alone
  answers 406 (a Status, itself in protobuf); errors (Status) are protobuf whenever protobuf is acceptable;
* a watch asked for protobuf (with or without `;stream=watch`) answers
  `application/vnd.kubernetes.protobuf;stream=watch` frames.

Only requests that name protobuf change behaviour here; every other `Accept` keeps the sim's JSON
answers. Pure: header strings in, decisions out.
"""

from __future__ import annotations

from dataclasses import dataclass

PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = f"{PROTOBUF};stream=watch"
_JSON_LIKE = ("application/json", "application/yaml", "*/*", "application/*")


@dataclass(frozen=True)
class Clause:
    media: str
    params: dict[str, str]
    q: float


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an Accept header, best first (by q, then as sent); unparsable q counts as 0."""
    clauses = []
    for part in header.split(","):
        media, *raw_params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        params = {k.strip().lower(): v.strip() for k, _, v in (p.partition("=") for p in raw_params) if k}
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        clauses.append(Clause(media.lower(), params, q))
    return sorted(clauses, key=lambda c: -c.q)


def names_protobuf(header: str) -> bool:
    return PROTOBUF in header.lower()


def choose(header: str, *, protobuf_possible: bool) -> str | None:
    """`protobuf`, `json`, or None when no acceptable clause can be served (406).

    `protobuf_possible` is False for an answer that has no protobuf form (a custom resource object).
    """
    if not header.strip():
        return "json"
    for clause in parse_accept(header):
        if clause.q <= 0:
            continue
        if clause.media == PROTOBUF:
            if protobuf_possible and "as" not in clause.params:
                return "protobuf"
            continue
        if clause.media in _JSON_LIKE:
            return "json"
    return None


def is_protobuf(content_type: str) -> bool:
    """Whether a request's Content-Type is Kubernetes protobuf (parameters ignored)."""
    return content_type.split(";")[0].strip().lower() == PROTOBUF
