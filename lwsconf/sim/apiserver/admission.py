"""Admission: defaulting and validation of an object about to be written.

Built-in kinds follow their registry strategies (`defaults`, `validation`); custom resources follow
their CRD: pruning of unknown fields (honouring `fieldValidation`), schema defaults, structural
schema validation and `x-kubernetes-validations` CEL rules (transition rules see the old object).
Every rejection is a 422 Invalid listing each field cause, or a 400 for strict-decoding errors.
`enforce_policies` then runs the ValidatingAdmissionPolicies bound in the store (`admission_policies`),
which the handlers call after the kind hooks, just before storage. No I/O here.
"""

from __future__ import annotations

from typing import Any

from lwsconf.sim.apiserver import (
    admission_policies,
    cel,
    defaults,
    errors,
    resources,
    schema,
    store,
    validation,
)
from lwsconf.sim.apiserver.admission_policy_match import PolicyRequest


class Admission:
    """Runs the admission chain; caches compiled CEL programs per CRD version and per admission policy."""

    def __init__(self) -> None:
        self._rules = cel.RuleCache()
        self._policies = admission_policies.PolicyCache()

    def forget(self, info: resources.ResourceInfo) -> None:
        """Drop the compiled rules of a CRD version that changed or went away."""
        self._rules.forget((info.crd_name, info.version))

    def admit(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *,
              field_validation: str = "Strict", subresource: str | None = None) -> list[str]:
        """Default and validate `obj` in place; returns warnings, raises StatusError on rejection."""
        warnings: list[str] = []
        name = (obj.get("metadata") or {}).get("name") or (obj.get("metadata") or {}).get("generateName", "")
        causes = validation.validate_metadata(
            obj.get("metadata") or {}, namespaced=info.namespaced,
            name_rule=validation.NAME_RULES.get(info.key, "dns1123_subdomain"))
        if info.is_custom:
            warnings += self._custom(info, obj, old, field_validation, causes)
        else:
            defaults.default_builtin(info.key, obj, old)
            if subresource != "status" or old is None:
                causes += validation.validate_builtin(info.key, obj, old)
        if causes:
            raise errors.invalid(info.kind, info.group, name, causes)
        return warnings

    def enforce_policies(self, db: store.Store, registry: resources.Registry, info: resources.ResourceInfo,
                         req: PolicyRequest) -> list[str]:
        """Run the bound ValidatingAdmissionPolicies; returns warnings, raises StatusError on denial."""
        return admission_policies.enforce(db, registry, self._policies, info, req)

    def _custom(self, info: resources.ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None,
                field_validation: str, causes: list[errors.Cause]) -> list[str]:
        if info.schema is None:
            return []
        pruned = schema.prune(info.schema, obj)
        warnings: list[str] = []
        if pruned and field_validation == "Strict":
            raise errors.bad_request("strict decoding error: " + ", ".join(
                f'unknown field "{path}"' for path in pruned))
        if pruned and field_validation == "Warn":
            warnings += [f'unknown field "{path}"' for path in pruned]
        schema.apply_defaults(info.schema, obj)
        schema_causes = schema.validate(info.schema, obj)
        causes += schema_causes
        blocking = cel.blocking_cause(schema_causes)
        if blocking is not None:
            causes.append(blocking)  # as kube-apiserver: no CEL on objects with type or enum errors
        else:
            causes += cel.evaluate(self._rules.get((info.crd_name, info.version), info.schema), obj, old)
        return warnings
