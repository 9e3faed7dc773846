"""Label and field selectors: parse the query-string syntax, match objects, render the canonical form.

`LabelSelector` follows k8s.io/apimachinery `labels.Parse` (the query syntax is lexed and parsed by
`label_parser`, with kube-apiserver's error messages) and `metav1.LabelSelectorAsSelector`
(requirements sorted by key, `key in (a,b)` rendering, keys and values validated like label keys and
values; `key>N`/`key<N` compare integers). `FieldSelector` follows
`fields.ParseSelector` (`=`, `==`, `!=`, backslash escapes) plus the per-resource lists of selectable
fields the real apiserver accepts. Bad input raises a 400 `StatusError` naming the bad part and the
accepted forms. No I/O here.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from lwsconf.sim.apiserver.apimachinery import errors, label_parser

_NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_FORMS = ("accepted forms are key=value, key==value, key!=value, key in (v1,v2), key notin (v1,v2), "
          "key and !key, joined by ','")
_VALUE_RE = re.compile(r"(?:[^\\,=]|\\[\\,=])*")


class Op(enum.StrEnum):
    """A label requirement operator (`selection.Operator`)."""

    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term; `values` is sorted and de-duplicated for `in`/`notin`."""

    key: str
    op: Op
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key, "")
        if self.op in (Op.EQUALS, Op.IN):
            return has and value in self.values
        if self.op in (Op.NOT_EQUALS, Op.NOT_IN):
            return not has or value not in self.values
        if self.op in (Op.GREATER_THAN, Op.LESS_THAN):  # `Requirement.Matches`: both sides integers
            try:
                have, bound = int(value), int(self.values[0])
            except (ValueError, IndexError):
                return False
            return has and (have > bound if self.op is Op.GREATER_THAN else have < bound)
        return has if self.op is Op.EXISTS else not has

    def __str__(self) -> str:
        if self.op is Op.EXISTS:
            return self.key
        if self.op is Op.DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.op in (Op.IN, Op.NOT_IN):
            # A lone empty value renders as "(,)": "()" would not parse back (an empty set is rejected).
            inner = "," if self.values == ("",) else ",".join(self.values)
            return f"{self.key} {self.op.value} ({inner})"
        if self.op in (Op.GREATER_THAN, Op.LESS_THAN):
            return f"{self.key}{'>' if self.op is Op.GREATER_THAN else '<'}{self.values[0]}"
        return f"{self.key}{self.op.value}{self.values[0]}"


@dataclass(frozen=True)
class LabelSelector:
    """An AND of label requirements, sorted by key; no requirements selects everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the `labelSelector` query syntax (`a=b,c in (x,y),!d`).

        Args:
            text: the selector; "" selects everything.

        Returns:
            The selector, requirements sorted by key.

        Raises:
            StatusError: 400 naming the bad part and the accepted forms.
        """
        try:
            parsed = label_parser.parse(text)
        except label_parser.SelectorSyntaxError as exc:
            raise errors.bad_request(str(exc)) from None
        return cls._sorted(Requirement(p.key, Op.EQUALS if p.operator == "==" else Op(p.operator), p.values)
                           for p in parsed)

    @classmethod
    def from_dict(cls, sel: Mapping[str, Any]) -> LabelSelector:
        """Convert the object form (`matchLabels` + `matchExpressions`); `{}` selects everything.

        Raises:
            StatusError: 400 for a malformed selector, naming the bad field.
        """
        if not isinstance(sel, Mapping):
            raise errors.bad_request(f"a label selector must be an object with matchLabels and/or "
                                     f"matchExpressions, got {sel!r}")
        reqs: list[Requirement] = []
        match_labels = sel.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise errors.bad_request(f"matchLabels must be a map of label key to value, got {match_labels!r}")
        for key, value in match_labels.items():
            reqs.append(_requirement(_text(key, "matchLabels key"), Op.EQUALS,
                                     [_text(value, f"matchLabels[{key}]")]))
        expressions = sel.get("matchExpressions") or []
        if not isinstance(expressions, list):
            raise errors.bad_request(f"matchExpressions must be a list, got {expressions!r}")
        for i, expr in enumerate(expressions):
            reqs.append(_expression(expr, f"matchExpressions[{i}]"))
        return cls._sorted(reqs)

    @classmethod
    def _sorted(cls, reqs: Iterable[Requirement]) -> LabelSelector:
        return cls(tuple(sorted(reqs, key=lambda r: r.key)))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected (None counts as no labels)."""
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    def equality_terms(self) -> list[tuple[str, str]]:
        """The (key, value) pairs every match must carry, for picking candidates from a label index."""
        return [(r.key, r.values[0]) for r in self.requirements
                if r.op is Op.EQUALS or (r.op is Op.IN and len(r.values) == 1)]

    def is_empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_EXPRESSION_OPS = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS, "DoesNotExist": Op.DOES_NOT_EXIST}


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise errors.bad_request(f"label selector {where} must be a string, got {value!r}")
    return value


def _expression(expr: Any, where: str) -> Requirement:
    if not isinstance(expr, Mapping):
        raise errors.bad_request(f"label selector {where} must be an object with key, operator, values")
    key = _text(expr.get("key"), f"{where}.key")
    op = _EXPRESSION_OPS.get(str(expr.get("operator")))
    if op is None:
        raise errors.bad_request(f"label selector {where}.operator: {expr.get('operator')!r} is not a valid "
                                 f"label selector operator; use one of {', '.join(_EXPRESSION_OPS)}")
    values = expr.get("values") or []
    if not isinstance(values, list):
        raise errors.bad_request(f"label selector {where}.values must be a list of strings, got {values!r}")
    return _requirement(key, op, [_text(v, f"{where}.values") for v in values])


def _requirement(key: str, op: Op, values: list[str]) -> Requirement:
    """Validate like `labels.NewRequirement` and normalize the value set."""
    _check_key(key)
    if op in (Op.IN, Op.NOT_IN) and not values:
        _fail(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
    if op in (Op.EXISTS, Op.DOES_NOT_EXIST) and values:
        _fail(f"values set must be empty for exists and does not exist (key {key!r})")
    if op in (Op.EQUALS, Op.NOT_EQUALS) and len(values) != 1:
        _fail(f"exact-match compatibility requires one single value (key {key!r})")
    for i, value in enumerate(values):
        _check_value(key, i, value)
    return Requirement(key, op, tuple(sorted(set(values))))


def _check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    problem = _name_problem(name, "name part")
    if slash and not prefix:
        problem = "prefix part must be non-empty"
    elif slash and (len(prefix) > 253 or not _SUBDOMAIN_RE.fullmatch(prefix)):
        problem = ("prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters "
                   "(e.g. 'example.com')")
    if problem:
        _fail(f"key: Invalid value: {key!r}: {problem}")


def _name_problem(name: str, what: str) -> str | None:
    if not name:
        return f"{what} must be non-empty"
    if len(name) > 63:
        return f"{what} must be no more than 63 characters"
    if not _NAME_RE.fullmatch(name):
        return (f"{what} must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')")
    return None


def _check_value(key: str, index: int, value: str) -> None:
    if value and _name_problem(value, "a valid label value"):
        _fail(f"values[{index}][{key}]: Invalid value: {value!r}: a valid label must be an empty string or "
              "consist of at most 63 alphanumeric characters, '-', '_' or '.', and must start and end with "
              "an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345')")


def _fail(why: str) -> NoReturn:
    raise errors.bad_request(f"unable to parse requirement: {why}; {_FORMS}")


# --- field selectors -------------------------------------------------------------------------------

_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")

SUPPORTED_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset({"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                             "status.nominatedNodeName"}),
    ("", "events"): frozenset({f"involvedObject.{f}" for f in _INVOLVED}
                              | {"reason", "reportingComponent", "source", "type"}),
    ("events.k8s.io", "events"): frozenset({f"regarding.{f}" for f in _INVOLVED}
                                           | {"reason", "reportingController", "source", "type"}),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "namespaces"): frozenset({"status.phase"}),
    ("", "secrets"): frozenset({"type"}),
    ("", "replicationcontrollers"): frozenset({"status.replicas"}),
    ("batch", "jobs"): frozenset({"status.successful"}),
    ("certificates.k8s.io", "certificatesigningrequests"): frozenset({"spec.signerName"}),
}
"""Selectable fields beyond metadata.name/metadata.namespace, per (group, plural), from the field-label
conversion functions registered for each served version (apps/v1 ReplicaSet/StatefulSet/Deployment
register none, so only metadata.* works there)."""

_FIELD_ALIASES = {"source": "source.component"}
"""Selectable field name -> object path, where they differ (core Event `source` is `source.component`)."""

_FALSE_WHEN_ABSENT = frozenset({"spec.unschedulable", "spec.hostNetwork"})
"""Boolean fields the apiserver renders with strconv.FormatBool, so an absent field reads "false"."""


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string a field selector compares for `field` ("" when absent, booleans lowercase)."""
    cur: Any = obj
    for part in _FIELD_ALIASES.get(field, field).split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if cur is None and field in _FALSE_WHEN_ABSENT:
        return "false"
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, (str, int, float)):
        return str(cur)
    return ""


@dataclass(frozen=True)
class FieldTerm:
    """`field=value` (or `field!=value` when `negated`)."""

    field: str
    value: str
    negated: bool = False

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{'!=' if self.negated else '='}{escaped}"


@dataclass(frozen=True)
class FieldSelector:
    """An AND of field terms, in the order given; no terms selects everything."""

    terms: tuple[FieldTerm, ...] = ()

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse the `fieldSelector` query syntax (`metadata.name=x,status.phase!=Running`).

        Values may contain the escapes `\\,`, `\\=` and `\\\\`; empty terms are skipped.

        Raises:
            StatusError: 400 naming the bad term.
        """
        parts = [raw for raw in _split_unescaped(text) if raw]
        for raw in sorted(parts):  # fields.parseSelector sorts the terms, so the first bad one in that order is named
            if _split_field_term(raw) is None:
                # k8s.io/apimachinery pkg/fields/selector.go, word for word (lwsconf fidelity
                # selectors/selectors-fields/set-based-field)
                raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{raw}'")
        return cls(tuple(_field_term(text, raw) for raw in parts))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object is selected (missing fields compare as "")."""
        return all((field_value(obj, t.field) == t.value) != t.negated for t in self.terms)

    def equality_terms(self) -> list[tuple[str, str]]:
        """The (field, value) pairs every match must have, for picking candidates from an index."""
        return [(t.field, t.value) for t in self.terms if not t.negated]

    def is_empty(self) -> bool:
        return not self.terms

    def check_supported(self, kind_plural: str, group: str, extra: Iterable[str] = ()) -> None:
        """Reject fields the real apiserver cannot select on for this resource.

        Args:
            kind_plural: the resource (`pods`).
            group: its API group ("" for core).
            extra: more selectable fields (a CRD version's `selectableFields`).

        Raises:
            StatusError: 400 worded as kube-apiserver's field label conversions.
        """
        own = SUPPORTED_FIELDS.get((group, kind_plural), frozenset()) | set(extra)
        allowed = _META_FIELDS | own
        for term in self.terms:
            if term.field in allowed:
                continue
            if own:  # a kind with its own field label conversion (pods, nodes, events...)
                raise errors.bad_request(f"field label not supported: {term.field}")
            # apimachinery's DefaultMetaV1FieldSelectorConversion, word for word
            raise errors.bad_request(f'"{term.field}" is not a known field selector: only "metadata.name", '
                                     '"metadata.namespace"')

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)


def _split_unescaped(text: str) -> list[str]:
    parts: list[str] = []
    start, escaped = 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _split_field_term(raw: str) -> tuple[str, str, str] | None:
    """`splitTerm`: (field, operator, value) at the first operator, or None without one."""
    for i in range(len(raw)):
        for op in ("!=", "==", "="):
            if raw.startswith(op, i):
                return raw[:i], op, raw[i + len(op):]
    return None


def _field_term(text: str, raw: str) -> FieldTerm:
    split = _split_field_term(raw)
    field = split[0].strip() if split else ""
    if split is None or not field:
        raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{raw}'")
    return FieldTerm(field, _unescape(text, split[2]), split[1] == "!=")


def _unescape(text: str, value: str) -> str:
    match = _VALUE_RE.match(value)
    end = match.end() if match else 0
    if end < len(value):
        raise errors.bad_request(
            f"invalid field selector {text!r}: bad {value[end:end + 2]!r} in value {value!r}; in values "
            "write '\\,' for ',', '\\=' for '=' and '\\\\' for a backslash")
    return re.sub(r"\\(.)", r"\1", value)
