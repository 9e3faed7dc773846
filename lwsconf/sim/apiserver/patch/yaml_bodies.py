"""Request bodies in YAML read as kube-apiserver reads them (sigs.k8s.io/yaml over go-yaml v2), and made JSON.

`KubeYamlLoader` resolves plain scalars as go-yaml v2 does, `decode_yaml` reads an apply body, `go_yaml_error`
words PyYAML's errors as go-yaml's, `jsonable` turns what YAML produced into JSON values (or a 400). Kept
apart from `apply` (the merge and field ownership): the HTTP layer decodes YAML objects with it too. No I/O.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

import yaml

from lwsconf.sim.apiserver.apimachinery import errors, objects


class KubeYamlLoader(yaml.SafeLoader):
    """SafeLoader that reads plain scalars as sigs.k8s.io/yaml's go-yaml v2 does: unquoted timestamps stay
    strings, and `y`, `Y`, `n`, `N` are booleans besides YAML 1.1's yes/no/on/off/true/false (go-yaml v2
    resolve.go's table; so `name: y` is `true`, which kube-apiserver then refuses as "cannot unmarshal bool
    into Go struct field ObjectMeta.metadata.name of type string": lwsconf fidelity requests/bad-requests/yaml-body)."""

    bool_values = {**yaml.SafeLoader.bool_values, "y": True, "n": False}


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
KubeYamlLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def decode_yaml(body: bytes) -> dict[str, Any]:
    """Parse an apply body (JSON, as kubectl and the clients send it, or YAML) into one object.

    Raises:
        StatusError: 400 when the body is not one YAML/JSON map of JSON-compatible values.
    """
    try:
        doc = json.loads(body, parse_constant=str)
    except (ValueError, RecursionError):
        objects.check_yaml_depth(body)
        try:
            doc = yaml.load(body, Loader=KubeYamlLoader)  # a SafeLoader subclass: no arbitrary objects
        except yaml.composer.ComposerError as exc:  # several documents: the sim's own words
            raise errors.bad_request(f"the body of the request was not valid YAML or JSON: {exc}") from None
        except yaml.YAMLError as exc:
            # kube-apiserver turns the YAML into JSON first (handlers/patch.go validateAndTranscodePatch:
            # "error encoding patch: " + go-yaml's error; lwsconf fidelity apply/apply-configmap/not-yaml)
            raise errors.bad_request(f"error encoding patch: {go_yaml_error(exc)}") from None
        except RecursionError as exc:
            raise errors.bad_request(f"the body of the request was not valid YAML or JSON: {exc}") from None
    objects.check_size(doc)  # before jsonable() recurses over it
    if not isinstance(doc, dict):
        what = "empty" if doc is None else f"a {type(doc).__name__}"
        raise errors.bad_request(f"an apply patch must be one object (a YAML or JSON map), but the body was "
                                 f"{what}; send the full configuration you want to own")
    return jsonable(doc, "")  # type: ignore[no-any-return]


_GO_YAML_PROBLEMS = (
    # (PyYAML's context, the start of its problem) -> libyaml's problem, which go-yaml v2 (parserc.go,
    # scannerc.go) reports; PyYAML words the same parser states its own way
    ("while parsing a flow sequence", "expected ',' or ']'", "did not find expected ',' or ']'"),
    ("while parsing a flow mapping", "expected ',' or '}'", "did not find expected ',' or '}'"),
    ("while parsing a block mapping", "expected <block end>", "did not find expected key"),
    ("while parsing a block collection", "expected <block end>", "did not find expected '-' indicator"),
    ("", "expected the node content", "did not find expected node content"),
    ("", "mapping values are not allowed", "mapping values are not allowed in this context"),
    ("", "found character", "found character that cannot start any token"),
    ("", "could not find expected ':'", "could not find expected ':'"),
    ("", "found unexpected end of stream", "found unexpected end of stream"),
    ("", "found undefined tag handle", "found undefined tag handle"),
)


def go_yaml_error(exc: yaml.YAMLError) -> str:
    """PyYAML's error as go-yaml v2 words it: `yaml: line N: <libyaml's problem>` (decode.go parser.fail: the
    problem mark's 0-based line for a parser error, one more for a scanner error, else the context mark's;
    no line when it is 0). A problem without a known libyaml wording keeps PyYAML's."""
    context = str(getattr(exc, "context", "") or "")
    problem = str(getattr(exc, "problem", "") or "")
    words = next((go for ctx, start, go in _GO_YAML_PROBLEMS
                  if (not ctx or context.startswith(ctx)) and problem.startswith(start)), problem or str(exc))
    problem_mark, context_mark = getattr(exc, "problem_mark", None), getattr(exc, "context_mark", None)
    line = 0
    if problem_mark is not None and problem_mark.line:
        line = problem_mark.line + (1 if isinstance(exc, yaml.scanner.ScannerError) else 0)
    elif context_mark is not None and context_mark.line:
        line = context_mark.line
    return f"yaml: line {line}: {words}" if line else f"yaml: {words}"


def jsonable(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, bool):
                key = "true" if key else "false"
            elif isinstance(key, (int, float)) or key is None:
                key = "null" if key is None else str(key)
            elif not isinstance(key, str):
                raise errors.bad_request(f"the body at {where or '<root>'}: map key {key!r} is not a string")
            out[key] = jsonable(item, f"{where}.{key}")
        return out
    if isinstance(value, list):
        return [jsonable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise errors.bad_request(f"the body at {where}: {value} is not a JSON number")
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise errors.bad_request(f"the body at {where}: a {type(value).__name__} value cannot be expressed in "
                             "JSON; use a string")
