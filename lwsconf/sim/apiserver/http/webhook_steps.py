"""The two webhook steps of a write, as the handlers call them (between the shared admission stages).

`mutate` runs after `Admission.prepare` (decoding, defaults, MutatingAdmissionPolicies) and before
`Admission.validate`; `validate` after the ValidatingAdmissionPolicies, just before storage. The `scale`,
`binding` and `eviction` subresources call only `validate` (with their own Scale, Binding or Eviction object):
like the MutatingAdmissionPolicies, mutating webhooks are not called for them in the sim. Both return at
once, without awaiting, when no webhook configuration exists, so a write without webhooks stays one
synchronous step. `still_current` is the check an update makes after awaiting webhooks: kube-apiserver runs
admission inside its optimistic-concurrency loop (`GuaranteedUpdate`), so an update never commits over a
write that landed meanwhile; the handlers retry from the start instead (`Stale`).
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver.admission import admission
from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import routing
from lwsconf.sim.apiserver.http.context import ServerContext
from lwsconf.sim.apiserver.policies import admission_policies
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.storage import resources


class Stale(errors.StatusError):
    """The stored object changed while webhooks were called: redo the write on the new one."""


def _request(target: routing.Target, operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
             dry_run: bool, kind: tuple[str, str, str] | None = None) -> PolicyRequest:
    meta = (obj or old or {}).get("metadata") or {}
    return admission_policies.request_for(target.info, operation, namespace=target.namespace,
                                          name=target.name or meta.get("name") or "", obj=obj, old=old,
                                          subresource=target.subresource, dry_run=dry_run, kind=kind)


async def mutate(ctx: ServerContext, target: routing.Target, operation: str, obj: dict[str, Any] | None,
                 old: dict[str, Any] | None, *, dry_run: bool, how: admission.Mutation | None = None) -> list[str]:
    """The mutating webhooks (`obj` changed in place); warnings back, StatusError on denial."""
    if not ctx.webhooks.configured(ctx.db):
        return []
    info = target.info

    def reinvoke(current: dict[str, Any]) -> dict[str, Any] | None:
        return None if how is None else ctx.admission.run_policies(info, current, old, how, reinvocation=True)

    new, warnings = await ctx.webhooks.mutate(ctx.db, ctx.registry, info,
                                              _request(target, operation, obj, old, dry_run),
                                              normalize=ctx.admission.normalizer(info, old), reinvoke=reinvoke)
    if obj is not None and new is not None and new is not obj:
        obj.clear()
        obj.update(new)
    return warnings


async def validate(ctx: ServerContext, target: routing.Target, operation: str, obj: dict[str, Any] | None,
                   old: dict[str, Any] | None, *, dry_run: bool, kind: tuple[str, str, str] | None = None) -> list[str]:
    """The validating webhooks; warnings back, StatusError on denial.

    `kind`: (group, version, kind) of a subresource's own object (autoscaling/v1 Scale, v1 Binding, policy/v1
    Eviction), which is what such a webhook is sent.
    """
    if not ctx.webhooks.configured(ctx.db):
        return []
    return await ctx.webhooks.validate(ctx.db, ctx.registry, target.info,
                                       _request(target, operation, obj, old, dry_run, kind))


def still_current(ctx: ServerContext, info: resources.ResourceInfo, old: dict[str, Any]) -> None:
    """Raise `Stale` when the object `old` was read as has since been written (only with webhooks configured)."""
    if not ctx.webhooks.configured(ctx.db):
        return
    meta = old["metadata"]
    now = ctx.storage.get(info, meta.get("namespace") or "", meta["name"])
    if now is None or now["metadata"].get("resourceVersion") != meta.get("resourceVersion"):
        name = meta["name"]
        raise Stale(409, "Conflict", f'Operation cannot be fulfilled on {info.plural} "{name}": the object has been '
                    "modified while admission webhooks were called; please apply your changes to the latest version "
                    "and try again", kind=info.plural, name=name, group=info.group or None)
