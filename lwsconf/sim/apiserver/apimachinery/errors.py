"""Kubernetes-shaped API errors.

Every failure the simulated API server reports is a `StatusError` that renders to a `Status` object
(`kind: Status, apiVersion: v1, status: Failure`) with the HTTP code, `reason` and `details` the real
kube-apiserver uses, so that the official client raises the right `ApiException` subclass and kubectl
prints its usual message. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One field-level reason inside `Status.details.causes` (as in a 422 Invalid)."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def to_dict(self) -> dict[str, str]:
        """metav1.StatusCause: `field` is omitempty (eviction's DisruptionBudget causes name none)."""
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class StatusError(Exception):
    """An API failure; `to_status()` gives the body, `code` the HTTP status."""

    code: int
    reason: str
    message: str
    kind: str | None = None
    name: str | None = None
    group: str | None = None
    causes: list[Cause] = field(default_factory=list)
    retry_after_seconds: int | None = None
    empty_details: bool = False
    """Render `details: {}` when there is nothing in it (kube-apiserver's NewNotFound of a path does)."""
    plain_text: bool = False
    """Answer `message` as text/plain instead of a Status (Go's http.NotFound of a path no handler serves)."""
    warnings: list[str] = field(default_factory=list)
    """Warning headers the failed request still carries (what decoding warned of before the failure)."""

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.group is not None:
            details["group"] = self.group
        if self.kind is not None:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after_seconds is not None:
            details["retryAfterSeconds"] = self.retry_after_seconds
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # StatusReasonUnknown is "", left out as metav1.Status's omitempty does
            del body["reason"]
        if details or self.empty_details:
            body["details"] = details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found',
                       kind=resource, name=name, group=group or None)


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists',
                       kind=resource, name=name, group=group or None)


def conflict(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        kind=resource, name=name, group=group or None,
    )


def stale_resource_version(resource: str, group: str, name: str) -> StatusError:
    return conflict(resource, group, name,
                    "the object has been modified; please apply your changes to the latest version and try again")


def aggregate(messages: list[str]) -> str:
    """Several errors as one message, as apimachinery's `utilerrors.aggregate.Error` words them
    (k8s.io/apimachinery/pkg/util/errors/errors.go): repeats dropped, one alone as is, more as `[a, b]`."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> StatusError:
    """422 Invalid as apimachinery's `NewInvalid` builds it (k8s.io/apimachinery/pkg/api/errors/errors.go):
    every cause in details, the message their `ErrorList.ToAggregate()`."""
    summary = aggregate([f"{c.field}: {c.message}" if c.field else c.message for c in causes])
    what = f"{kind}.{group}" if group else kind
    return StatusError(422, "Invalid", f'{what} "{name}" is invalid: {summary}',  # details name only when named
                       kind=kind, name=name or None, group=group or None, causes=causes)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized() -> StatusError:
    return StatusError(401, "Unauthorized",
                       "Unauthorized: send the bearer token from the kubeconfig that `lwsconf sim up` wrote")


def forbidden(resource: str, group: str, name: str, why: str) -> StatusError:
    return StatusError(403, "Forbidden", f'{_qualified(resource, group)} "{name}" is forbidden: {why}',
                       kind=resource, name=name, group=group or None)


def method_not_allowed() -> StatusError:
    """405 as kube-apiserver words go-restful's refusal of a method a path has no route for (apiserver
    pkg/server/handler.go: `NewGenericServerResponse` of the router's error): nothing named, empty details."""
    return StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                       empty_details=True)


def route_unsupported_media_type() -> StatusError:
    """415 from go-restful, before any handler: a built-in kind's PATCH route `Consumes` only the patch
    types (apiserver pkg/endpoints/installer.go), and pkg/server/handler.go words the router's refusal so."""
    return StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type", empty_details=True)


def patch_unsupported_media_type(allowed: list[str]) -> StatusError:
    """415 from the PATCH handler of a custom resource (apiserver pkg/endpoints/handlers/patch.go with
    negotiation/errors.go `errUnsupportedMediaType`): the accepted types listed, no details."""
    return StatusError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format - accepted media types include: "
                       f"{', '.join(allowed)}")


def page_not_found() -> StatusError:
    """A path under /apis/G/V of a group version nobody serves: Go's http.NotFound from the mux."""
    return StatusError(404, "NotFound", "404 page not found\n", plain_text=True)


def unsupported_media_type(content_type: str, allowed: list[str], why: str = "") -> StatusError:
    """415 in NegotiateInputSerializer's words (apimachinery NewUnsupportedMediaTypeError: the accepted types
    only; lwsconf fidelity requests/bad-requests/unsupported-media-type); with `why`, the sim's own case (a
    protobuf custom resource, where kube-apiserver drops the connection) also names what was sent and why."""
    got = f" (got {content_type!r}: {why})" if why else ""
    return StatusError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format - accepted media types include: "
                       f"{', '.join(allowed)}{got}")


def too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge",
                       f"the request body is larger than the {limit}-byte limit of this server; split the object or "
                       "store large data elsewhere")


def expired(message: str = "too old resource version") -> StatusError:
    return StatusError(410, "Expired", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", message)
