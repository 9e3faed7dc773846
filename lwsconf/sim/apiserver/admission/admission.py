"""Admission: defaulting, mutating admission policies and validation of an object about to be written.

The order is kube-apiserver's: the object is decoded and defaulted (built-ins through `defaults`, after
dropping the top-level and metadata fields their type lacks, `builtin_fields`; custom resources by their
CRD: pruning of unknown fields, then schema defaults; both honour `fieldValidation`), then the
MutatingAdmissionPolicies bound in the store change it (`mutating_policies`; only when the handler
passes a `Mutation`), then it is validated (built-ins through `validation`; custom resources
by structural schema validation and `x-kubernetes-validations` CEL rules, transition rules seeing the
old object). Every rejection is a 422 Invalid listing each field cause, or a 400 for strict-decoding
errors. `enforce_policies` then runs the ValidatingAdmissionPolicies (`admission_policies`), which the
handlers call after the kind hooks, just before storage. `admit` is `prepare` (decoding, defaults, mutating
policies) then `validate`; when webhooks are configured the handlers call the two halves themselves, with the
mutating webhooks (`webhooks.steps`) between them, as kube-apiserver runs its mutating admission plugins
before the strategy's validation. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwsconf.sim.apiserver.admission import builtin_fields, defaults, service_account
from lwsconf.sim.apiserver.admission.validation import registry as validation
from lwsconf.sim.apiserver.apimachinery import errors, objects
from lwsconf.sim.apiserver.apimachinery import meta as validation_meta
from lwsconf.sim.apiserver.policies import admission_policies, mutating_policies
from lwsconf.sim.apiserver.policies.admission_policy_match import PolicyRequest
from lwsconf.sim.apiserver.protobuf import godecode
from lwsconf.sim.apiserver.schema import cel, schema
from lwsconf.sim.apiserver.storage import resources, store

_PODS = ("", "pods")
_SERVICE_ACCOUNTS: store.ResourceKey = ("", "serviceaccounts")


def _service_account_admission(pod: dict[str, Any], how: Mutation) -> None:
    """The ServiceAccount admission plugin, first of the mutating plugins after NamespaceLifecycle and before
    the MutatingAdmissionPolicies and webhooks (kube-apiserver's plugin order)."""
    namespace = how.namespace or ""
    spec: dict[str, Any] = pod["spec"] if isinstance(pod.get("spec"), dict) else {}
    account = how.db.get(_SERVICE_ACCOUNTS, namespace,
                         str(spec.get("serviceAccountName") or service_account.DEFAULT_ACCOUNT))
    service_account.admit_pod(pod, namespace, account)


@dataclass(frozen=True)
class Mutation:
    """What mutating admission needs to know of a CREATE or UPDATE besides the objects."""

    db: store.Store
    registry: resources.Registry
    operation: str
    namespace: str | None
    name: str
    subresource: str | None = None
    dry_run: bool = False


class Admission:
    """Runs the admission chain; caches compiled CEL programs per CRD version and per admission policy."""

    def __init__(self) -> None:
        self._rules = cel.RuleCache()
        self._policies = admission_policies.validating_cache()
        self._mutating = mutating_policies.mutating_cache()

    def forget(self, info: resources.ResourceInfo) -> None:
        """Drop the compiled rules of a CRD version that changed or went away."""
        self._rules.forget((info.crd_name, info.version))

    def admit(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *,
              field_validation: str = "Strict", subresource: str | None = None,
              mutation: Mutation | None = None) -> list[str]:
        """Default, mutate (with `mutation`) and validate `obj` in place; returns warnings.

        Raises:
            StatusError: the object is invalid (422), or a mutating policy denied the request.
        """
        warnings = self.prepare(info, obj, old, field_validation=field_validation, mutation=mutation)
        self.validate(info, obj, old, subresource=subresource)
        return warnings

    def prepare(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *,
                field_validation: str = "Strict", mutation: Mutation | None = None,
                track: Callable[[dict[str, Any], dict[str, Any]], None] | None = None) -> list[str]:
        """Decode, default and run the MutatingAdmissionPolicies (with `mutation`) in place; returns warnings.

        The first half of `admit`: mutating webhooks (`webhooks.dispatch`) run between it and `validate`.
        `track` records the write's managed fields on the decoded, defaulted object (given with the object
        as sent), before any mutating admission: kube-apiserver's field manager runs in the handler, ahead of
        the admission chain.
        """
        warnings: list[str] = []
        sent = objects.deep_copy(obj) if track is not None else {}
        if info.is_custom:
            warnings += self._decode_custom(info, obj, field_validation)
        else:
            dropped = builtin_fields.drop_unknown(info.key, obj, godecode.message_for(info.api_version, info.kind))
            warnings += _unknown_field_warnings(info, dropped, field_validation)
            defaults.default_builtin(info.key, obj, old)
        if track is not None:
            track(obj, sent)
        if mutation is not None:
            if info.key == _PODS and mutation.operation == "CREATE" and not mutation.subresource:
                _service_account_admission(obj, mutation)
            self._mutate(info, obj, old, mutation)
        return warnings

    def validate(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *,
                 subresource: str | None = None) -> None:
        """The second half of `admit`: metadata, schema/CEL or built-in validation (StatusError 422)."""
        meta = obj.get("metadata") or {}
        causes = validation.validate_metadata(
            meta, namespaced=info.namespaced, name_rule=validation.NAME_RULES.get(info.key, "dns1123_subdomain"))
        if old is not None:
            causes += validation_meta.validate_no_new_finalizers(meta, old.get("metadata") or {}, "metadata.finalizers")
        if not info.is_custom:
            causes += validation_meta.validate_kube_finalizer_names(meta.get("finalizers"), "metadata.finalizers")
        if info.is_custom:
            causes = self._validate_custom(info, obj, old, causes)
        elif subresource != "status" or old is None:
            causes += validation.validate_builtin(info.key, obj, old)
        else:
            causes += validation.validate_builtin_status(info.key, obj)
        if causes:
            raise errors.invalid(info.kind, info.group, meta.get("name") or meta.get("generateName", ""), causes)

    def enforce_policies(self, db: store.Store, registry: resources.Registry, info: resources.ResourceInfo,
                         req: PolicyRequest) -> list[str]:
        """Run the bound ValidatingAdmissionPolicies; returns warnings, raises StatusError on denial."""
        return admission_policies.enforce(db, registry, self._policies, info, req)

    def _mutate(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
                how: Mutation) -> None:
        mutated = self.run_policies(info, obj, old, how)
        if mutated is not None:
            obj.clear()
            obj.update(mutated)

    def run_policies(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
                     how: Mutation, *, reinvocation: bool = False) -> dict[str, Any] | None:
        """The MutatingAdmissionPolicies on `obj`: the mutated object, or None when none changed it.

        `reinvocation`: only the `IfNeeded` ones, once (the second round after a mutating webhook changed it).
        """
        name = how.name or (obj.get("metadata") or {}).get("name") or ""
        req = admission_policies.request_for(info, how.operation, namespace=how.namespace, name=name, obj=obj,
                                             old=old, subresource=how.subresource, dry_run=how.dry_run)
        return mutating_policies.mutate(how.db, how.registry, self._mutating, info, req,
                                        normalize=self.normalizer(info, old), reinvocation=reinvocation)

    def normalizer(self, info: resources.ResourceInfo,
                   old: dict[str, Any] | None) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """What kube-apiserver does to a patched object of `info` (decode: prune, default)."""
        return lambda patched: self._normalize(info, patched, old)

    @staticmethod
    def _normalize(info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """A patched object decoded again: unknown fields of a custom resource dropped, defaults applied."""
        if not info.is_custom:
            defaults.default_builtin(info.key, obj, old)
        elif info.schema is not None:
            schema.prune(info.schema, obj)
            schema.apply_defaults(info.schema, obj)
        return obj

    def _decode_custom(self, info: resources.ResourceInfo, obj: dict[str, Any], field_validation: str) -> list[str]:
        """Pruning (strict decoding errors per `fieldValidation`) and schema defaults."""
        if info.schema is None:
            return []
        warnings = _unknown_field_warnings(info, schema.prune(info.schema, obj), field_validation)
        schema.apply_defaults(info.schema, obj)
        return warnings

    def _validate_custom(self, info: resources.ResourceInfo, obj: dict[str, Any],
                         old: dict[str, Any] | None, meta_causes: list[errors.Cause]) -> list[errors.Cause]:
        """A custom resource's causes in kube-apiserver's order (apiextensions-apiserver
        pkg/registry/customresource/validator.go `Validate`, then strategy.go): metadata, schema, the scale
        subresource's replicas, then CEL unless one of those is blocking (`hasBlockingErr`)."""
        if info.schema is None:
            return meta_causes
        causes = meta_causes + schema.validate(info.schema, obj) + _scale_causes(info, obj)
        blocking = cel.blocking_cause(causes)
        if blocking is not None:
            return [*causes, blocking]  # as kube-apiserver: no CEL on objects with type or enum errors
        return causes + cel.evaluate(self._rules.get((info.crd_name, info.version), info.schema), obj, old)


def _scale_causes(info: resources.ResourceInfo, obj: dict[str, Any]) -> list[errors.Cause]:
    """`ValidateScaleSpec`/`ValidateScaleStatus` (customresource/validator.go): the replicas the scale
    subresource reads must be non-negative int32s; the field is the CRD's JSON path, leading dot kept."""
    if info.scale is None:
        return []
    causes = []
    for path in (info.scale.spec_replicas_path, info.scale.status_replicas_path):
        node: Any = obj
        for part in path.lstrip(".").split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue  # absent: NestedInt64 reads 0
        if isinstance(node, bool) or not isinstance(node, int):  # unstructured.NestedInt64's accessor error
            shown, go_type = _go_value(node)
            causes.append(errors.Cause(path, f"Invalid value: 0: {path} accessor error: {shown} is of the type "
                                       f"{go_type}, expected int64"))
        elif node < 0:
            causes.append(errors.Cause(path, f"Invalid value: {node}: should be a non-negative integer"))
        elif node > 2**31 - 1:
            causes.append(errors.Cause(path, f"Invalid value: {node}: should be less than or equal to {2**31 - 1}"))
    return causes


def _go_value(value: Any) -> tuple[str, str]:
    """A decoded JSON value as Go's `%v` and `%T` print it (strings, booleans and numbers exactly)."""
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if isinstance(value, str):
        return value, "string"
    if isinstance(value, float):
        return (str(int(value)) if value.is_integer() else repr(value)), "float64"
    if isinstance(value, dict):
        return "map[...]", "map[string]interface {}"
    return "[...]", "[]interface {}"


def _unknown_field_warnings(info: resources.ResourceInfo, dropped: list[str], field_validation: str) -> list[str]:
    """Fields decoding dropped, as `fieldValidation` wants them: a 400 (Strict, worded as kube-apiserver's
    decoder: `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: ...`),
    warnings (Warn) or nothing."""
    if dropped and field_validation == "Strict":
        raise errors.bad_request(f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
                                 "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in dropped))
    return [f'unknown field "{path}"' for path in dropped] if field_validation == "Warn" else []
