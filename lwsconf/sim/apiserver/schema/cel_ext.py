"""The CEL environment Kubernetes gives `x-kubernetes-validations` rules, built on cel-expr-python.

cel-expr-python (the official cel-cpp runtime) brings the standard library (`size`, `has`, `matches`
with RE2 search semantics, `int()`/`string()`/`type()` conversions, the `all`/`exists`/`exists_one`/
`filter`/`map` macros), the strings extension (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`,
`upperAscii`, `replace`, `split`, `substring`, `trim`, `join`, ...), optionals (`self.?x.orValue(..)`)
and `cel.bind`. This module adds what Kubernetes registers on top and cel-cpp lacks, as Python
callbacks: the Kubernetes lists library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`) and
the regex library (`find`, `findAll`). It also maps a schema node to the CEL type of `self` and words
runtime errors as cel-go does. Pure: no I/O, no state beyond a cache of environments.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
OLD_SELF_PRESENT = "__lwsconf_hasOldSelf"
OLD_SELF_VALUE = "__lwsconf_oldSelf"


# ---- equality and ordering with CEL's rules (bool is not a number; ints and doubles compare) ----


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return type(v).__name__


def cel_equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality on plain Python values (`1 == 1.0`, `true != 1`)."""
    if _kind(a) != _kind(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(cel_equal(v, b[k]) for k, v in a.items())
    return bool(a == b)


def _comparable(xs: list[Any]) -> list[Any]:
    kinds = {_kind(x) for x in xs}
    if len(kinds) > 1 or kinds & {"list", "dict", "NoneType"}:
        raise TypeError("no such overload")
    return xs


# ---- Kubernetes lists library ----


def _is_sorted(xs: list[Any]) -> bool:
    xs = _comparable(xs)
    return all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1))


def _sum(xs: list[Any]) -> Any:
    if not xs:
        return 0
    if {_kind(x) for x in xs} != {"number"} or len({type(x) for x in xs}) > 1:
        raise TypeError("no such overload")
    total = sum(xs)
    if isinstance(total, int) and not INT64_MIN <= total <= INT64_MAX:
        raise OverflowError("integer overflow")
    return total


def _min(xs: list[Any]) -> Any:
    if not xs:
        raise ValueError("min called on empty list")
    return min(_comparable(xs))


def _max(xs: list[Any]) -> Any:
    if not xs:
        raise ValueError("max called on empty list")
    return max(_comparable(xs))


def _index_of(xs: list[Any], v: Any) -> int:
    return next((i for i, x in enumerate(xs) if cel_equal(x, v)), -1)


def _last_index_of(xs: list[Any], v: Any) -> int:
    return next((i for i in range(len(xs) - 1, -1, -1) if cel_equal(xs[i], v)), -1)


# ---- Kubernetes regex library (Python `re` stands in for RE2) ----


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if limit < 0 else found[:limit]


def _overload(oid: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(oid, result, params, is_member=True, impl=impl)


@cache
def _kubernetes_library() -> Any:
    T = cel.Type
    any_list = T.List(T.DYN)
    decls = [
        cel.FunctionDecl("isSorted", [_overload("k8s_list_is_sorted", T.BOOL, [any_list], _is_sorted)]),
        cel.FunctionDecl("sum", [_overload("k8s_list_sum", T.DYN, [any_list], _sum)]),
        cel.FunctionDecl("min", [_overload("k8s_list_min", T.DYN, [any_list], _min)]),
        cel.FunctionDecl("max", [_overload("k8s_list_max", T.DYN, [any_list], _max)]),
        cel.FunctionDecl("indexOf", [_overload("k8s_list_index_of", T.INT, [any_list, T.DYN], _index_of)]),
        cel.FunctionDecl(
            "lastIndexOf", [_overload("k8s_list_last_index_of", T.INT, [any_list, T.DYN], _last_index_of)]
        ),
        cel.FunctionDecl("find", [_overload("k8s_regex_find", T.STRING, [T.STRING, T.STRING], _find)]),
        cel.FunctionDecl(
            "findAll",
            [
                _overload("k8s_regex_find_all", T.List(T.STRING), [T.STRING, T.STRING], _find_all),
                _overload("k8s_regex_find_all_limit", T.List(T.STRING), [T.STRING, T.STRING, T.INT], _find_all),
            ],
        ),
    ]
    # As an extension loaded after ext_strings, `indexOf`/`lastIndexOf` gain list overloads instead of
    # clashing with the string ones ("declared multiple times").
    return cel.CelExtension("lwsconf.kubernetes", decls)


# ---- environments ----


def self_type(node: dict[str, Any]) -> Any:
    """The CEL type of `self` at a schema node (dyn where Kubernetes would use an object type)."""
    T = cel.Type
    if (
        node.get("nullable")
        or node.get("x-kubernetes-int-or-string")
        or node.get("x-kubernetes-preserve-unknown-fields")
    ):
        return T.DYN
    t = node.get("type")
    simple = {"integer": T.INT, "number": T.DOUBLE, "boolean": T.BOOL}
    if t in simple:
        return simple[t]
    if t == "string":
        return T.DYN if node.get("format") in ("date-time", "date", "duration", "byte") else T.STRING
    if t == "array" and isinstance(node.get("items"), dict):
        return T.List(self_type(node["items"]))
    if t == "object" and isinstance(node.get("additionalProperties"), dict):
        return T.Map(T.STRING, self_type(node["additionalProperties"]))
    if t == "object":
        return T.Map(T.STRING, T.DYN)
    return T.DYN


_ENVS: dict[tuple[str, str], Any] = {}


def environment(node: dict[str, Any], *, old_self: str = "typed") -> Any:
    """A (cached) environment declaring `self` with the node's type, and `oldSelf`.

    Args:
        node: the schema node the rule sits on.
        old_self: "typed" (`oldSelf` has `self`'s type), "dyn" (for checking an `optionalOldSelf` rule as
            written) or "optional" (the old value under internal names, for `wrap_optional_old_self`).
    """
    t = self_type(node)
    key = (str(t.name()), old_self)
    env = _ENVS.get(key)
    if env is None:
        variables = {"self": t, "oldSelf": cel.Type.DYN if old_self == "dyn" else t}
        if old_self == "optional":
            variables = {"self": t, OLD_SELF_VALUE: t, OLD_SELF_PRESENT: cel.Type.BOOL}
        env = _ENVS[key] = cel.NewEnv(variables=variables, extensions=extensions())
    return env


def extensions() -> list[Any]:
    """The libraries every CEL environment here loads: strings, optionals, `cel.bind`, Kubernetes lists/regex."""
    return [ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_bindings.ExtBindings(), _kubernetes_library()]


_STRING_LITERALS = re.compile(r"""'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*\"""", re.S)


def mentions(expression: str, names: tuple[str, ...]) -> bool:
    """Whether an expression uses one of these identifiers outside its string literals."""
    code = _STRING_LITERALS.sub("''", expression)
    return any(re.search(rf"\b{re.escape(name)}\b", code) for name in names)


def wrap_optional_old_self(expression: str) -> str:
    """Rewrite a rule so that `oldSelf` is `optional.of(old)` or `optional.none()`."""
    return (
        f"cel.bind(oldSelf, {OLD_SELF_PRESENT} ? optional.of({OLD_SELF_VALUE}) : optional.none(), "
        f"({expression}))"
    )


# ---- values ----

def to_cel(node: dict[str, Any] | None, value: Any, *, embedded: bool) -> Any:
    """A decoded JSON value as CEL sees it, guided by its schema node.

    `number` fields become doubles, integers outside int64 become doubles (as JSON decoding does), and
    `metadata` of the root (`embedded=True`) or an embedded resource keeps only `name`/`generateName`.
    """
    node = node or {}
    if isinstance(value, dict):
        props = node.get("properties") or {}
        addl = node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None
        out: dict[str, Any] = {}
        for k, v in value.items():
            if embedded and k == "metadata" and isinstance(v, dict):
                out[k] = {m: v[m] for m in ("name", "generateName") if m in v}
                continue
            sub = props.get(k, addl)
            out[k] = to_cel(sub, v, embedded=bool(sub and sub.get("x-kubernetes-embedded-resource")))
        return out
    if isinstance(value, list):
        items = node.get("items") if isinstance(node.get("items"), dict) else None
        embedded_items = bool(items and items.get("x-kubernetes-embedded-resource"))
        return [to_cel(items, v, embedded=embedded_items) for v in value]
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and (node.get("type") == "number" or not INT64_MIN <= value <= INT64_MAX):
        return float(value)
    return value


# ---- results and errors ----

_ERROR_REWRITES = (
    (re.compile(r'Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"No matching overloads found : (.*)$"), r"no such overload: \1"),
    (re.compile(r"Index error: index=(-?\d+) size=\d+$"), r"index out of bounds: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
)


def explain(message: str) -> str:
    """cel-cpp's status text (`NOT_FOUND: Key not found in map : "x"`) in cel-go's words (`no such key: x`)."""
    text = re.sub(r"^[A-Z_]+: ", "", message.strip())
    text = re.sub(r"\s*\[[A-Z_]+\]$", "", text)
    for pattern, repl in _ERROR_REWRITES:
        if pattern.search(text):
            return pattern.sub(repl, text)
    return text


def run(program: Any, data: dict[str, Any]) -> tuple[Any, str | None]:
    """Evaluate a compiled expression; `(value, None)` on success, `(None, error text)` otherwise."""
    try:
        result = program.eval(data=data)
    except Exception as exc:  # cel-cpp raises for activation problems (e.g. a value of the wrong type)
        return None, explain(str(exc))
    if result.type() == cel.Type.ERROR:
        return None, explain(str(result.plain_value()))
    return result.plain_value(), None


def compile_error(message: str) -> str:
    """A compiler message without cel-cpp's status decorations (keeps the `ERROR: <input>:1:9:` part)."""
    return re.sub(r"\s*\[[A-Z_]+\]$", "", re.sub(r"^[A-Z_]+: ", "", message.strip()))


def returns(program: Any, *kinds: str) -> bool:
    """Whether the checked result type is one of `kinds` (type names such as "BOOL") or dyn."""
    name = str(program.return_type().name())
    return name in kinds or name == "DYN"
