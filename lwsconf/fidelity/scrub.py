"""What a traffic recording must never keep: credentials, Secret data and issued tokens (pure, no I/O).

A recording (`recorder.py`) is committed to the repository as the held-out corpus, so anything a
client or the server says that grants access is replaced before it is written, not afterwards: request
headers are kept by an allow-list (`Authorization`, cookies and impersonation headers are never kept),
and bodies are scrubbed by what they are. Placeholders keep the shape (a Secret keeps its keys, a
TokenRequest answer keeps that it has a token), so a replay still sends and compares a well-formed
request; the value a replay sends is the placeholder itself, which both servers store alike.

Scrubbed: a Secret's `data` and `stringData` values and its `kubectl.kubernetes.io/last-applied-configuration`
annotation (kubectl apply copies the whole Secret, data included, into it), in objects, lists, watch events
and request bodies to `/secrets`; a TokenRequest's `status.token`; a TokenReview's `spec.token`; a
text body sent to `/secrets` (YAML apply) as a whole, since it cannot be parsed safely here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PLACEHOLDER = "<scrubbed>"
DATA_PLACEHOLDER = "PHNjcnViYmVkPg=="
"""A Secret's `data` value once scrubbed: base64 of PLACEHOLDER, so the Secret stays valid (kube-apiserver refuses
data that is not base64, and the protobuf encoding of a replay cannot carry it)."""
KEPT_REQUEST_HEADERS = ("Content-Type", "Accept", "User-Agent")
"""Request headers a recording keeps; everything else (Authorization first of all) is dropped."""
KEPT_RESPONSE_HEADERS = ("Content-Type", "Audit-Id", "Warning", "Location")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def kept_headers(headers: Iterable[tuple[str, str]], allowed: Iterable[str]) -> dict[str, str]:
    """The allowed headers (case-insensitive names, first value of each), under their canonical names."""
    wanted = {name.lower(): name for name in allowed}
    out: dict[str, str] = {}
    for name, value in headers:
        canonical = wanted.get(name.lower())
        if canonical is not None and canonical not in out:
            out[canonical] = value
    return out


def _secret(obj: dict[str, Any]) -> None:
    for key, placeholder in (("data", DATA_PLACEHOLDER), ("stringData", PLACEHOLDER)):
        if isinstance(obj.get(key), dict):
            obj[key] = {k: placeholder for k in obj[key]}
    annotations = (obj.get("metadata") or {}).get("annotations") if isinstance(obj.get("metadata"), dict) else None
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = PLACEHOLDER


def _object(obj: Any, *, secret_path: bool) -> Any:
    """One decoded body or watch-event object, scrubbed in place (also returned)."""
    if isinstance(obj, dict):
        kind = obj.get("kind")
        if kind == "Secret" or (secret_path and kind is None and not isinstance(obj.get("items"), list)):
            _secret(obj)  # a Secret, or a patch to one (its data and kubectl apply's last-applied copy)
        elif kind == "SecretList" or (secret_path and isinstance(obj.get("items"), list)):
            for item in obj.get("items") or []:
                if isinstance(item, dict):
                    _secret(item)
        elif kind == "TokenRequest" and isinstance(obj.get("status"), dict) and "token" in obj["status"]:
            obj["status"]["token"] = PLACEHOLDER
        elif kind == "TokenReview" and isinstance(obj.get("spec"), dict) and "token" in obj["spec"]:
            obj["spec"]["token"] = PLACEHOLDER
        elif kind == "Table" and secret_path:
            for row in obj.get("rows") or []:
                if isinstance(row, dict) and isinstance(row.get("object"), dict):
                    _secret(row["object"])
    return obj


def replayable(value: Any, path: str) -> Any:
    """A body recorded before DATA_PLACEHOLDER existed, made valid: Secret `data` values PLACEHOLDER become
    DATA_PLACEHOLDER."""
    if is_secret_path(path) and isinstance(value, dict):
        for obj in [value, *[i for i in value.get("items") or [] if isinstance(i, dict)]]:
            if isinstance(obj.get("data"), dict):
                obj["data"] = {k: DATA_PLACEHOLDER if v == PLACEHOLDER else v for k, v in obj["data"].items()}
    return value


def is_secret_path(path: str) -> bool:
    parts = path.strip("/").split("/")
    return "secrets" in parts


def is_sensitive_path(path: str) -> bool:
    """Where a body may hold a credential: Secrets, a ServiceAccount's token, token and certificate reviews."""
    parts = path.strip("/").split("/")
    return is_secret_path(path) or parts[-1:] == ["token"] or "tokenreviews" in parts


def opaque(value: Any, encoding: str, path: str) -> Any:
    """A body that could not be decoded (binary, base64 in the recording) or read as an object (text) where a
    credential may be: replaced whole, since nothing in it can be scrubbed selectively."""
    if encoding in ("base64", "text") and value and is_sensitive_path(path):
        return f"{PLACEHOLDER} ({len(value)} characters, {encoding})"
    return value


def body(value: Any, path: str) -> Any:
    """A request or answer body (decoded JSON, or text) with every secret replaced."""
    secret_path = is_secret_path(path)
    if isinstance(value, str):
        return f"{PLACEHOLDER} ({len(value)} characters)" if secret_path and value else value
    if isinstance(value, list):  # a JSON patch: every value it writes to a Secret
        return [{**op, "value": PLACEHOLDER} if secret_path and isinstance(op, dict) and "value" in op else op
                for op in value]
    return _object(value, secret_path=secret_path)


def events(items: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """Watch events with each object scrubbed."""
    secret_path = is_secret_path(path)
    for event in items:
        if isinstance(event, dict):
            _object(event.get("object"), secret_path=secret_path)
    return items
