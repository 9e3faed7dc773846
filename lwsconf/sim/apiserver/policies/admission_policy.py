"""ValidatingAdmissionPolicy expressions: compiling a policy, and evaluating it for one request.

`compile_policy` compiles every CEL expression of a policy's spec once (the `PolicyCache` of
`admission_policies` keeps the result per policy resourceVersion) and lists the expressions that do
not compile as 422 causes, which is what kube-apiserver's policy validation answers on create and
update (kubernetes/kubernetes `pkg/apis/admissionregistration/validation/validation.go`,
`validateValidationExpression` -> `CompileCELExpression`: `compilation failed: <issues>` or
`must evaluate to bool but got <type>`). `evaluate` runs a compiled policy on one activation
(`object`, `oldObject`, `request`, `params`, `namespaceObject`) as the validating plugin does
(`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/validator.go`):

* `variables` are evaluated in order, each seeing the earlier ones; an expression that reads a
  variable whose evaluation failed fails with `composited variable "v" fails to evaluate: <error>`
  (kube-apiserver evaluates variables lazily, so only readers fail: `cel/composition.go`);
* `matchConditions`: any false -> the policy does not apply; errors (and no false) -> one error
  decision under `failurePolicy: Fail`, no match under `Ignore`
  (`webhook/matchconditions/matcher.go`);
* `validations`: true admits; any other value denies with `messageExpression` (a non-empty one-line
  string), else `message`, else `failed expression: <expression>`, and the validation's `reason`
  (default Invalid); an evaluation error becomes `expression '<e>' resulted in error: <error>`,
  a denial under `Fail` and nothing under `Ignore`.

CEL environment: `object`, `oldObject`, `request`, `namespaceObject` and (with `paramKind`) `params`
are dyn, `variables` is a map; the strings, optionals, `cel.bind`, lists and regex libraries of
`cel_ext`. kube-apiserver types `request`, `namespaceObject` and `variables`, so an expression whose
checked type is dyn is refused (as `must evaluate to bool but got dyn`) only when it reads none of
those three. Not supported: `authorizer` (an undeclared reference, so such a policy is refused), the
quantity/url/ip/cidr/semver/format libraries, `auditAnnotations` evaluation (validated, never run) and
the cost budget. MutatingAdmissionPolicies (`mutating_policy`) compile and evaluate their
variables and matchConditions with the same functions (`compile_expression`, `compile_named`,
`bind_variables`, `conditions_hold`, `run`). No I/O here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from cel_expr_python import cel

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.apimachinery import fields as f
from lwsconf.sim.apiserver.schema import cel_ext

REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
"""`supportedValidationPolicyReason`; the HTTP code of each is `REASON_CODES` (`reasonToCode`)."""
REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
MAX_MESSAGE_BYTES = 5000
"""`celconfig.MaxEvaluatedMessageExpressionSizeBytes`: longer evaluated messages are dropped."""
_TYPED_ROOTS = ("request", "namespaceObject", "variables")
_NO_SUCH_KEY = re.compile(r"^no such key: (\S+)$")


@dataclass(frozen=True)
class Expr:
    """One compiled expression; `program` is None (and `error` says why) when it did not compile."""

    text: str
    program: Any | None
    error: str = ""


@dataclass(frozen=True)
class Validation:
    expression: Expr
    message: str
    message_expression: Expr | None
    reason: str


@dataclass(frozen=True)
class CompiledPolicy:
    """What enforcement needs from a policy's spec; `problems` are the 422 causes of its validation."""

    name: str
    failure_policy: str
    match_constraints: dict[str, Any]
    param_kind: dict[str, Any] | None
    variables: tuple[tuple[str, Expr], ...]
    match_conditions: tuple[tuple[str, Expr], ...]
    validations: tuple[Validation, ...]
    problems: tuple[errors.Cause, ...]


@dataclass(frozen=True)
class Decision:
    """A failed validation (or an evaluation error under `failurePolicy: Fail`)."""

    message: str
    reason: str = "Invalid"
    error: bool = False


# ---- compiling (shared with the mutating policies of `mutating_policy`) ----


@cache
def _environment(has_params: bool) -> Any:
    return cel.NewEnv(variables=activation_types(has_params), extensions=cel_ext.extensions())


def activation_types(has_params: bool) -> dict[str, Any]:
    """The variables every admission policy expression may read (`params` only with a `paramKind`)."""
    T = cel.Type
    variables = {name: T.DYN for name in ("object", "oldObject", "request", "namespaceObject")}
    if has_params:
        variables["params"] = T.DYN
    variables["variables"] = T.Map(T.STRING, T.DYN)
    return variables


def compile_expression(env: Any, text: str, want: str, path: str, problems: list[errors.Cause], *,
                       also: tuple[str, ...] = ()) -> Expr:
    """Compile one expression in `env`; `want` is "bool", "string", "any" (a variable) or a type that
    `also` spells as cel-cpp names it in lower case (`list<jsonpatch>`)."""
    try:
        program = env.compile(text)
    except Exception as exc:  # cel-cpp reports parse and type-check errors as RuntimeError
        detail = f"compilation failed: {cel_ext.compile_error(str(exc))}"
        problems.append(f.invalid(path, text, detail))
        return Expr(text, None, detail)
    got = str(program.return_type().name()).lower()
    typed_dyn = got == "dyn" and cel_ext.mentions(text, _TYPED_ROOTS)
    if want != "any" and got != want and got not in also and not typed_dyn:
        detail = f"must evaluate to {want} but got {got}"
        problems.append(f.invalid(path, text, detail))
        return Expr(text, None, detail)
    return Expr(text, program)


def compile_named(env: Any, spec: dict[str, Any], field: str, want: str,
                  problems: list[errors.Cause]) -> tuple[tuple[str, Expr], ...]:
    """`spec.variables` ("any") or `spec.matchConditions` ("bool"): (name, compiled expression) pairs."""
    out = []
    for i, item in f.dicts(spec.get(field)):
        text = f.as_str(item.get("expression"))
        if text.strip():
            path = f.child(f.index(f"spec.{field}", i), "expression")
            out.append((f.as_str(item.get("name")), compile_expression(env, text, want, path, problems)))
    return tuple(out)


def compile_policy(policy: dict[str, Any]) -> CompiledPolicy:
    """Compile the CEL of a ValidatingAdmissionPolicy object (never raises; see `problems`)."""
    spec = f.as_dict(policy.get("spec"))
    param_kind = spec.get("paramKind") if isinstance(spec.get("paramKind"), dict) else None
    env = _environment(param_kind is not None)
    problems: list[errors.Cause] = []
    variables = compile_named(env, spec, "variables", "any", problems)
    conditions = compile_named(env, spec, "matchConditions", "bool", problems)
    validations = tuple(_validation(env, item, f.index("spec.validations", i), problems)
                        for i, item in f.dicts(spec.get("validations")) if f.as_str(item.get("expression")).strip())
    for i, item in f.dicts(spec.get("auditAnnotations")):
        if f.as_str(item.get("valueExpression")).strip():
            path = f.child(f.index("spec.auditAnnotations", i), "valueExpression")
            compile_expression(env, f.as_str(item["valueExpression"]), "any", path, problems)
    return CompiledPolicy(
        name=f.as_str(f.as_dict(policy.get("metadata")).get("name")),
        failure_policy=f.as_str(spec.get("failurePolicy")) or "Fail",
        match_constraints=f.as_dict(spec.get("matchConstraints")), param_kind=param_kind,
        variables=variables, match_conditions=conditions, validations=validations, problems=tuple(problems))


def _validation(env: Any, item: dict[str, Any], path: str, problems: list[errors.Cause]) -> Validation:
    expression = compile_expression(env, f.as_str(item["expression"]), "bool", f.child(path, "expression"), problems)
    message_expression = None
    if f.as_str(item.get("messageExpression")).strip():
        message_expression = compile_expression(env, f.as_str(item["messageExpression"]), "string",
                                                f.child(path, "messageExpression"), problems)
    return Validation(expression, f.as_str(item.get("message")).strip(), message_expression,
                      f.as_str(item.get("reason")) or "Invalid")


# ---- evaluating ----


def evaluate(policy: CompiledPolicy, activation: dict[str, Any]) -> list[Decision]:
    """The decisions that are not admissions, for one (binding, param) evaluation of the policy.

    Args:
        policy: the compiled policy.
        activation: `object`, `oldObject`, `request`, `namespaceObject` and `params` as CEL values
            (plain JSON-like Python values; None for null).
    """
    data = dict(activation)
    failed = bind_variables(policy.variables, data)
    fail = policy.failure_policy != "Ignore"
    matched, error = conditions_hold(policy.match_conditions, data, failed)
    if error is not None:
        return [Decision(error, error=True)] if fail else []
    if not matched:
        return []
    decisions: list[Decision] = []
    for validation in policy.validations:
        value, err = run(validation.expression, data, failed)
        if err is not None:
            if fail:
                decisions.append(Decision(err, error=True))
        elif value is not True:
            decisions.append(Decision(_message(validation, data, failed), validation.reason))
    return decisions


def conditions_hold(conditions: tuple[tuple[str, Expr], ...], data: dict[str, Any],
                    failed: dict[str, str]) -> tuple[bool, str | None]:
    """`matchConditions`: (False, None) if any is false; else (False, errors) if any failed; else (True, None)."""
    problems: list[str] = []
    for _, condition in conditions:
        value, err = run(condition, data, failed)
        if err is not None:
            problems.append(err)
        elif value is False:
            return False, None
    if problems:
        return False, problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
    return True, None


def bind_variables(variables: tuple[tuple[str, Expr], ...], data: dict[str, Any]) -> dict[str, str]:
    """Evaluate the variables into `data["variables"]`; returns the error of each one that failed."""
    values: dict[str, Any] = {}
    failed: dict[str, str] = {}
    data["variables"] = values
    for name, expr in variables:
        value, err = run(expr, data, failed, wrap=False)
        if err is None:
            values[name] = value
        elif expr.program is None:
            failed[name] = f'composited variable "{name}" fails to compile: {expr.error}'
        else:
            failed[name] = f'composited variable "{name}" fails to evaluate: {err}'
    return failed


def run(expr: Expr, data: dict[str, Any], failed: dict[str, str], *, wrap: bool = True) -> tuple[Any, str | None]:
    """Evaluate; an error comes back worded as `activation.go` (and `composition.go` for variables) words it."""
    if expr.program is None:
        return None, f"compilation error: {expr.error}"
    value, err = cel_ext.run(expr.program, data)
    if err is None:
        return value, None
    missing = _NO_SUCH_KEY.match(err)
    if missing and missing.group(1) in failed and cel_ext.mentions(expr.text, ("variables",)):
        err = failed[missing.group(1)]
    return None, f"expression '{expr.text}' resulted in error: {err}" if wrap else err


def _message(validation: Validation, data: dict[str, Any], failed: dict[str, str]) -> str:
    if validation.message_expression is not None:
        value, err = run(validation.message_expression, data, failed)
        if err is None and isinstance(value, str):
            text = value.strip()
            if text and "\n" not in text and len(text.encode()) <= MAX_MESSAGE_BYTES:
                return text
    return validation.message or f"failed expression: {validation.expression.text.strip()}"
