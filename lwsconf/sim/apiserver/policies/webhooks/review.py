"""The AdmissionReview a webhook is sent, the checks on its answer, and the Status each failure becomes.

Request (`request/admissionreview.go` `CreateAdmissionObjects`): the first of the webhook's
`admissionReviewVersions` that kube-apiserver speaks (v1, then v1beta1 in the listed order), a fresh `uid`,
`kind`/`resource`/`subResource` in the form the webhook's rules matched, `requestKind`/`requestResource`/
`requestSubResource` as the request was made, `name`, `namespace`, `operation`, `userInfo`, `object`,
`oldObject`, `dryRun` and `options` (Create/Update/DeleteOptions).

Response (`VerifyAdmissionResponse`): v1 must carry `response` with the request's `uid`, `apiVersion:
admission.k8s.io/v1` and `kind: AdmissionReview`, a mutating webhook's `patch` and `patchType` together,
a validating webhook neither. A violation is a failed call (`received invalid webhook response: ...`),
which `failurePolicy` decides about.

Statuses: a denial is the webhook's own `response.status` (Go's `AdmissionResponse.Result`) with its code (at
least 400) and reason (left out when empty, as Go's omitempty does), the message
`admission webhook "NAME" denied the request: <message or reason>` or `... denied the request without
explanation` (`errors/statuserror.go` `ToStatusErr`); a failed call under `failurePolicy: Fail` is a 500
InternalError `Internal error occurred: failed calling webhook "NAME": <why>` (`apierrors.NewInternalError`
of `ErrCallingWebhook`); a webhook with side effects on a dry-run request is a 400 `admission webhook
"NAME" does not support dry run`. No I/O here.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.policies import admission_policies
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest

SPOKEN = ("v1", "v1beta1")
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class CallFailed(Exception):
    """The webhook could not be called or answered nonsense (`webhookutil.ErrCallingWebhook`)."""


@dataclass(frozen=True)
class Answer:
    """A verified response."""

    allowed: bool
    result: dict[str, Any] | None
    patch: list[Any] | None = None
    warnings: list[str] = field(default_factory=list)


def review_version(hook: dict[str, Any]) -> str:
    for version in f.as_list(hook.get("admissionReviewVersions")):
        if version in SPOKEN:
            return str(version)
    raise CallFailed("could not create admission objects: webhook does not accept v1 or v1beta1 AdmissionReview")


def request_body(version: str, form: PolicyRequest, uid: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The AdmissionReview to POST (`form`: the request as the webhook's rules matched it)."""
    asked = form.requested
    request: dict[str, Any] = {
        "uid": uid, "kind": form.gvk, "resource": form.gvr, "requestKind": asked.gvk,
        "requestResource": asked.gvr, "name": form.name, "namespace": form.namespace, "operation": form.operation,
        "userInfo": admission_policies.USER_INFO, "object": form.obj, "oldObject": form.old, "dryRun": form.dry_run,
        "options": options if options is not None else default_options(form.operation, form.dry_run),
    }
    if form.subresource:
        request["subResource"] = form.subresource
    if asked.subresource:
        request["requestSubResource"] = asked.subresource
    return {"apiVersion": f"admission.k8s.io/{version}", "kind": "AdmissionReview", "request": request}


def default_options(operation: str, dry_run: bool) -> dict[str, Any] | None:
    kind = _OPTIONS_KIND.get(operation)
    if kind is None:
        return None
    out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        out["dryRun"] = ["All"]
    return out


def new_uid() -> str:
    return objects.new_uid()


def verify(uid: str, version: str, mutating: bool, body: Any) -> Answer:
    """`VerifyAdmissionResponse`; raises CallFailed with kube-apiserver's wording."""
    review = f.as_dict(body)
    response = review.get("response")
    if not isinstance(response, dict):
        raise CallFailed("received invalid webhook response: webhook response was absent")
    if version == "v1":
        if response.get("uid") != uid:
            raise CallFailed(f'received invalid webhook response: expected response.uid="{uid}", '
                             f'got "{f.as_str(response.get("uid"))}"')
        got = f"{f.as_str(review.get('apiVersion'))}, Kind={f.as_str(review.get('kind'))}"
        if got != "admission.k8s.io/v1, Kind=AdmissionReview":
            raise CallFailed("received invalid webhook response: expected webhook response of "
                             f"admission.k8s.io/v1, Kind=AdmissionReview, got {got}")
    patch = _patch(response, version, mutating)
    result = response.get("status") if isinstance(response.get("status"), dict) else None  # `Result`, json "status"
    warnings = [w for w in f.as_list(response.get("warnings")) if isinstance(w, str)]
    return Answer(response.get("allowed") is True, result, patch, warnings)


def _patch(response: dict[str, Any], version: str, mutating: bool) -> list[Any] | None:
    raw, patch_type = response.get("patch"), response.get("patchType")
    if not mutating:
        if raw:
            raise CallFailed("received invalid webhook response: validating webhook may not return response.patch")
        if patch_type is not None:
            raise CallFailed("received invalid webhook response: validating webhook may not return response.patchType")
        return None
    if version == "v1" and raw and patch_type is None:
        raise CallFailed("received invalid webhook response: "
                         "webhook returned response.patch but not response.patchType")
    if version == "v1" and not raw and patch_type is not None:
        raise CallFailed("received invalid webhook response: "
                         "webhook returned response.patchType but not response.patch")
    if not raw:
        return None
    if (patch_type or "JSONPatch") != "JSONPatch":
        raise CallFailed(f'unsupported patch type "{patch_type}"')
    try:
        decoded = json.loads(base64.b64decode(f.as_str(raw), validate=True))
    except (binascii.Error, ValueError) as exc:
        raise CallFailed(f"received undecodable patch in webhook response: {exc}") from None
    if not isinstance(decoded, list):
        raise CallFailed("received undecodable patch in webhook response: a JSON patch is a list of operations")
    return decoded


# ---- the Status of each failure ----


def denied(hook_name: str, result: dict[str, Any] | None) -> errors.StatusError:
    """`webhookerrors.ToStatusErr`: the webhook's own Status, its message prefixed with who denied."""
    result = result or {}
    raw_code = result.get("code")
    code = raw_code if f.is_int(raw_code) and raw_code >= 400 else 400
    by = f'admission webhook "{hook_name}" denied the request'
    message, reason = f.as_str(result.get("message")), f.as_str(result.get("reason"))
    text = f"{by}: {message}" if message else f"{by}: {reason}" if reason else f"{by} without explanation"
    details = f.as_dict(result.get("details"))
    causes = [errors.Cause(f.as_str(c.get("field")), f.as_str(c.get("message")), f.as_str(c.get("reason")))
              for _, c in f.dicts(details.get("causes"))]
    return _WebhookStatus(code, reason, text, kind=f.as_str(details.get("kind")) or None,
                          name=f.as_str(details.get("name")) or None, group=f.as_str(details.get("group")) or None,
                          causes=causes)


class _WebhookStatus(errors.StatusError):
    """A webhook's own Status: an empty reason is left out of the body (`omitempty`), not sent as ""."""

    def to_status(self) -> dict[str, Any]:
        body = super().to_status()
        if not body.get("reason"):
            body.pop("reason", None)
        return body


def call_failed(hook_name: str, why: str) -> errors.StatusError:
    """`apierrors.NewInternalError(&ErrCallingWebhook{...})` (failing closed)."""
    return internal(f'failed calling webhook "{hook_name}": {why}')


def internal(text: str) -> errors.StatusError:
    """`apierrors.NewInternalError`: 500, `Internal error occurred: <text>`, one cause holding the text."""
    return errors.StatusError(500, "InternalError", f"Internal error occurred: {text}",
                              causes=[admission_policies.MessageCause("", text, "")])


def dry_run_unsupported(hook_name: str) -> errors.StatusError:
    return errors.bad_request(f'admission webhook "{hook_name}" does not support dry run')


def supports_dry_run(hook: dict[str, Any]) -> bool:
    return hook.get("sideEffects") in ("None", "NoneOnDryRun")
