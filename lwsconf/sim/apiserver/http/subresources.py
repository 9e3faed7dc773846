"""Subresources: status, scale, pods/binding, pods/eviction, namespaces/finalize, pods/log, proxy,
pods/exec, pods/attach and pods/portforward (WebSockets relayed to the kubelet: `streams`).

`status` reuses the main update path with status isolation (see `storage.prepare_update`).
`scale` presents an `autoscaling/v1` Scale view of any scalable object and writes the replicas back
through the normal update path, so admission (schema bounds, CEL) still runs.
`log` and `proxy` forward to the node agent or pod address, as kube-apiserver does; see `proxy`.
ValidatingAdmissionPolicies and validating webhooks see `scale` writes as UPDATEs of an autoscaling/v1 Scale,
`binding` and `eviction` as CREATEs of their Binding and Eviction (a rule must name `R/scale`, `pods/binding`...).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors, objects, selectors
from lwsconf.sim.apiserver.http import (
    context,
    decoding,
    handlers,
    hooks,
    params,
    proxy,
    reads,
    routing,
    streams,
    webhook_steps,
)
from lwsconf.sim.apiserver.http import eviction as eviction_mod
from lwsconf.sim.apiserver.http.context import ServerContext, json_response
from lwsconf.sim.apiserver.patch import patch
from lwsconf.sim.apiserver.patch.fieldmanager import entries as managed_fields
from lwsconf.sim.apiserver.storage import storage


async def dispatch(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.StreamResponse:
    sub, method = target.subresource, request.method
    if sub == "status":
        if method == "GET":
            return await reads.get(ctx, request, target)
        if method == "PUT":
            return await handlers.update(ctx, request, target)
        if method == "PATCH":
            return await handlers.patch_(ctx, request, target)
    elif sub == "scale":
        if method == "GET":
            return json_response(_scale_of(ctx, target))
        if method in ("PUT", "PATCH"):
            return await _write_scale(ctx, request, target)
    elif sub == "binding" and method == "POST":
        return await _bind(ctx, request, target)
    elif sub == "eviction" and method == "POST":
        return await _evict(ctx, request, target)
    elif sub == "finalize" and method == "PUT":
        return await _finalize(ctx, request, target)
    elif sub == "log" and method == "GET":
        return await proxy.pod_log(ctx, request, target)
    elif sub == "proxy":
        return await proxy.forward(ctx, request, target)
    elif sub in streams.KINDS and method in ("GET", "POST"):
        return await streams.pod_stream(ctx, request, target, sub)
    raise errors.method_not_allowed()


def _scale_of(ctx: ServerContext, target: routing.Target) -> dict[str, Any]:
    assert target.name is not None and target.info.scale is not None
    obj = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    spec = target.info.scale
    meta = obj["metadata"]
    status: dict[str, Any] = {"replicas": int(objects.get_path(obj, spec.status_replicas_path) or 0)}
    if spec.label_selector_path:
        selector = objects.get_path(obj, spec.label_selector_path)
        if isinstance(selector, dict):  # built-ins keep a LabelSelector; Scale wants the string form
            selector = str(selectors.LabelSelector.from_dict(selector))
        if selector:
            status["selector"] = selector
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": int(objects.get_path(obj, spec.spec_replicas_path) or 0)},
        "status": status,
    }


async def _write_scale(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    assert target.name is not None and target.info.scale is not None
    current = _scale_of(ctx, target)
    if request.method == "PUT":
        scale = await decoding.read_object(request)
    else:
        body = await context.read_body(request)
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
        scale = patch.apply_patch(current, body, content_type, kind="Scale", builtin=True,
                                  manager=request.query.get("fieldManager", ""),
                                  force=params.flag(request, "force"), api_version="autoscaling/v1",
                                  now=objects.now_rfc3339())
    scale = decoding.as_object(scale, "the Scale")
    sent_name = (scale.get("metadata") or {}).get("name")
    if request.method == "PUT" and sent_name != target.name:  # the UPDATE handler's checkName (handlers/rest.go)
        raise errors.bad_request(f"the name of the object ({sent_name or ''}) does not match the name on the URL "
                                 f"({target.name})")
    spec = scale.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.invalid("Scale", "autoscaling", target.name, [errors.Cause(
            "spec", f"Invalid value: {spec!r}: must be an object such as {{\"replicas\": 3}}")])
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas < 0:
        # autoscaling ValidateScale -> ValidateNonnegativeField, as kube-apiserver 1.37.2 words it
        # (lwsconf fidelity subresources/scale-subresource/patch-scale-negative)
        raise errors.invalid("Scale", "autoscaling", target.name, [errors.Cause(
            "spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0", "FieldValueInvalid")])
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise errors.invalid("Scale", "autoscaling", target.name, [errors.Cause(
            "spec.replicas", f"Invalid value: {replicas!r}: must be a non-negative integer")])
    sent_rv = scale["metadata"].get("resourceVersion")
    old = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
        raise errors.stale_resource_version(target.info.plural, target.info.group, target.name)
    new = objects.deep_copy(old)
    objects.set_path(new, target.info.scale.spec_replicas_path, replicas)
    main = routing.Target(target.info, target.namespace, target.name, None, "")
    merged = ctx.storage.prepare_update(target.info, new, old, subresource=None)
    # the parent's entry for the replicas a /scale write set: subresource "scale", the parent's apiVersion,
    # no time (kube-apiserver's scale handler converts the Scale's managed fields back to the parent's)
    managed_fields.record_update(old, merged, manager=managed_fields.manager_name(
        request.query.get("fieldManager", ""), request.headers.get("User-Agent", "")),
        api_version=target.info.api_version, subresource="scale", now="", kind=target.info.kind,
        builtin=not target.info.is_custom, custom_schema=target.info.schema)
    ctx.admission.admit(target.info, merged, old)
    dry = params.dry_run(request)
    new_scale = {**current, "spec": {**current["spec"], "replicas": replicas}}
    scale_kind = ("autoscaling", "v1", "Scale")
    warnings = handlers.policy_warnings(ctx, target, "UPDATE", new_scale, current, dry_run=dry, kind=scale_kind)
    warnings += await webhook_steps.validate(ctx, target, "UPDATE", new_scale, current, dry_run=dry, kind=scale_kind)
    webhook_steps.still_current(ctx, target.info, old)
    ctx.storage.commit_update(target.info, merged, old, dry_run=dry)
    headers = {"Warning": ", ".join(f"299 - {handlers.warning_text(w)}" for w in warnings)} if warnings else None
    return json_response(_scale_of(ctx, main), headers=headers)


async def _bind(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    """POST pods/binding: set spec.nodeName once, as the scheduler does."""
    assert target.name is not None
    binding = await decoding.read_object(request)
    ref = binding.get("target") or {}
    if not isinstance(ref, dict) or not isinstance(ref.get("name", ""), str):
        raise errors.bad_request(f"Binding.target must be an object reference with a string name (the node), "
                                 f"got {ref!r}")  # kube-apiserver's typed decoding refuses it the same way
    node = ref.get("name") or ""
    if not node:
        raise errors.invalid("Binding", "", target.name, [errors.Cause("target.name", "Required value",
                                                                        "FieldValueRequired")])
    old = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    if (old.get("spec") or {}).get("nodeName"):
        raise errors.conflict("pods", "", target.name,
                              f"pod {target.name} is already assigned to node {old['spec']['nodeName']!r}")
    if old["metadata"].get("deletionTimestamp"):
        raise errors.conflict("pods", "", target.name, "pod is being deleted, cannot be assigned to a host")
    sent_uid = (binding.get("metadata") or {}).get("uid")
    if sent_uid and sent_uid != old["metadata"]["uid"]:
        raise errors.conflict("pods", "", target.name, "Precondition failed: UID in precondition does not match")
    binding_kind = ("", "v1", "Binding")
    handlers.policy_warnings(ctx, target, "CREATE", binding, None, dry_run=params.dry_run(request), kind=binding_kind)
    await webhook_steps.validate(ctx, target, "CREATE", binding, None, dry_run=params.dry_run(request),
                                 kind=binding_kind)
    webhook_steps.still_current(ctx, target.info, old)
    new = objects.deep_copy(old)
    new["spec"]["nodeName"] = node
    # As BindingREST does: the bound pod reports PodScheduled=True.
    conditions = [c for c in (new.setdefault("status", {}).get("conditions") or []) if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": objects.now_rfc3339()})
    new["status"]["conditions"] = conditions
    # a storage update without the pod strategy: the pod's generation stays (lwsconf fidelity nodes: every bound
    # pod read generation 2 on the sim, 1 on kube-apiserver)
    ctx.storage.commit_update(target.info, new, old, dry_run=params.dry_run(request), strategy=False)
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                          "code": 201}, status=201)


async def _evict(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    """POST pods/eviction: a delete honouring the eviction's DeleteOptions and the pod's PodDisruptionBudget
    (`eviction.decide`: 429 when the budget allows no disruption; otherwise the budget is spent first)."""
    assert target.name is not None
    eviction = await decoding.read_object(request)
    opts = storage.DeleteOptions.from_body(eviction.get("deleteOptions") or {}, {})
    eviction_kind = ("policy", "v1", "Eviction")
    handlers.policy_warnings(ctx, target, "CREATE", eviction, None, dry_run=opts.dry_run, kind=eviction_kind)
    await webhook_steps.validate(ctx, target, "CREATE", eviction, None, dry_run=opts.dry_run, kind=eviction_kind)
    pod = ctx.storage.must_get(target.info, target.namespace or "", target.name)
    pdb_info = ctx.registry.lookup("policy", "v1", "poddisruptionbudgets")
    if pdb_info is not None:
        keys = ctx.storage.list_keys(pdb_info, target.namespace or "", selectors.LabelSelector.parse(""),
                                     selectors.FieldSelector.parse(""))
        budgets = ctx.storage.read(pdb_info, keys)
        decision = eviction_mod.decide(pod, budgets, objects.now_rfc3339())
        if decision.budget is not None:
            old = next(b for b in budgets if b["metadata"]["uid"] == decision.budget["metadata"]["uid"])
            # eviction.go writes it through kube-apiserver's own client: an Update of /status by "kube-apiserver"
            managed_fields.record_update(old, decision.budget, manager="kube-apiserver", api_version="policy/v1",
                                         subresource="status", now=objects.now_rfc3339(), kind="PodDisruptionBudget",
                                         builtin=True)
            stored = ctx.storage.commit_update(pdb_info, decision.budget, old, dry_run=opts.dry_run)
            if not opts.dry_run:
                hooks.after_write(ctx, pdb_info, stored)
    if not opts.dry_run:
        # addConditionAndDeletePod checks the delete's preconditions before it writes the condition (a refused
        # eviction leaves the pod unmarked): a dry-run delete makes every check the real one would
        ctx.storage.delete(target.info, target.namespace or "", target.name, dataclasses.replace(opts, dry_run=True))
        marked = ctx.storage.commit_update(target.info, eviction_mod.with_disruption_target(pod, objects.now_rfc3339()),
                                           pod)
        hooks.after_write(ctx, target.info, marked)
        if opts.precondition_rv:  # as upstream: the precondition moves to the version it just wrote itself
            opts = dataclasses.replace(opts, precondition_rv=marked["metadata"]["resourceVersion"])
    result = ctx.storage.delete(target.info, target.namespace or "", target.name, opts)
    hooks.after_write(ctx, target.info, result)
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                          "code": 201}, status=201)


async def _finalize(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    """PUT namespaces/NAME/finalize: only `spec.finalizers` changes (the namespace controller's exit)."""
    assert target.name is not None
    sent = await decoding.read_object(request)
    spec = {} if sent.get("spec") is None else sent["spec"]
    finalizers = (spec.get("finalizers") or []) if isinstance(spec, dict) else None
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        raise errors.bad_request(f"a Namespace's spec.finalizers must be a list of strings, got {sent.get('spec')!r}")
    old = ctx.storage.must_get(target.info, "", target.name)
    new = objects.deep_copy(old)
    new.setdefault("spec", {})["finalizers"] = list(finalizers)
    stored = ctx.storage.commit_update(target.info, new, old)
    return json_response(stored)
