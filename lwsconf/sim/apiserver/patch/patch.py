"""PATCH bodies: the media-type dispatch and RFC 6902 JSON patch.

`apply_patch` decodes the body for its `Content-Type` and returns the patched object: a JSON patch is
applied here, a JSON merge patch or strategic merge patch by `merge_patches`, and server-side apply
(`application/apply-patch+yaml`) by `apply`. Bad input always becomes a Kubernetes-shaped
`StatusError` (400 malformed body, 415 unknown media type, 422 a JSON patch that does not apply).
Inputs are never mutated. No I/O here.

RFC 6902 JSON patch uses the `jsonpatch` library (already a declared dependency) rather than our own
code: it is a small, widely used, pure-Python implementation of the RFC's pointer escaping (`~0`, `~1`),
the `-` index and `test` equality, and its exceptions separate a malformed patch (400) from one that
does not apply (422), as the apiserver does. The merge patches are short enough to write ourselves,
and strategic merge needs the Kubernetes merge-key facts anyway.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonpatch
import jsonpointer

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.patch import apply, merge_patches, yaml_bodies

log = logging.getLogger(__name__)

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def check_media_type(content_type: str, *, builtin: bool) -> str:
    """The patch type, or 415: for a built-in go-restful's route refuses it before any handler, for a custom
    resource the handler does, listing the types it takes (apiserver installer.go, handlers/patch.go)."""
    media = content_type.split(";")[0].strip().lower()
    allowed = [JSON_PATCH, MERGE_PATCH, *([STRATEGIC_MERGE_PATCH] if builtin else []), APPLY_PATCH]
    if media not in allowed:
        raise errors.route_unsupported_media_type() if builtin else errors.patch_unsupported_media_type(allowed)
    return media


def apply_patch(obj: dict[str, Any] | None, body: bytes, content_type: str, *, kind: str, builtin: bool,
                manager: str = "", force: bool = False, api_version: str = "", now: str = "",
                custom_schema: dict[str, Any] | None = None, subresource: str | None = None,
                status_reset: bool = False) -> dict[str, Any]:
    """Decode a PATCH body by its media type and apply it to `obj`.

    Args:
        obj: the stored object; None only for server-side apply creating the object.
        body: the raw request body.
        content_type: the request's Content-Type (parameters such as charset are ignored).
        kind: the object's kind (selects the strategic merge facts).
        builtin: False for custom resources, which refuse strategic merge patch (415).
        manager: the `fieldManager` (required for apply).
        force: the `force` query flag (apply only).
        api_version: the served apiVersion, recorded in managedFields.
        now: RFC 3339 time recorded in managedFields.
        custom_schema: a custom resource's structural schema (apply's list and map types).
        subresource, status_reset: the endpoint (apply owns only what it may write there).

    Returns:
        The patched object (a new dict).

    Raises:
        StatusError: 400 malformed body, 409 apply conflict, 415 media type, 422 patch does not apply.
    """
    media = check_media_type(content_type, builtin=builtin)
    if force and media != APPLY_PATCH:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", [errors.Cause(
            "force", f"Forbidden: may not be specified for non-apply patch; drop force or send {APPLY_PATCH}",
            reason="FieldValueForbidden")])
    try:
        if media == APPLY_PATCH:
            applied = yaml_bodies.decode_yaml(body)
            version = api_version or str(applied.get("apiVersion", ""))
            return apply.server_side_apply(obj, applied, manager=manager, force=force, kind=kind,
                                           builtin=builtin, api_version=version, now=now,
                                           custom_schema=custom_schema, subresource=subresource,
                                           status_reset=status_reset)
        if obj is None:
            raise errors.internal(f"a {media} patch needs the stored object; answer 404 before patching")
        doc = decode_json(body)
        expected = "[]handlers.jsonPatchOp" if media == JSON_PATCH else "map[string]interface {}"
        if media != STRATEGIC_MERGE_PATCH and not isinstance(doc, list if media == JSON_PATCH else dict):
            # the handler's strict decoding of the patch (fieldValidation Warn, the default, or Strict)
            raise errors.bad_request("error decoding patch: json: cannot unmarshal "
                                     f"{merge_patches.go_json_kind(doc)} into Go value of type {expected}")
        if media == JSON_PATCH and not all(isinstance(op, dict) for op in doc):
            bad = next(op for op in doc if not isinstance(op, dict))
            raise errors.bad_request("error decoding patch: json: cannot unmarshal "
                                     f"{merge_patches.go_json_kind(bad)} into Go value of type handlers.jsonPatchOp")
        if media == JSON_PATCH:
            return json_patch(obj, doc)
        if media == MERGE_PATCH:
            return merge_patches.merge_patch(obj, doc)
        return merge_patches.strategic_merge_patch(obj, doc, kind=kind)
    except RecursionError:
        raise errors.bad_request("the patch is nested too deeply to process; flatten it") from None


# --- bodies -----------------------------------------------------------------------------------------

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode_json(body: bytes) -> Any:
    """Parse a UTF-8 JSON body; 400 "invalid JSON patch" otherwise, as kube-apiserver's
    `validateAndTranscodePatch` (apiserver pkg/endpoints/handlers/patch.go) refuses any body `json.Valid` rejects."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        log.debug("patch body is not JSON: %s", exc)
        raise errors.bad_request("invalid JSON patch") from None


# --- RFC 6902 --------------------------------------------------------------------------------------

def _rejected(detail: str) -> errors.StatusError:
    """kube-apiserver's answer to a JSON patch that does not apply, word for word: it says no more than
    this (`detail`, what went wrong, is logged at debug level only)."""
    log.debug("JSON patch rejected: %s", detail)
    return errors.StatusError(422, "Invalid", "the server rejected our request due to an error in our request",
                              empty_details=True)


class PatchTestFailed(errors.StatusError):
    """A JSON patch whose `test` operation does not hold: 422 for a PATCH request; a MutatingAdmissionPolicy
    leaves the object unchanged instead (`mutating_policy`)."""


def _replace_adds(doc: Any, op: Any) -> Any:
    """A `replace` of a key missing from an object, as an `add`: evanphx/json-patch v4 (which kube-apiserver
    uses) replaces through `partialDoc.get`, which finds a missing key without error (patch.go `replace`)."""
    if not isinstance(op, dict) or op.get("op") != "replace" or not isinstance(op.get("path"), str):
        return op
    try:
        pointer = jsonpointer.JsonPointer(op["path"])
        parent = jsonpointer.JsonPointer.from_parts(pointer.parts[:-1]).resolve(doc)
    except (jsonpointer.JsonPointerException, TypeError, ValueError, KeyError, IndexError):
        return op
    if pointer.parts and isinstance(parent, dict) and pointer.parts[-1] not in parent:
        return {**op, "op": "add"}
    return op


def json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch.

    Raises:
        StatusError: 400 when `ops` is not a list of well-formed operations; 422 when a `test`
            fails, a path does not exist, or the result is not an object.
    """
    if not isinstance(ops, list):
        raise errors.bad_request(f"a JSON patch must be a JSON array of operations such as "
                                 f'[{{"op": "replace", "path": "/spec/replicas", "value": 2}}], got '
                                 f"{type(ops).__name__}")
    try:
        result: Any = obj
        for op in ops:  # one at a time: whether a replace target exists depends on the operations before it
            result = jsonpatch.JsonPatch([_replace_adds(result, op)]).apply(result)
    except jsonpatch.InvalidJsonPatch as exc:  # an unknown op or a missing field fails in Apply: 422 as any other
        raise _rejected(f"invalid JSON patch operation: {exc}") from None
    except jsonpatch.JsonPatchTestFailed as exc:
        failure = _rejected(f"test operation failed: {exc}")
        raise PatchTestFailed(failure.code, failure.reason, failure.message, causes=failure.causes,
                              empty_details=failure.empty_details) from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
            TypeError, ValueError, KeyError, IndexError) as exc:
        raise _rejected(f"the JSON patch does not apply to the object: {exc}") from None
    if not isinstance(result, dict):
        raise _rejected("the JSON patch replaced the object with a non-object; patch its fields instead")
    return result
