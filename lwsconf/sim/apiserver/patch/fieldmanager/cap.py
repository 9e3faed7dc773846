"""At most ten Update entries: the oldest are merged into "ancient-changes", as kube-apiserver does.

k8s.io/apimachinery/pkg/util/managedfields/internal/capmanagers.go (`capManagersManager`, DefaultMaxUpdateManagers
10, name "ancient-changes"), run after every write: when more than ten entries have operation Update, they are
taken oldest first (by time in seconds, then by manager identifier), and each one after the first of its
apiVersion is merged into that apiVersion's bucket, an Update entry named "ancient-changes" (the first of the
version becomes the bucket when none exists), until ten are left. The bucket takes the time of the entry merged
last. Apply entries are never merged. No I/O here.
"""

from __future__ import annotations

import json
from typing import Any

from lwsconf.sim.apiserver.patch import apply

MAX_UPDATE_MANAGERS = 10
BUCKET = "ancient-changes"


def cap_update_managers(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`entries` with the oldest Update entries merged into buckets when there are more than ten."""
    updaters = [i for i, e in enumerate(entries) if e.get("operation") == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return entries
    out: dict[int, dict[str, Any] | None] = dict(enumerate(entries))
    order = sorted(updaters, key=lambda i: (_seconds(entries[i]), _identifier(entries[i])))
    first_of: dict[str, int] = {}
    length = len(updaters)
    for i in order:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry, version = entries[i], str(entries[i].get("apiVersion") or "")
        if version not in first_of:
            first_of[version] = i
            continue
        bucket_at = next((j for j, e in out.items() if e is not None and _is_bucket(e, version)), None)
        if bucket_at is None:
            first = out[first_of[version]]
            assert first is not None
            bucket_at = first_of[version]
            out[bucket_at] = {"manager": BUCKET, "operation": "Update", "apiVersion": version,
                              "fieldsType": "FieldsV1", "fieldsV1": first.get("fieldsV1") or {}}
        bucket = out[bucket_at]
        assert bucket is not None
        merged = apply.decode(bucket.get("fieldsV1")) | apply.decode(entry.get("fieldsV1"))
        out[bucket_at] = {**{k: v for k, v in bucket.items() if k != "time"}, "fieldsV1": apply.encode(merged),
                          **({"time": entry["time"]} if entry.get("time") else {})}
        out[i] = None
        length -= 1
    return [e for e in out.values() if e is not None]


def _is_bucket(entry: dict[str, Any], version: str) -> bool:
    return (entry.get("manager") == BUCKET and entry.get("operation") == "Update"
            and entry.get("apiVersion") == version and not entry.get("subresource"))


def _seconds(entry: dict[str, Any]) -> str:
    """The entry's time; RFC 3339 UTC strings of one form order as their seconds do (none first, as 0)."""
    return str(entry.get("time") or "")


def _identifier(entry: dict[str, Any]) -> str:
    """The manager identifier the apiserver sorts by: the entry without time and fields, as Go's JSON."""
    ident = {k: entry[k] for k in ("manager", "operation", "apiVersion") if entry.get(k)}
    if entry.get("subresource"):
        ident["subresource"] = entry["subresource"]
    return json.dumps(ident, separators=(",", ":"))
