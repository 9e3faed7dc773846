"""The writing verbs on a resource: create, update (PUT), patch, delete, deletecollection.

Each handler decodes the request, runs admission and calls `storage`, then renders the result.
MutatingAdmissionPolicies run inside admission, between defaulting and validation, on CREATE and UPDATE
(status included; `mutation`), then the mutating webhooks (`admit`, also on DELETE); ValidatingAdmissionPolicies
and then the validating webhooks run last before storage (`validating_admission`), on CREATE, UPDATE (status
included) and DELETE. An update or patch whose object changed while webhooks were awaited starts again.
Side effects that belong to particular kinds (CRD registration, Service ClusterIP allocation) are
in `hooks`; subresources are in `subresources`; watch streams in `watch`; the reads (get, list) in `reads`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from lwsconf.sim.apiserver.admission import admission
from lwsconf.sim.apiserver.apimachinery import errors, objects, selectors
from lwsconf.sim.apiserver.http import context, decoding, hooks, params, reviews, routing, webhook_steps
from lwsconf.sim.apiserver.http.context import ServerContext, json_response
from lwsconf.sim.apiserver.patch import merge_patches, patch
from lwsconf.sim.apiserver.patch.fieldmanager import entries as managed_fields
from lwsconf.sim.apiserver.policies import admission_policies
from lwsconf.sim.apiserver.protobuf import godecode, negotiation
from lwsconf.sim.apiserver.storage import conversion, resources
from lwsconf.sim.apiserver.storage.storage import DeleteOptions
from lwsconf.sim.apiserver.tables import tables

WEBHOOK_RETRIES = 5
"""Attempts of an update or patch whose object kept changing while webhooks were called (then 409)."""


def parse_selectors(request: web.Request, target: routing.Target) -> tuple[selectors.LabelSelector,
                                                                           selectors.FieldSelector]:
    """The request's selectors; field labels checked against the served form, then mapped to the stored one."""
    label_sel = selectors.LabelSelector.parse(request.query.get("labelSelector", ""))
    field_sel = selectors.FieldSelector.parse(request.query.get("fieldSelector", ""))
    field_sel.check_supported(target.info.plural, target.info.group)
    return label_sel, conversion.field_selector(target.info, field_sel)


def render_object(ctx: ServerContext, request: web.Request, target: routing.Target,
                  obj: dict[str, Any], status: int = 200, warnings: list[str] | None = None) -> web.Response:
    headers = {"Warning": ", ".join(f"299 - {warning_text(w)}" for w in warnings)} if warnings else None
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(tables.to_table(target.info, [obj], list_meta={"resourceVersion": str(ctx.db.rv)},
                                             include_object=request.query.get("includeObject", "Metadata")),
                             status=status, headers=headers)
    return json_response(obj, status=status, headers=headers)


def warning_text(text: str) -> str:
    """A warning as a quoted header string (RFC 7234 warn-text; Go quotes it with `strconv.Quote`)."""
    return json.dumps(text)


def policy_warnings(ctx: ServerContext, target: routing.Target, operation: str, obj: dict[str, Any] | None,
                    old: dict[str, Any] | None, *, dry_run: bool,
                    kind: tuple[str, str, str] | None = None) -> list[str]:
    """Enforce the ValidatingAdmissionPolicies on this write (warnings back; StatusError on denial).

    `kind` names a subresource's own type (autoscaling/v1 Scale, v1 Binding) when `obj` is one.
    """
    meta = (obj or old or {}).get("metadata") or {}
    req = admission_policies.request_for(target.info, operation, namespace=target.namespace,
                                         name=target.name or meta.get("name") or "", obj=obj, old=old,
                                         subresource=target.subresource, dry_run=dry_run, kind=kind)
    return ctx.admission.enforce_policies(ctx.db, ctx.registry, target.info, req)


def mutation(ctx: ServerContext, request: web.Request, target: routing.Target, operation: str) -> admission.Mutation:
    """The MutatingAdmissionPolicies' view of this write (`Admission.admit(mutation=...)`)."""
    return admission.Mutation(ctx.db, ctx.registry, operation, target.namespace, target.name or "",
                              target.subresource, params.dry_run(request))


async def admit(ctx: ServerContext, request: web.Request, target: routing.Target, operation: str,
                obj: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """Mutating admission (policies, then webhooks) and validation of a CREATE or UPDATE, `obj` in place.

    NamespaceLifecycle comes first, as the first of kube-apiserver's mutating admission plugins: a CREATE in a
    missing or terminating namespace is refused before any policy or webhook sees it.
    """
    if operation == "CREATE" and target.info.namespaced and target.namespace:
        ctx.storage.check_namespace_open(target.namespace, target.info, obj)
    how = mutation(ctx, request, target, operation)
    warnings = ctx.admission.prepare(target.info, obj, old, field_validation=params.field_validation(request),
                                     mutation=how, track=managed_fields_recorder(request, target, old))
    warnings += await webhook_steps.mutate(ctx, target, operation, obj, old, dry_run=how.dry_run, how=how)
    ctx.admission.validate(target.info, obj, old, subresource=target.subresource)
    return warnings


def managed_fields_recorder(request: web.Request, target: routing.Target,
                            old: dict[str, Any] | None) -> Callable[[dict[str, Any], dict[str, Any]], None] | None:
    """What records this write's Update entry in `metadata.managedFields` (`fieldmanager.entries`); None for
    server-side apply, whose entry `apply` wrote."""
    if request.method == "PATCH" and \
            request.headers.get("Content-Type", "").split(";")[0].strip().lower() == patch.APPLY_PATCH:
        return None
    info, now = target.info, objects.now_rfc3339()
    manager = managed_fields.manager_name(request.query.get("fieldManager", ""), request.headers.get("User-Agent", ""))

    def record(obj: dict[str, Any], sent: dict[str, Any]) -> None:
        managed_fields.record_update(old, obj, manager=manager, api_version=info.api_version,
                                     subresource=target.subresource or None, now=now, kind=info.kind,
                                     builtin=not info.is_custom, custom_schema=info.schema,
                                     status_reset=info.has_status, sent=sent, status_keeps=info.status_write_resets)
    return record


async def validating_admission(ctx: ServerContext, target: routing.Target, operation: str,
                               obj: dict[str, Any] | None, old: dict[str, Any] | None, *, dry_run: bool) -> list[str]:
    """ValidatingAdmissionPolicies, then validating webhooks (kube-apiserver's plugin order)."""
    warnings = policy_warnings(ctx, target, operation, obj, old, dry_run=dry_run)
    return warnings + await webhook_steps.validate(ctx, target, operation, obj, old, dry_run=dry_run)


async def _retrying(attempt: Callable[[], Awaitable[web.Response]]) -> web.Response:
    """Run a write again when the object changed while webhooks were called (`webhook_steps.Stale`)."""
    for _ in range(WEBHOOK_RETRIES - 1):
        try:
            return await attempt()
        except webhook_steps.Stale:
            continue
    return await attempt()


# --- writes -----------------------------------------------------------------------------------

async def create(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    info = target.info
    params.field_manager(request, "CreateOptions")
    duplicates: list[str] = []
    obj = await decoding.read_object(request, "" if info.is_custom else info.kind, duplicates,
                                    api_version=info.api_version)
    repeated = decoding.duplicate_warnings(info, duplicates, params.field_validation(request))
    decoding.check_type_meta(info, obj, ctx.registry, field_validation=params.field_validation(request))
    decoding.check_namespace(info, obj, target.namespace)
    if info.key in reviews.KEYS:  # answered, never stored (kube-apiserver's review REST storage)
        answer = reviews.answer(info.key, obj, objects.now_rfc3339(), api_token=ctx.token)
        record = managed_fields_recorder(request, target, None)
        if info.key == reviews.ACCESS and record is not None:  # its field manager ran on the request's object
            managed = objects.deep_copy(obj)
            record(managed, objects.deep_copy(obj))
            if managed["metadata"].get("managedFields"):
                answer["metadata"]["managedFields"] = managed["metadata"]["managedFields"]
        return render_object(ctx, request, target, answer, status=201, warnings=repeated)
    if info.has_status:
        obj.pop("status", None)  # status is written through /status; strategies reset it on create
    return await _admit_and_create(ctx, request, target, obj, repeated)


async def _admit_and_create(ctx: ServerContext, request: web.Request, target: routing.Target, obj: dict[str, Any],
                            warnings: list[str]) -> web.Response:
    """The create path after decoding, shared by POST and by server-side apply to a missing object: mutating
    admission, the create hooks, stamping, validating admission, storage, the after-write hooks, the 201."""
    info = target.info
    warnings = warnings + await admit(ctx, request, target, "CREATE", obj, None)
    dry = params.dry_run(request)
    hooks.before_create(ctx, info, obj, dry_run=dry)
    ctx.storage.stamp_for_create(info, obj)  # validating admission sees uid, creationTimestamp, generated name
    warnings += await validating_admission(ctx, target, "CREATE", obj, None, dry_run=dry)
    stored = ctx.storage.create(info, obj, dry_run=dry, stamped=True)
    if not dry:
        hooks.after_write(ctx, info, stored)
    return render_object(ctx, request, target, stored, status=201, warnings=warnings)


async def update(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    assert target.name is not None
    info = target.info
    params.field_manager(request, "UpdateOptions")

    name = target.name

    async def attempt() -> web.Response:
        old = ctx.storage.must_get(info, target.namespace or "", name)
        new = await decoding.read_object(request, "" if info.is_custom else info.kind, api_version=info.api_version)
        return await _write_update(ctx, request, target, old, new)
    return await _retrying(attempt)


async def _write_update(ctx: ServerContext, request: web.Request, target: routing.Target,
                        old: dict[str, Any], new: dict[str, Any]) -> web.Response:
    info = target.info
    decoding.check_type_meta(info, new, ctx.registry, field_validation=params.field_validation(request))
    decoding.check_namespace(info, new, target.namespace)
    if new["metadata"].get("name", target.name) != target.name:
        raise errors.bad_request(
            f"the name of the object ({new['metadata'].get('name')}) does not match the name on the URL "
            f"({target.name})")
    new["metadata"]["name"] = target.name
    if new["metadata"].get("uid") and new["metadata"]["uid"] != old["metadata"]["uid"]:
        # the sent uid is a storage precondition; etcd3's StorageError reaches the client inside the Conflict
        # (lwsconf fidelity versions/rv-concurrency/update-uid-mismatch; the key is the usual registry path)
        key = "/".join(p for p in ("/registry", info.group if info.is_custom else "", info.plural,
                                   target.namespace or "", target.name or "") if p)
        raise errors.conflict(info.plural, info.group, target.name or "",
                              f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
                              f"AdditionalErrorMsg: Precondition failed: UID in precondition: "
                              f"{new['metadata']['uid']}, UID in object meta: {old['metadata']['uid']}")
    merged = ctx.storage.prepare_update(info, new, old, subresource=target.subresource)
    warnings = await admit(ctx, request, target, "UPDATE", merged, old)
    hooks.before_update(ctx, info, merged, old)
    dry = params.dry_run(request)
    warnings += await validating_admission(ctx, target, "UPDATE", merged, old, dry_run=dry)
    webhook_steps.still_current(ctx, info, old)
    stored = ctx.storage.commit_update(info, merged, old, dry_run=dry)
    if not dry:
        hooks.after_write(ctx, info, stored)
    return render_object(ctx, request, target, stored, warnings=warnings)


async def patch_(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    return await _retrying(lambda: _patch_once(ctx, request, target))


async def _patch_once(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    assert target.name is not None
    info = target.info
    body = await context.read_body(request)
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
    # kube-apiserver's order (handlers/patch.go): media type, PatchOptions, then the stored object
    patch.check_media_type(content_type, builtin=not info.is_custom)
    is_apply = content_type == "application/apply-patch+yaml"
    manager = params.field_manager(request, "PatchOptions")
    if is_apply and not manager:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", [errors.Cause(  # ValidatePatchOptions
            "fieldManager", "Required value: is required for apply patch", "FieldValueRequired")])
    old = ctx.storage.get(info, target.namespace or "", target.name)
    if old is None and not is_apply:
        raise errors.not_found(info.plural, info.group, target.name)
    base = objects.deep_copy(old) if old is not None else None
    patched = patch.apply_patch(base, body, content_type, kind=info.kind, builtin=not info.is_custom,
                                manager=manager, force=params.flag(request, "force"),
                                api_version=info.api_version, now=objects.now_rfc3339(), custom_schema=info.schema,
                                subresource=target.subresource or None, status_reset=info.has_status)
    if old is not None and not info.is_custom and content_type == patch.MERGE_PATCH:
        _check_merge_patched(info, old, body, patched, params.field_validation(request))
    patched = decoding.as_object(patched, "the patched object")
    if old is not None and patched["metadata"].get("name") != target.name:  # kube-apiserver's checkName
        raise errors.bad_request(f"the name of the object ({patched['metadata'].get('name') or ''}) does not match "
                                 f"the name on the URL ({target.name})")
    if old is None:
        return await _create_from_apply(ctx, request, target, patched)
    # A resourceVersion the patch itself carries is a precondition, as in kube-apiserver; the copy
    # of `old` the patch was applied to already holds the current one.
    patched_meta = patched["metadata"]
    if not patched_meta.get("resourceVersion"):
        patched_meta["resourceVersion"] = old["metadata"]["resourceVersion"]
    return await _write_update(ctx, request, target, old, patched)


def _check_merge_patched(info: resources.ResourceInfo, old: dict[str, Any], body: bytes, patched: Any,
                         field_validation: str) -> None:
    """A merge-patched built-in that its Go type cannot hold, answered as kube-apiserver's jsonPatcher does
    (apiserver handlers/patch.go applyPatchToCurrentObject): a 422 on the field `patch` whose value is the
    patched JSON text, with the decoder's error (a wrong type; under fieldValidation=Strict, unknown fields)
    as the detail (lwsconf fidelity patches/patch-merge/wrong-type, requests/field-validation/patch-unknown-strict)."""
    message = godecode.message_for(info.api_version, info.kind)
    if message is None or not isinstance(patched, dict):
        return
    found = godecode.decode(objects.deep_copy(patched), message)
    if found.type_error is not None:
        detail = found.type_error
    elif found.unknown and field_validation == "Strict":
        detail = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in found.unknown)
    else:
        return
    text = merge_patches.merged_json_text(godecode.go_order(old, message), json.loads(body))
    cause = errors.Cause("patch", f"Invalid value: {json.dumps(text, ensure_ascii=False)}: {detail}")
    raise errors.StatusError(422, "Invalid", f' "" is invalid: patch: {cause.message}', causes=[cause])


async def _create_from_apply(ctx: ServerContext, request: web.Request, target: routing.Target,
                             obj: dict[str, Any]) -> web.Response:
    info = target.info
    decoding.check_type_meta(info, obj)
    decoding.check_namespace(info, obj, target.namespace)
    obj["metadata"]["name"] = target.name
    return await _admit_and_create(ctx, request, target, obj, [])


async def delete(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    assert target.name is not None
    opts = await _delete_options(request)
    old = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    warnings = await webhook_steps.mutate(ctx, target, "DELETE", None, old, dry_run=opts.dry_run)
    warnings += await validating_admission(ctx, target, "DELETE", None, old, dry_run=opts.dry_run)
    result = ctx.storage.delete(target.info, target.namespace or "", target.name, opts)
    if not opts.dry_run:
        hooks.after_write(ctx, target.info, result)
    if target.info.key not in RETURNS_DELETED_OBJECT and not result["metadata"].get("deletionTimestamp"):
        return json_response(deleted_status(target, result), headers=_warning_headers(warnings))
    return render_object(ctx, request, target, result, warnings=warnings)


RETURNS_DELETED_OBJECT = {
    ("", "pods"), ("", "services"), ("", "namespaces"), ("", "serviceaccounts"), ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"), ("", "podtemplates"), ("", "resourcequotas"), ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csidrivers"), ("storage.k8s.io", "csinodes"), ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "volumeattributesclasses"), ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceclaimtemplates"), ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "deviceclasses")}
"""Kinds whose REST storage sets ReturnDeletedObject (kubernetes pkg/registry/*/storage/storage.go, 1.37):
a delete that removes one at once answers the
object; every other kind answers a Success Status naming it (kube-apiserver's Store.finalizeDelete).
A delete that only marks the object (finalizers, graceful pod deletion) answers the object for all."""


def deleted_status(target: routing.Target, obj: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"name": target.name, "kind": target.info.plural,
                               "uid": obj["metadata"].get("uid", "")}
    if target.info.group:
        details["group"] = target.info.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _warning_headers(warnings: list[str]) -> dict[str, str] | None:
    return {"Warning": ", ".join(f"299 - {warning_text(w)}" for w in warnings)} if warnings else None


async def _delete_options(request: web.Request) -> DeleteOptions:
    data = await context.read_body(request)
    body: dict[str, Any] = {}
    if data.strip() and negotiation.is_protobuf(request.headers.get("Content-Type", "")):
        body = decoding.decode_protobuf(data, "meta.k8s.io/v1", "DeleteOptions")
        body.pop("metadata", None)
    elif data.strip():
        # kube-apiserver's DELETE decodes the body with the JSON serializer, whose SimpleMetaFactory fails first
        # on a body that is no JSON object (lwsconf fidelity deletion/delete-propagation/body-not-json)
        problem = decoding.find_kind_problem(data)
        if problem is not None:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {problem}")
        parsed = json.loads(data)
        if not isinstance(parsed, dict):
            raise errors.bad_request("DeleteOptions body must be a JSON object")
        body = parsed
    return DeleteOptions.from_body(body, dict(request.query))


async def delete_collection(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    label_sel, field_sel = parse_selectors(request, target)
    opts = await _delete_options(request)
    info = target.info
    deleted = []
    for ns, name in ctx.storage.list_keys(info, target.namespace, label_sel, field_sel):
        try:
            old = ctx.storage.must_get(info, ns, name)
            item = routing.Target(info, ns or None, name, None, "")
            await webhook_steps.mutate(ctx, item, "DELETE", None, old, dry_run=opts.dry_run)
            await validating_admission(ctx, item, "DELETE", None, old, dry_run=opts.dry_run)
            result = ctx.storage.delete(info, ns, name, opts)
        except errors.StatusError as exc:
            if exc.code == 404:
                continue
            raise
        if not opts.dry_run:
            hooks.after_write(ctx, info, result)
        # the answer lists the objects as they were listed before their deletion (apiserver registry Store
        # DeleteCollection returns its list, not what each Delete returned: the resourceVersion each had, a pod
        # without the deletionTimestamp its delete set; lwsconf fidelity deletion/delete-collection/
        # deletecollection-selected, compared by resourceVersion order); a typed list's items carry no
        # apiVersion/kind, as in a LIST (storage.encoded_list_item)
        deleted.append(old if info.is_custom
                       else {k: v for k, v in old.items() if k not in ("apiVersion", "kind")})
    return json_response({"kind": info.list_kind_name, "apiVersion": info.api_version,
                          "metadata": {"resourceVersion": str(ctx.db.rv)}, "items": deleted})
