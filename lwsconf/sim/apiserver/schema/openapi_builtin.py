"""Kubernetes' own OpenAPI v3 documents for the sim's built-in group-versions, filtered to what the sim serves.

Why: `kubectl explain` (and `--recursive`, nested fields, `--api-version`) reads a kind's schema from the
component tagged with its GVK, and `kubectl apply` reads `x-kubernetes-patch-merge-key`/`-strategy` from the
same components; clients that read `/openapi/v3` expect the real types. The sim cannot write those documents
itself (field descriptions are upstream's text, never copied into this repository), so `openapi_cache`
obtains the published `api/openapi-spec/v3/*.json` of the pinned `k8s.io/kubernetes` module at install or
first use, and this module serves them: each document as upstream publishes it, except that `paths` keeps
only the resources the sim serves (a path for a resource the sim lacks would send a client to a 404), and the
index hash is a digest of exactly the bytes served. Pure: the documents' bytes come from a loader.

Known difference left (measured against a live kube-apiserver 1.37.2, fidelity topic `openapi`): a live server
gives enum-typed fields an `enum` list and appends "Possible enum values" to their description, generated from
the Go types' +enum markers; the published files have neither, so `kubectl explain` prints no ENUM line here.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

Loader = Callable[[str], bytes | None]
"""A group-version's index key (`api/v1`, `apis/apps/v1`) -> the upstream document's bytes, or None."""


def file_name(key: str) -> str:
    """The upstream spec file of an index key: `api/v1` -> `api__v1_openapi.json` (kubernetes' naming)."""
    return key.replace("/", "__") + "_openapi.json"


def key_of_file(name: str) -> str | None:
    """Inverse of `file_name`; None for files that are not a group-version document (`apis__apps_openapi.json`)."""
    if not name.endswith("_openapi.json"):
        return None
    key = name.removesuffix("_openapi.json").replace("__", "/")
    parts = key.split("/")
    if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
        return key
    return None


def resource_of_path(key: str, path: str) -> str | None:
    """The resource plural a document path is about (`pods` for `/api/v1/namespaces/{namespace}/pods/{name}/log`).

    None for the group-version's own root (`/api/v1/`), which every document keeps. Watch paths
    (`/apis/apps/v1/watch/namespaces/{namespace}/deployments`) name their resource the same way; the
    cluster-scoped `namespaces/{name}` names `namespaces`.
    """
    rest = path.strip("/").removeprefix(key).strip("/")
    if not rest:
        return None
    rest = rest.removeprefix("watch/")
    if rest.startswith("namespaces/{namespace}/"):
        rest = rest.removeprefix("namespaces/{namespace}/")
    return rest.split("/")[0]


UNSERVED_MEDIA_TYPES = frozenset({"application/cbor", "application/cbor-seq", "application/apply-patch+cbor"})
"""Listed by the published files (generated with every serializer), but neither the sim nor kube-apiserver 1.37
with its default feature gates (CBORServingAndStorage off) serves CBOR, and a live 1.37.2 lists none of them
(measured: GET /openapi/v3/apis/apps/v1 on the real control plane)."""


def filter_paths(key: str, doc: dict[str, Any], plurals: Iterable[str]) -> dict[str, Any]:
    """`doc` with `paths` limited to the group-version's root and the given resources; components as they are.

    The components stay whole: they are the group-version's types (a served kind's schema refers to
    shared ones), and a type nobody serves is harmless there, as in kube-apiserver's own documents.
    Operations lose the media types in `UNSERVED_MEDIA_TYPES`, so a client picks one the sim speaks.
    """
    served = set(plurals)
    paths = {p: _without_unserved_media(item) for p, item in doc.get("paths", {}).items()
             if (plural := resource_of_path(key, p)) is None or plural in served}
    return {**doc, "paths": paths}


def served_document(key: str, doc: dict[str, Any], plurals: Iterable[str], release: str) -> dict[str, Any]:
    """What the sim sends for `doc`: `filter_paths`, and `info.version` as a live server words it.

    The published files say `unversioned`; kube-apiserver writes its major.minor (`1.37` for `v1.37.2`).
    """
    out = filter_paths(key, doc, plurals)
    major_minor = ".".join(release.removeprefix("v").split(".")[:2])
    out["info"] = {**out.get("info", {}), "version": major_minor}
    return out


def _without_unserved_media(item: Any) -> Any:
    """A path item with `UNSERVED_MEDIA_TYPES` left out of every request body and response (copies, no mutation)."""
    if not isinstance(item, dict):
        return item
    out: dict[str, Any] = {}
    for name, value in item.items():
        if name == "content" and isinstance(value, dict):
            out[name] = {media: v for media, v in value.items() if media not in UNSERVED_MEDIA_TYPES}
        else:
            out[name] = _without_unserved_media(value)
    return out


def body_hash(body: bytes) -> str:
    """The index's `hash` of a served document: SHA-512 of its bytes, upper-case hex as kube-apiserver writes it."""
    return hashlib.sha512(body).hexdigest().upper()


class BuiltinSpecs:
    """The upstream documents of one Kubernetes release, served filtered and cached.

    Args:
        version: the release they come from (`v1.37.2`), for logs and `lwsconf` messages.
        keys: the group-versions there is a document for.
        loader: reads one document's bytes (once per set of served plurals; the file is checked there).

    The served bytes and their hash are cached per (group-version, served plurals): a 2 MiB `api/v1` is
    parsed and serialized once per process, not on each of kubectl's index requests, and only the bytes are
    kept (the parsed form of all documents would take tens of MiB). Thread-safe, since
    `RunningSimCluster`s on several loops of one process share one instance.
    """

    def __init__(self, version: str, keys: Iterable[str], loader: Loader) -> None:
        self.version = version
        self.keys = frozenset(keys)
        self._loader = loader
        self._lock = threading.Lock()
        self._served: dict[tuple[str, frozenset[str]], tuple[bytes, str] | None] = {}

    def has(self, key: str) -> bool:
        return key in self.keys

    def body_and_hash(self, key: str, plurals: Iterable[str]) -> tuple[bytes, str] | None:
        """The served document's bytes and index hash, or None when there is no upstream document for `key`."""
        wanted = (key, frozenset(plurals))
        with self._lock:
            if wanted not in self._served:
                raw = self._loader(key) if key in self.keys else None
                if raw is None:
                    self._served[wanted] = None
                else:
                    doc = served_document(key, json.loads(raw), wanted[1], self.version)
                    body = json.dumps(doc, separators=(",", ":")).encode()
                    self._served[wanted] = (body, body_hash(body))
            return self._served[wanted]

    def document(self, key: str, plurals: Iterable[str]) -> dict[str, Any] | None:
        """The served document as a dict (what `body_and_hash` serializes)."""
        found = self.body_and_hash(key, plurals)
        return None if found is None else dict(json.loads(found[0]))
