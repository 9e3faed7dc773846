"""A request's query parameters and write options: integers, resourceVersion, list options, fieldManager,
dryRun and fieldValidation.

Kept apart from `context` (the server's state) because it holds no state: each function reads the query
string and answers a bad value with the `StatusError` (400 or 422) the handlers send.
"""

from __future__ import annotations

import json
import re

from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors

INT64 = (-(2**63), 2**63 - 1)
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def int_query(request: web.Request, name: str) -> int | None:
    """An int64 query parameter (None when absent or empty); 400 otherwise, worded as the parameter
    codec passes on strconv.ParseInt's error (apimachinery pkg/conversion/queryparams, runtime
    Convert_Slice_string_To_int64).

    Decimal ASCII digits only, as Go's strconv.ParseInt reads them (Python's int() would also take
    " 7", "1_0" and non-ASCII digits).
    """
    value = request.query.get(name)
    if value in (None, ""):
        return None
    number = int(value) if _DECIMAL.fullmatch(value) else None
    if number is None:
        raise errors.bad_request(f"strconv.ParseInt: parsing {json.dumps(value)}: invalid syntax")
    if not INT64[0] <= number <= INT64[1]:
        raise errors.bad_request(f"strconv.ParseInt: parsing {json.dumps(value)}: value out of range")
    return number


def resource_version(request: web.Request, *, watch: bool = False) -> int | None:
    """The `resourceVersion` query parameter of a read: None when absent, else a decimal uint64; 400 otherwise.

    kube-apiserver parses it with strconv.ParseUint (storage.APIObjectVersioner.ParseResourceVersion): a list
    (and here a get) answers 400 "invalid resource version: ...", a watch (`watch=True`) the parse error
    unconverted, a reasonless 500, which the sim answers as a 400 with the same message.
    """
    value = request.query.get("resourceVersion")
    if value in (None, ""):
        return None
    if not value.isascii() or not value.isdigit() or int(value) >= 2**64:
        # kube-apiserver 1.37.2's words (lwsconf fidelity versions/rv-lists/list-garbage-rv: the etcd3 store's
        # 400 "invalid resource version"; watch/watch-errors/garbage-rv: the watch cache's error unconverted)
        syntax = "value out of range" if value.isascii() and value.isdigit() else "invalid syntax"
        why = (f"resourceVersion: Invalid value: {json.dumps(value)}: "
               f"strconv.ParseUint: parsing {json.dumps(value)}: {syntax}")
        # a watch gets the parse error as its message, but as a 400: kube-apiserver's unconverted 500 is not
        # emulated (the sim never answers a malformed request with a 5xx; tests/sim/apiserver/http/test_bad_input.py)
        raise errors.bad_request(why if watch else f"invalid resource version: {why}")
    return int(value)


def check_list_options(request: web.Request) -> None:
    """A list's resourceVersion and resourceVersionMatch, as ValidateListOptions checks them (422)."""
    rv = request.query.get("resourceVersion", "")
    int_query(request, "timeoutSeconds")  # every ListOptions field is decoded first: a bad one is a 400
    resource_version(request)
    match = request.query.get("resourceVersionMatch", "")
    causes = []
    if match:
        if not rv:
            causes.append(errors.Cause("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden "
                                       "unless resourceVersion is provided", "FieldValueForbidden"))
        if request.query.get("continue"):
            causes.append(errors.Cause("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden "
                                       "when continue is provided", "FieldValueForbidden"))
        if match not in ("Exact", "NotOlderThan"):
            causes.append(errors.Cause("resourceVersionMatch", f'Unsupported value: "{match}": supported values: '
                                       '"Exact", "NotOlderThan", ""', "FieldValueNotSupported"))
        elif match == "Exact" and rv == "0":
            causes.append(errors.Cause("resourceVersionMatch", 'Forbidden: resourceVersionMatch "exact" is '
                                       'forbidden for resourceVersion "0"', "FieldValueForbidden"))
    if request.query.get("sendInitialEvents"):
        causes.append(errors.Cause("sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list",
                                   "FieldValueForbidden"))
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


FIELD_MANAGER_MAX = 128


def field_manager(request: web.Request, options_kind: str) -> str:
    """The `fieldManager` of a write: at most 128 printable characters, or 422 on the options kind
    (CreateOptions, UpdateOptions, PatchOptions), as apimachinery's ValidateFieldManager checks it."""
    value = request.query.get("fieldManager", "")
    causes = []
    if len(value) > FIELD_MANAGER_MAX:
        causes.append(errors.Cause("fieldManager", f"Too long: may not be more than {FIELD_MANAGER_MAX} bytes",
                                   "FieldValueTooLong"))
    bad = next(((i, ch) for i, ch in enumerate(value) if not ch.isprintable()), None)
    if bad is not None:
        causes.append(errors.Cause("fieldManager", f"Invalid value: {value!r}: invalid character "
                                   f"U+{ord(bad[1]):04X} (at position {bad[0]})"))
    if causes:
        raise errors.invalid(options_kind, "meta.k8s.io", "", causes)
    return value


def flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def _unsupported_option(request: web.Request, field: str, shown: str, supported: str) -> errors.StatusError:
    """422 Invalid on the write's options kind, worded as kube-apiserver's options validation."""
    return errors.invalid(_OPTIONS_KIND.get(request.method, "CreateOptions"), "meta.k8s.io", "", [errors.Cause(
        field, f"Unsupported value: {shown}: supported values: {supported}", "FieldValueNotSupported")])


def dry_run(request: web.Request) -> bool:
    value = request.query.get("dryRun")
    if value is None:
        return False
    if value != "All":
        raise _unsupported_option(request, "dryRun", json.dumps([value]), '"All"')
    return True


def field_validation(request: web.Request) -> str:
    value = request.query.get("fieldValidation", "Warn")  # the server default since 1.27
    if value not in ("Ignore", "Warn", "Strict"):
        raise _unsupported_option(request, "fieldValidation", json.dumps(value), '"", "Ignore", "Strict", "Warn"')
    return value
