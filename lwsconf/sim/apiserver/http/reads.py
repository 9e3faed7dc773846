"""The reading verbs on a resource: get and list (with continue tokens and exact list semantics).

Kept apart from `handlers` (the writing verbs and the admission they run): reads run no admission and change
nothing. The watch verb is `watch`'s.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import decoding, params, routing
from lwsconf.sim.apiserver.http.context import ServerContext, json_response
from lwsconf.sim.apiserver.http.handlers import parse_selectors, render_object
from lwsconf.sim.apiserver.storage import conversion
from lwsconf.sim.apiserver.tables import tables


async def get(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    assert target.name is not None
    params.resource_version(request)  # any valid one reads the current object (the sim keeps no old ones)
    namespace = target.namespace or ""
    obj = ctx.storage.must_get(target.info, namespace, target.name)
    if tables.wants_table(request.headers.get("Accept", "")):
        return render_object(ctx, request, target, obj)
    return json_response(ctx.storage.encoded(target.info, (namespace, target.name)))


def _continue_token(rv: int, after: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "start": list(after)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _parse_continue(token: str) -> tuple[str, str]:
    """The (namespace, name) a continue token resumes after; 400 worded as kube-apiserver's etcd3 store words
    a token it cannot read (apiserver storage/continue.go DecodeContinue, wrapped as "invalid continue token"):
    base64 (unpadded URL alphabet), then JSON, then its encoded version (lwsconf fidelity
    selectors/selectors-labels/continue-garbage). The sim's own tokens are padded base64 of its own JSON."""
    data = _continue_bytes(token)
    text = data.decode("latin-1")  # one character per byte: Go's scanner reports the byte it stopped at
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _bad_continue(decoding.go_json_syntax_error(exc, text)) from None
    start = value.get("start") if isinstance(value, dict) else None
    if isinstance(start, list) and len(start) == 2 and all(isinstance(p, str) for p in start):
        return (start[0], start[1])
    version = value.get("v", "") if isinstance(value, dict) else ""
    raise _bad_continue(f"server does not recognize this encoded version {version}")


def _continue_bytes(token: str) -> bytes:
    body = token.rstrip("=") if token.endswith("=") and len(token) % 4 == 0 else token
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    bad = next((i for i, ch in enumerate(body) if ch not in alphabet), None)
    if bad is None and len(body) % 4 == 1:
        bad = len(body) - 1
    if bad is not None:
        raise _bad_continue(f"illegal base64 data at input byte {bad}")
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))


def _bad_continue(why: str) -> errors.StatusError:
    return errors.bad_request(f"invalid continue token: continue key is not valid: {why}")


def _exact_list(ctx: ServerContext, request: web.Request, target: routing.Target, label_sel: Any,
                field_sel: Any) -> web.Response | None:
    """A list with resourceVersionMatch=Exact at an older resourceVersion: the objects as they were then, as
    etcd's snapshot of that revision answers it (lwsconf fidelity versions/rv-lists/list-exact-after-a and
    list-exact-too-old), or 410 when the sim's history no longer reaches back to it, as a compacted revision
    is (the etcd3 store's "The resourceVersion for the provided list is too old."). None for every other list.
    Whole lists only: `limit` and `continue` read the current objects."""
    rv = params.resource_version(request)
    if request.query.get("resourceVersionMatch") != "Exact" or not rv or rv >= ctx.db.rv \
            or request.query.get("limit") or request.query.get("continue"):
        return None
    info = target.info
    found = ctx.db.list_at(info.storage_key, rv, target.namespace, label_sel, field_sel)
    if found is None:
        raise errors.expired("The resourceVersion for the provided list is too old.")
    items = [conversion.from_storage(info, obj) for _, obj in found]
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if info.is_custom:
        meta["continue"] = ""
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(tables.to_table(info, items, list_meta=meta,
                                             include_object=request.query.get("includeObject", "Metadata")))
    if not info.is_custom:
        items = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
    return json_response({"kind": info.list_kind_name, "apiVersion": info.api_version, "metadata": meta,
                          "items": items})


async def list_(ctx: ServerContext, request: web.Request, target: routing.Target) -> web.Response:
    """LIST, served from indexes; `limit`/`continue` page through keys in (namespace, name) order.

    Simplification: a continued list reads the current state after the last key returned, not a
    snapshot at the first page's resourceVersion as etcd would.
    """
    params.check_list_options(request)
    label_sel, field_sel = parse_selectors(request, target)
    exact = _exact_list(ctx, request, target, label_sel, field_sel)
    if exact is not None:
        return exact
    keys = ctx.storage.list_keys(target.info, target.namespace, label_sel, field_sel)
    token = request.query.get("continue")
    if token:
        after = _parse_continue(token)
        keys = [k for k in keys if k > after]
    meta: dict[str, Any] = {"resourceVersion": str(ctx.db.rv)}
    if target.info.is_custom:  # unstructured lists always carry the (empty) continue token
        meta["continue"] = ""
    limit = params.int_query(request, "limit")
    if request.query.get("resourceVersion") == "0" and not token:
        # resourceVersion=0 is served whole from kube-apiserver's watch cache, limit ignored (lwsconf fidelity
        # versions/rv-lists/list-limit-with-rv0: no continue token from kube-apiserver 1.37.2)
        limit = None
    if limit is not None and 0 < limit < len(keys):  # limit <= 0 means no limit, as in kube-apiserver
        meta["continue"] = _continue_token(ctx.db.rv, keys[limit - 1])
        if label_sel.is_empty() and field_sel.is_empty():
            # counted only for an unfiltered list: the etcd3 store cannot know how many more would match
            # (lwsconf fidelity selectors/selectors-labels/limit-2-selected)
            meta["remainingItemCount"] = len(keys) - limit
        keys = keys[:limit]
    info = target.info
    if tables.wants_table(request.headers.get("Accept", "")):
        return json_response(tables.to_table(info, ctx.storage.read(info, keys), list_meta=meta,
                                             include_object=request.query.get("includeObject", "Metadata")))
    head = json.dumps({"kind": info.list_kind_name, "apiVersion": info.api_version, "metadata": meta},
                      separators=(",", ":")).encode()
    body = head[:-1] + b',"items":[' + b",".join(ctx.storage.encoded_list_item(info, k) for k in keys) + b"]}"
    return json_response(body)
