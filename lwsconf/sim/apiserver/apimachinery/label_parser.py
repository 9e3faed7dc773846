"""The `labelSelector` query syntax, lexed and parsed the way kube-apiserver does it, errors included.

Why a token-level parser rather than patterns per term: kube-apiserver's error for a bad selector
names the token where parsing stopped ("found '>', expected: identifier", "found '==', expected: !,
identifier, or 'end of string'"), and clients and people see those words; the lwsconf fidelity corpus
(selectors/selectors-labels/*, watch/watch-errors/bad-label-selector, deletion/delete-collection/
deletecollection-bad-selector) compares them with kube-apiserver 1.37.2. The behaviour follows
k8s.io/apimachinery pkg/labels/selector.go (`Lexer`, `Parser.parse`, `parseRequirement`,
`parseValues`, `parseIdentifiersList`, `parseExactValue`, `NewRequirement`) and the validation
messages of pkg/util/validation (`IsQualifiedName`, `IsValidLabelValue`, `RegexError`):

* tokens: identifiers (anything but whitespace and `=!(),<>`), the keywords `in`/`notin` (read as
  identifiers where a value may stand), and the longest operator the symbol run starts with;
* `key in ()` is `key in ("")`, and `(,`/`,,`/`,)` add the empty value;
* a bad key is reported with the parser's nil field path (`<nil>: Invalid value: ...`), a bad value as
  `values[i][key]`; several problems of one requirement are joined as an aggregate (`[a, b]`).

No I/O here; `selectors.LabelSelector.parse` turns a `SelectorSyntaxError` into a 400.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass


class SelectorSyntaxError(ValueError):
    """The selector does not parse; the message is kube-apiserver's, word for word."""


class Tok(enum.Enum):
    ERROR = enum.auto()
    END = enum.auto()
    CLOSE = enum.auto()
    COMMA = enum.auto()
    NOT = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    EQUALS = enum.auto()
    GREATER = enum.auto()
    IDENTIFIER = enum.auto()
    IN = enum.auto()
    LESS = enum.auto()
    NOT_EQUALS = enum.auto()
    NOT_IN = enum.auto()
    OPEN = enum.auto()


_KEYWORDS = {")": Tok.CLOSE, ",": Tok.COMMA, "!": Tok.NOT, "==": Tok.DOUBLE_EQUALS, "=": Tok.EQUALS,
             ">": Tok.GREATER, "in": Tok.IN, "<": Tok.LESS, "!=": Tok.NOT_EQUALS, "notin": Tok.NOT_IN,
             "(": Tok.OPEN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")

OPERATORS = {Tok.IN: "in", Tok.NOT_IN: "notin", Tok.EQUALS: "=", Tok.DOUBLE_EQUALS: "==", Tok.NOT_EQUALS: "!=",
             Tok.GREATER: "gt", Tok.LESS: "lt"}
"""Binary operator tokens and the `selection.Operator` each stands for."""
_BINARY = "in, notin, =, ==, !=, gt, lt"


def lex(text: str) -> list[tuple[Tok, str]]:
    """Every token up to and including END (`Parser.scan`)."""
    out: list[tuple[Tok, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            out.append((Tok.END, ""))
            return out
        if text[i] in _SPECIAL:
            buffer, last = "", None
            while i < n and text[i] in _SPECIAL:
                buffer += text[i]
                if buffer in _KEYWORDS:
                    last = (_KEYWORDS[buffer], buffer)
                elif last is not None:
                    break
                i += 1
            out.append(last if last is not None else (Tok.ERROR, f"error expected: keyword found '{buffer}'"))
            continue
        start = i
        while i < n and text[i] not in _WHITESPACE and text[i] not in _SPECIAL:
            i += 1
        word = text[start:i]
        out.append((_KEYWORDS.get(word, Tok.IDENTIFIER), word))


@dataclass(frozen=True)
class Parsed:
    """One requirement as parsed: key, `selection.Operator` name, and the value set (sorted)."""

    key: str
    operator: str
    values: tuple[str, ...]


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[Tok, str]:
        tok, lit = self.items[self.position]
        if values and tok in (Tok.IN, Tok.NOT_IN):
            tok = Tok.IDENTIFIER
        return tok, lit

    def consume(self, values: bool = True) -> tuple[Tok, str]:
        tok, lit = self.lookahead(values)
        self.position = min(self.position + 1, len(self.items) - 1)
        return tok, lit

    def parse(self) -> list[Parsed]:
        requirements: list[Parsed] = []
        while True:
            tok, lit = self.lookahead()
            if tok in (Tok.IDENTIFIER, Tok.NOT):
                try:
                    requirements.append(self.requirement())
                except SelectorSyntaxError as exc:
                    raise SelectorSyntaxError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.consume()
                if tok is Tok.END:
                    return requirements
                if tok is not Tok.COMMA:
                    raise SelectorSyntaxError(f"found '{lit}', expected: ',' or 'end of string'")
                tok2, lit2 = self.lookahead()
                if tok2 not in (Tok.IDENTIFIER, Tok.NOT):
                    raise SelectorSyntaxError(f"found '{lit2}', expected: identifier after ','")
            elif tok is Tok.END:
                return requirements
            else:
                raise SelectorSyntaxError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Parsed:
        operator = ""
        tok, lit = self.consume()
        if tok is Tok.NOT:
            operator = "!"
            tok, lit = self.consume()
        if tok is not Tok.IDENTIFIER:
            raise SelectorSyntaxError(f"found '{lit}', expected: identifier")
        key_problems = qualified_name_problems(lit)
        if key_problems:
            raise SelectorSyntaxError(f"<nil>: Invalid value: {json.dumps(lit)}: {'; '.join(key_problems)}")
        key = lit
        if operator == "!":  # `!key=x` ends the requirement at `!key`; parse() then finds the `=`
            return new_requirement(key, "!", [])
        if self.lookahead()[0] in (Tok.END, Tok.COMMA):
            return new_requirement(key, "exists", [])
        tok, lit = self.consume(values=False)
        if tok not in OPERATORS:
            raise SelectorSyntaxError(f"found '{lit}', expected: {_BINARY}")
        operator = OPERATORS[tok]
        values = self.set_values() if tok in (Tok.IN, Tok.NOT_IN) else self.exact_value()
        return new_requirement(key, operator, sorted(values))

    def set_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok is not Tok.OPEN:
            raise SelectorSyntaxError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (Tok.IDENTIFIER, Tok.COMMA):
            values = self.identifiers()
            if self.consume()[0] is not Tok.CLOSE:
                raise SelectorSyntaxError(f"found '{lit}', expected: ')'")
            return values
        if tok is Tok.CLOSE:
            self.consume()
            return {""}
        raise SelectorSyntaxError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok is Tok.IDENTIFIER:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 is Tok.COMMA:
                    continue
                if tok2 is Tok.CLOSE:
                    return values
                raise SelectorSyntaxError(f"found '{lit2}', expected: ',' or ')'")
            if tok is Tok.COMMA:
                if not values:
                    values.add("")
                tok2, _ = self.lookahead()
                if tok2 is Tok.CLOSE:
                    values.add("")
                    return values
                if tok2 is Tok.COMMA:
                    self.consume()
                    values.add("")
                continue
            raise SelectorSyntaxError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in (Tok.END, Tok.COMMA):
            return {""}
        tok, lit = self.consume()
        if tok is Tok.IDENTIFIER:
            return {lit}
        raise SelectorSyntaxError(f"found '{lit}', expected: identifier")


def parse(text: str) -> list[Parsed]:
    """The requirements of a `labelSelector`, in the order written.

    Raises:
        SelectorSyntaxError: with kube-apiserver's message.
    """
    return _Parser(text).parse()


def new_requirement(key: str, operator: str, values: list[str]) -> Parsed:
    """`NewRequirement`'s checks; several problems read as an aggregate."""
    problems: list[str] = []
    key_problems = qualified_name_problems(key)
    if key_problems:
        problems.append(f"key: Invalid value: {json.dumps(key)}: {'; '.join(key_problems)}")
    if operator in ("in", "notin") and not values:
        problems.append("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty")
    elif operator in ("=", "==", "!=") and len(values) != 1:
        problems.append("values: Invalid value: " + _go_strings(values)
                        + ": exact-match compatibility requires one single value")
    elif operator in ("gt", "lt"):
        if len(values) != 1:
            problems.append("values: Invalid value: " + _go_strings(values)
                            + ": for 'Gt', 'Lt' operators, exactly one value is required")
        for i, value in enumerate(values):
            if not re.fullmatch(r"[+-]?[0-9]+", value):
                problems.append(f"values[{i}]: Invalid value: {json.dumps(value)}: for 'Gt', 'Lt' operators, "
                                "the value must be an integer")
    for i, value in enumerate(values):
        value_problems = label_value_problems(value)
        if value_problems:
            problems.append(f"values[{i}][{key}]: Invalid value: {json.dumps(value)}: {'; '.join(value_problems)}")
    if problems:
        unique = list(dict.fromkeys(problems))
        raise SelectorSyntaxError(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
    return Parsed(key, operator, tuple(values))


def _go_strings(values: list[str]) -> str:
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


# --- pkg/util/validation messages -----------------------------------------------------------------

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                       "alphanumeric character")
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """`validation.RegexError`, double spaces before each "or" included."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def qualified_name_problems(value: str) -> list[str]:
    """`validation.IsQualifiedName`."""
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                   "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    problems: list[str] = []
    if len(parts) == 2 and not prefix:
        problems.append("prefix part must be non-empty")
    elif len(parts) == 2:
        if len(prefix) > 253:
            problems.append("prefix part must be no more than 253 characters")
        if not re.fullmatch(_DNS1123_SUBDOMAIN_FMT, prefix):
            problems.append("prefix part " + regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not re.fullmatch(_QUALIFIED_NAME_FMT, name):
        problems.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                   "123-abc"))
    return problems


def label_value_problems(value: str) -> list[str]:
    """`validation.IsValidLabelValue`."""
    problems: list[str] = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not re.fullmatch(_LABEL_VALUE_FMT, value):
        problems.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return problems
