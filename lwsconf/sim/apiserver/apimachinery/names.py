"""Format rules for names, keys and values, returning kube-apiserver's own problem strings.

Each rule returns a list of problems (empty means valid), worded like
`k8s.io/apimachinery/pkg/util/validation` and `.../api/validate/content`, because callers turn each
problem into one `Invalid value` cause and users compare those messages with a real cluster's. The
regular expressions are the documented Kubernetes formats. No I/O here.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

LABEL_MAX = 63
SUBDOMAIN_MAX = 253

_DNS1123_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL = re.compile(f"^{DNS1035_LABEL_FMT}$")
_LABEL_KEY = re.compile(f"^{LABEL_KEY_FMT}$")
_LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FMT}$")
_ENV_VAR_NAME = re.compile(f"^{ENV_VAR_NAME_FMT}$")
_CONFIG_MAP_KEY = re.compile(f"^{CONFIG_MAP_KEY_FMT}$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_PERCENT = re.compile("^[0-9]+%$")

_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
              "and must start and end with an alphanumeric character")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character")
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                  "and must start and end with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_ENV_MSG = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
            "and must not start with a digit")
_RELAXED_ENV_MSG = "a valid environment variable name must consist only of printable ASCII characters other than '='"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """`RegexError`: the message, the examples and the regex, in Kubernetes' exact punctuation."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)  # "'a',  or 'b', ": each example ends in ", "
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: most object names, node names, label-key prefixes."""
    errs = [max_len_error(SUBDOMAIN_MAX)] if len(value) > SUBDOMAIN_MAX else []
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_label(value: str) -> list[str]:
    """RFC 1123 label: namespace and StatefulSet names, container and port names."""
    errs = [max_len_error(LABEL_MAX)] if len(value) > LABEL_MAX else []
    if not _DNS1123_LABEL.match(value):
        if _DNS1123_SUBDOMAIN.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1035_label(value: str) -> list[str]:
    """RFC 1035 label: Service names (they become DNS names that must start with a letter)."""
    errs = [max_len_error(LABEL_MAX)] if len(value) > LABEL_MAX else []
    if not _DNS1035_LABEL.match(value):
        errs.append(regex_error(_DNS1035_MSG, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def qualified_name(value: str) -> list[str]:
    """Label key / annotation key / finalizer: optional DNS-subdomain prefix, '/', and a 63-char name."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + msg for msg in dns1123_subdomain(prefix)]
    else:
        return ["a valid label key " + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > LABEL_MAX:
        errs.append("name part " + max_len_error(LABEL_MAX))
    if not _LABEL_KEY.match(name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value(value: str) -> list[str]:
    errs = [max_len_error(LABEL_MAX)] if len(value) > LABEL_MAX else []
    if not _LABEL_VALUE.match(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def env_var_name(value: str) -> list[str]:
    """The classic (pre-1.34) environment variable name rule, `[-._a-zA-Z][-._a-zA-Z0-9]*`."""
    errs = []
    if not _ENV_VAR_NAME.match(value):
        errs.append(regex_error(_ENV_MSG, ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _chdir_prefix(value)


def relaxed_env_var_name(value: str) -> list[str]:
    """The rule since RelaxedEnvironmentVariableValidation went GA (1.34): printable ASCII except '='."""
    if not value:
        return ["environment variable name must be non-empty"]
    if any(ord(ch) > 126 or ord(ch) < 32 or ch == "=" for ch in value):
        return [_RELAXED_ENV_MSG]
    return []


def config_map_key(value: str) -> list[str]:
    """Keys of ConfigMap/Secret `data` (they become file names in volumes)."""
    errs = [max_len_error(SUBDOMAIN_MAX)] if len(value) > SUBDOMAIN_MAX else []
    if not _CONFIG_MAP_KEY.match(value):
        errs.append(regex_error(_CONFIG_KEY_MSG, CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _chdir_prefix(value)


def port_name(value: str) -> list[str]:
    """IANA_SVC_NAME: at most 15 chars of [-a-z0-9] with a letter, no leading/trailing/double hyphen."""
    errs = [max_len_error(15)] if len(value) > 15 else []
    if not _PORT_NAME_CHARS.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def percent(value: str) -> list[str]:
    if _PERCENT.match(value):
        return []
    return [regex_error("a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%", "1%", "93%")]


def port_number(value: int) -> list[str]:
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


RULES = {
    "dns1123_subdomain": dns1123_subdomain,
    "dns1123_label": dns1123_label,
    "dns1035_label": dns1035_label,
}
"""Object-name rules by name, as used by `NAME_RULES` (`NameIsDNSSubdomain`, `NameIsDNSLabel`, ...)."""


def object_name(rule: str, value: str, *, prefix: bool = False) -> list[str]:
    """Check an object name (or a `generateName` prefix, whose trailing '-' is allowed) against a rule."""
    if prefix and len(value) > 1 and value.endswith("-"):
        value = value[:-1] + "a"
    return RULES.get(rule, dns1123_subdomain)(value)
