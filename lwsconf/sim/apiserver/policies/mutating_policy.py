"""MutatingAdmissionPolicy expressions: compiling a policy, and running its mutations on one object.

`compile_policy` compiles every CEL expression of an admissionregistration.k8s.io/v1
MutatingAdmissionPolicy once (cached per resourceVersion by `mutating_policies`) and lists what does not
compile as 422 causes, as kube-apiserver's `validateMutatingAdmissionPolicySpec` does on create and
update (kubernetes/kubernetes `pkg/apis/admissionregistration/validation/validation.go`). Variables and
matchConditions reuse the ValidatingAdmissionPolicy machinery of `admission_policy`
(`compile_named`, `bind_variables`, `conditions_hold`).

Mutations: only `patchType: JSONPatch` is supported. Its expression must return a list of `JSONPatch`
values (`list(JSONPatch)`: `[JSONPatch{op: "add", path: "/spec/subdomain", value: object.metadata.name}]`,
`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch/json_patch.go`). cel-expr-python
knows no Kubernetes types, so `JSONPatch` is a protobuf message built here at import time (fields `op`,
`path`, `from` strings and `value` a `google.protobuf.Value`, which is how cel-go hands the value to
JSON) and given to the environment through `cel.NewEnv(descriptor_pool=...)`; the environment also has
`jsonpatch.escapeKey` (`~` -> `~0`, `/` -> `~1`) for map keys in paths. `patchType: ApplyConfiguration`
needs typed object construction (`Object{spec: Object.spec{...}}`) from the matched type's schema, which
cel-expr-python cannot do without generating a message type per schema node: such a policy is refused
at create/update with a 422 cause (`policies.validation`), so the sim supports JSONPatch mutations only.

`apply_mutations` runs one invocation's mutations in order on the current object, each seeing the
result of the previous one, as `policy/mutating/dispatcher.go` does: a false matchCondition skips the
policy; a matchCondition error, an evaluation error, a patch that does not apply (`JSON Patch: <why>`)
or a result that is not a list of JSONPatch is an error of that mutation (the remaining mutations
still run); a failing `test` operation leaves the object unchanged without error (json_patch.go:
`ErrTestFailed`). Whether an error denies the request (`failurePolicy`) is the dispatcher's business.
Variables are evaluated once per invocation, before its first mutation (kube-apiserver evaluates them
lazily, so a variable first read by a later mutation sees the object as mutated so far). No I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, struct_pb2

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.patch import patch
from lwsconf.sim.apiserver.policies import admission_policy
from lwsconf.sim.apiserver.policies.admission_policy import Expr
from lwsconf.sim.apiserver.schema import cel_ext

JSON_PATCH = "JSONPatch"
APPLY_CONFIGURATION = "ApplyConfiguration"
PATCH_TYPES = (APPLY_CONFIGURATION, JSON_PATCH)
REINVOCATION_POLICIES = ("IfNeeded", "Never")
_LIST_OF_PATCHES = "list(JSONPatch)"
_ACCEPTED_RESULTS = ("list<jsonpatch>", "list<dyn>")
"""cel-cpp's names of the result types a JSONPatch expression may have (`[]` is a list of dyn)."""
_MAX_EXACT_FLOAT = 2**53


@dataclass(frozen=True)
class Mutation:
    patch_type: str
    expression: Expr
    """The JSONPatch expression; for ApplyConfiguration an Expr without program saying it is unsupported."""


@dataclass(frozen=True)
class CompiledMutatingPolicy:
    """What enforcement needs from a policy's spec; `problems` are the 422 causes of its validation."""

    name: str
    failure_policy: str
    reinvocation_policy: str
    match_constraints: dict[str, Any]
    param_kind: dict[str, Any] | None
    variables: tuple[tuple[str, Expr], ...]
    match_conditions: tuple[tuple[str, Expr], ...]
    mutations: tuple[Mutation, ...]
    problems: tuple[errors.Cause, ...]


# ---- the CEL environment: admission variables plus the JSONPatch type ----


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding `google.protobuf.Value` and our `JSONPatch` message."""
    pool = descriptor_pool.DescriptorPool()
    struct_file = descriptor_pb2.FileDescriptorProto()
    struct_pb2.DESCRIPTOR.CopyToProto(struct_file)
    pool.Add(struct_file)
    patch_file = descriptor_pb2.FileDescriptorProto(name="lwsconf/jsonpatch.proto", syntax="proto3",
                                                   dependency=[struct_file.name])
    message = patch_file.message_type.add(name=JSON_PATCH)
    string = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    for number, name in enumerate(("op", "path", "from"), start=1):
        message.field.add(name=name, number=number, type=string, label=optional, json_name=name)
    message.field.add(name="value", number=4, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                      type_name=".google.protobuf.Value", label=optional, json_name="value")
    pool.Add(patch_file)
    return pool


def _escape_key(key: str) -> str:
    """RFC 6901 escaping of one path segment (Kubernetes' `jsonpatch.escapeKey`)."""
    return key.replace("~", "~0").replace("/", "~1")


@cache
def environment(has_params: bool) -> Any:
    """The environment of every expression of a MutatingAdmissionPolicy (`params` only with a `paramKind`)."""
    T = cel.Type
    escape = cel.FunctionDecl("jsonpatch.escapeKey", [
        cel.Overload("k8s_jsonpatch_escape_key", T.STRING, [T.STRING], is_member=False, impl=_escape_key)])
    return cel.NewEnv(descriptor_pool=_pool(), variables=admission_policy.activation_types(has_params),
                      extensions=[*cel_ext.extensions(), cel.CelExtension("lwsconf.jsonpatch", [escape])])


# ---- compiling ----


def compile_policy(policy: dict[str, Any]) -> CompiledMutatingPolicy:
    """Compile the CEL of a MutatingAdmissionPolicy object (never raises; see `problems`)."""
    spec = f.as_dict(policy.get("spec"))
    param_kind = spec.get("paramKind") if isinstance(spec.get("paramKind"), dict) else None
    env = environment(param_kind is not None)
    problems: list[errors.Cause] = []
    variables = admission_policy.compile_named(env, spec, "variables", "any", problems)
    conditions = admission_policy.compile_named(env, spec, "matchConditions", "bool", problems)
    mutations = tuple(_mutation(env, item, f.index("spec.mutations", i), problems)
                      for i, item in f.dicts(spec.get("mutations")))
    return CompiledMutatingPolicy(
        name=f.as_str(f.as_dict(policy.get("metadata")).get("name")),
        failure_policy=f.as_str(spec.get("failurePolicy")) or "Fail",
        reinvocation_policy=f.as_str(spec.get("reinvocationPolicy")) or "Never",
        match_constraints=f.as_dict(spec.get("matchConstraints")), param_kind=param_kind,
        variables=variables, match_conditions=conditions, mutations=mutations, problems=tuple(problems))


def _mutation(env: Any, item: dict[str, Any], path: str, problems: list[errors.Cause]) -> Mutation:
    patch_type = f.as_str(item.get("patchType"))
    if patch_type != JSON_PATCH:
        why = f"patchType {patch_type or '(unset)'} is not supported by the lwsconf sim"
        return Mutation(patch_type, Expr("", None, why))
    text = f.as_str(f.as_dict(item.get("jsonPatch")).get("expression"))
    if not text.strip():
        return Mutation(patch_type, Expr(text, None, "jsonPatch.expression is required"))
    where = f.child(f.child(path, "jsonPatch"), "expression")
    # compiled and reported with surrounding white space trimmed, as kube-apiserver 1.37.2 answers it (lwsconf
    # fidelity policies/policy-mutating/map-bad-expression: "[JSONPatch{op: " is reported as "[JSONPatch{op:",
    # the syntax error's column counted in the trimmed text)
    return Mutation(patch_type, admission_policy.compile_expression(
        env, text.strip(), _LIST_OF_PATCHES, where, problems, also=_ACCEPTED_RESULTS))


# ---- running one invocation ----


@dataclass
class Result:
    """What one invocation did: the object after its mutations, whether it ran, and its errors."""

    obj: dict[str, Any]
    matched: bool = True
    errors: list[str] | None = None

    def fail(self, message: str) -> None:
        self.errors = [*(self.errors or []), message]


def apply_mutations(policy: CompiledMutatingPolicy, activation: dict[str, Any], obj: dict[str, Any], *,
                    to_cel: Callable[[dict[str, Any]], Any],
                    normalize: Callable[[dict[str, Any]], dict[str, Any]]) -> Result:
    """Run the policy's mutations in order on `obj` (never modified; `Result.obj` is the new object).

    Args:
        policy: the compiled policy.
        activation: `oldObject`, `request`, `namespaceObject`, `params` as CEL values (`object` is set here).
        obj: the object as the policy matched it (its served form).
        to_cel: the object as a CEL value.
        normalize: what kube-apiserver does to a patched object (decode, default); returns the new object.
    """
    data = {**activation, "object": to_cel(obj)}
    failed = admission_policy.bind_variables(policy.variables, data)
    holds, error = admission_policy.conditions_hold(policy.match_conditions, data, failed)
    result = Result(obj, matched=holds)
    if error is not None:
        result.fail(error)
        return result
    if not holds:
        return result
    for mutation in policy.mutations:
        data["object"] = to_cel(result.obj)
        ops, err = _operations(mutation, data, failed)
        if err is None:
            err = _patched(result, ops, normalize)
        if err is not None:
            result.fail(err)
    return result


def _operations(mutation: Mutation, data: dict[str, Any], failed: dict[str, str]) -> tuple[list[Any], str | None]:
    """The RFC 6902 operations a JSONPatch expression evaluates to, or its error."""
    value, err = admission_policy.run(mutation.expression, data, failed)
    if err is not None:
        return [], err
    if not isinstance(value, list):
        return [], "type mismatch: JSONPatchType.expression should evaluate to array"
    ops = []
    for item in value:
        descriptor = getattr(item, "DESCRIPTOR", None)
        if descriptor is None or descriptor.full_name != JSON_PATCH:
            return [], ("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, "
                        f"got element of {type(item).__name__}")
        op: dict[str, Any] = {"op": item.op, "path": item.path}
        if getattr(item, "from"):
            op["from"] = getattr(item, "from")
        if item.HasField("value"):
            op["value"] = _json_value(json_format.MessageToDict(item.value))
        ops.append(op)
    return ops, None


def _json_value(value: Any) -> Any:
    """A `google.protobuf.Value` as JSON decodes it: numbers without a fraction are integers."""
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= _MAX_EXACT_FLOAT:
        return int(value)
    return value


def _patched(result: Result, ops: list[Any], normalize: Callable[[dict[str, Any]], dict[str, Any]]) -> str | None:
    """Apply the operations to `result.obj`; returns the error text, if any."""
    if not ops:
        return None
    try:
        patched = patch.json_patch(result.obj, ops)
    except patch.PatchTestFailed:
        return None  # a failing `test` operation means: do not apply this patch
    except errors.StatusError as exc:
        detail = exc.causes[0].message if exc.causes else exc.message
        return f"JSON Patch: {detail}"
    result.obj = normalize(patched)
    return None
