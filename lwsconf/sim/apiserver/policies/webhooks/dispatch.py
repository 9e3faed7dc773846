"""Running the mutating and the validating webhooks of a request (the two admission plugins' `Dispatch`).

Mutating (`mutating/dispatcher.go`), on the object as the MutatingAdmissionPolicies left it: webhooks in
order, each matched against the object as mutated so far; a webhook's JSON patch is applied to the object in
the form the webhook was sent, the result decoded back and defaulted (`Default` after `UpdateObject`); a patch
that changes the object (compared before defaulting, as `apiequality.Semantic.DeepEqual` does) makes every
earlier `reinvocationPolicy: IfNeeded` webhook due again and asks for a second round. Reinvocation
(`admission/reinvocation.go` and `mutating/reinvocationcontext.go`): the second round re-runs the in-tree
mutations (here the IfNeeded MutatingAdmissionPolicies, through the caller's `reinvoke_policies`), then calls
only the webhooks due again; if those policies changed the object since the last webhook ran, every IfNeeded
webhook invoked before is due. A webhook is never called for the first time in the second round.

Validating (`validating/dispatcher.go`): every matching webhook is called at once; any failure decides.
kube-apiserver answers with the first failure to arrive; the sim answers with the first in webhook order, so
that the same request always gets the same answer.

Both: a dry-run request to a webhook whose `sideEffects` is not None/NoneOnDryRun is refused (400) whatever the
failurePolicy; a failed call (unreachable, timeout, TLS, invalid answer) fails the request with 500 under
`failurePolicy: Fail` and is skipped under Ignore; a denial always fails it with the webhook's Status;
warnings are collected in call order for the response's Warning headers. A patch that does not apply, or any
patch on a request without an object (DELETE), is a 500 whatever the failurePolicy, as in kube-apiserver;
patches are applied with json-patch v4's rules and words (`patching`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.policies import admission_policies
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.policies.webhooks import client, config, matching, patching, review
from lwsconf.sim.apiserver.policies.webhooks.matching import Webhook
from lwsconf.sim.apiserver.policies.webhooks.review import CallFailed
from lwsconf.sim.apiserver.storage import resources, store

Normalize = Callable[[dict[str, Any]], dict[str, Any]]
"""Decode and default a patched object of the requested type (what kube-apiserver does to a decoded object)."""
Reinvoke = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Re-run the reinvocable in-tree mutations on an object; the changed object or None."""


@dataclass
class _Round:
    """What reinvocation remembers across the two rounds (`webhookReinvokeContext`)."""

    obj: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    previously: set[str] = field(default_factory=set)
    due: set[str] = field(default_factory=set)
    last_output: dict[str, Any] | None = None
    again: bool = False

    def changed_by_webhook(self) -> None:
        self.due |= self.previously
        self.previously = set()
        self.again = True


class Webhooks:
    """The webhooks of the stored configurations, and their calls."""

    def __init__(self) -> None:
        self._cache = matching.WebhookCache()
        self._connections = client.Connections()

    async def close(self) -> None:
        """Close the connections kept open to webhooks (the API server is stopping)."""
        await self._connections.close()

    @staticmethod
    def configured(db: store.Store) -> bool:
        """Whether any configuration exists (without one, a write never awaits)."""
        return bool(db.table(config.MUTATING).objects) or bool(db.table(config.VALIDATING).objects)

    async def mutate(self, db: store.Store, registry: resources.Registry, info: resources.ResourceInfo,
                     req: PolicyRequest, *, normalize: Normalize, reinvoke: Reinvoke) -> tuple[dict[str, Any] | None,
                                                                                                list[str]]:
        """Run the mutating webhooks; returns the object (None for a DELETE) and the warnings.

        Raises:
            StatusError: a webhook denied the request, or a call failed under `failurePolicy: Fail`.
        """
        hooks = self._cache.webhooks(db, config.MUTATING)
        state = _Round(req.obj)
        if not hooks or matching.is_exempt(req):
            return req.obj, []
        runner = _Mutating(self._connections, db, registry, info, req, normalize)
        await runner.round(hooks, state, reinvoking=False)
        if state.again and state.obj is not None:
            again = reinvoke(state.obj)
            if again is not None:
                state.obj = again
            await runner.round(hooks, state, reinvoking=True)
        return state.obj, state.warnings

    async def validate(self, db: store.Store, registry: resources.Registry, info: resources.ResourceInfo,
                       req: PolicyRequest) -> list[str]:
        """Run the validating webhooks; returns their warnings.

        Raises:
            StatusError: a webhook denied the request, or a call failed under `failurePolicy: Fail`.
        """
        hooks = self._cache.webhooks(db, config.VALIDATING)
        calls = matching.calls(db, registry, hooks, info, req)
        if not calls:
            return []
        answers = await asyncio.gather(*(_validate_one(self._connections, db, c) for c in calls))
        warnings = [w for ws, _ in answers for w in ws]
        failure = next((e for _, e in answers if e is not None), None)
        if failure is not None:
            raise failure
        return warnings


async def _validate_one(connections: client.Connections, db: store.Store,
                        call: matching.Call) -> tuple[list[str], errors.StatusError | None]:
    hook = call.webhook
    try:
        answer = await _call(connections, db, hook, call.request, mutating=False)
    except CallFailed as exc:
        return [], None if hook.failure_policy == "Ignore" else review.call_failed(hook.name, str(exc))
    except errors.StatusError as exc:
        return [], exc
    return answer.warnings, None if answer.allowed else review.denied(hook.name, answer.result)


async def _call(connections: client.Connections, db: store.Store, hook: Webhook, form: PolicyRequest, *,
                mutating: bool) -> review.Answer:
    """One call: dry-run check, review, POST, verification (CallFailed for what failurePolicy decides)."""
    if form.dry_run and not review.supports_dry_run(hook.spec):
        raise review.dry_run_unsupported(hook.name)
    version = review.review_version(hook.spec)
    uid = review.new_uid()
    body = await client.post(connections, db, hook.spec, review.request_body(version, form, uid))
    return review.verify(uid, version, mutating, body)


class _Mutating:
    """One request's mutating webhook calls."""

    def __init__(self, connections: client.Connections, db: store.Store, registry: resources.Registry,
                 info: resources.ResourceInfo, req: PolicyRequest, normalize: Normalize) -> None:
        self.connections = connections
        self.db, self.registry, self.info, self.req, self.normalize = db, registry, info, req, normalize

    async def round(self, hooks: list[Webhook], state: _Round, *, reinvoking: bool) -> None:
        if reinvoking and state.obj != state.last_output:
            state.changed_by_webhook()  # the in-tree reinvocation changed it: all eligible webhooks are due
        try:
            for hook in hooks:
                current = dataclasses.replace(self.req, obj=state.obj)
                candidates = admission_policies.equivalent_forms(self.registry, self.info, current)
                form = matching.should_call(hook, candidates,
                                            functools.partial(matching.namespace_labels, self.db, current))
                if form is None or (reinvoking and hook.uid not in state.due):
                    continue
                await self._one(hook, form, state)
        finally:
            state.last_output = state.obj

    async def _one(self, hook: Webhook, form: PolicyRequest, state: _Round) -> None:
        failure: CallFailed | None = None
        changed = False
        try:
            answer = await _call(self.connections, self.db, hook, form, mutating=True)
            state.warnings += answer.warnings
            if not answer.allowed:
                raise review.denied(hook.name, answer.result)
            if answer.patch:
                changed = self._apply(hook, form, answer.patch, state)
        except CallFailed as exc:
            failure = exc
        if changed:
            state.changed_by_webhook()
        if hook.reinvocation_policy == "IfNeeded":
            state.previously.add(hook.uid)
        if failure is not None and hook.failure_policy != "Ignore":
            raise review.call_failed(hook.name, str(failure))

    def _apply(self, hook: Webhook, form: PolicyRequest, ops: list[Any], state: _Round) -> bool:
        """Apply a webhook's patch to the object in the form it was sent; returns whether it changed."""
        if form.obj is None or state.obj is None:
            raise review.internal(f'admission webhook "{hook.name}" attempted to modify the object, which is not '
                                  "supported for this operation")
        try:
            patched = patching.apply(form.obj, ops)
        except patching.PatchFailed as exc:
            raise review.internal(str(exc)) from None
        if not isinstance(patched, dict):
            raise review.internal("the patched object is not a JSON object")
        if patched == form.obj:
            return False
        other = self._form_info(form)
        if other is not self.info:
            patched = admission_policies.convert(other, self.info, patched, form) or patched
        state.obj = self.normalize(patched)
        return True

    def _form_info(self, form: PolicyRequest) -> resources.ResourceInfo:
        if form.original is None:
            return self.info
        return self.registry.lookup(form.group, form.version, form.resource) or self.info
