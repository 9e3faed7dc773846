"""Where protobuf meets the HTTP layer: answers re-encoded for clients that asked for protobuf, and the 415
for protobuf bodies of custom resources.

The handlers keep building JSON answers; `encode_answer` (run by `app`'s middleware on every answer,
errors included) turns a JSON answer into protobuf when the request's `Accept` prefers it and the object
has a protobuf form, as kube-apiserver negotiates (`protobuf.negotiation`). Watches encode their own
frames (`watch.WatchSession`).
"""

from __future__ import annotations

import json
import logging

from aiohttp import web

from lwsconf.sim.apiserver.apimachinery import errors
from lwsconf.sim.apiserver.http import routing
from lwsconf.sim.apiserver.protobuf import codec, envelope, negotiation

log = logging.getLogger("lwsconf.sim.apiserver")

CUSTOM_MEDIA_TYPES = ["application/json", "application/yaml"]


def refuse_custom_body(request: web.Request, target: routing.Target) -> None:
    """415 for a protobuf body sent to a custom resource (CRDs are JSON only, as in Kubernetes).

    kube-apiserver 1.37.2 drops the connection on such a request; a 415 saying what to send is kinder and
    is what its input negotiation would answer if protobuf were not listed for custom resources.
    """
    if target.info.is_custom and request.method in ("POST", "PUT") and \
            negotiation.is_protobuf(request.headers.get("Content-Type", "")):
        raise errors.unsupported_media_type(
            request.headers.get("Content-Type", ""), CUSTOM_MEDIA_TYPES,
            f"{target.info.kind} is a custom resource: custom resources are JSON only, send it as JSON")


def encode_answer(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """`response` as the client negotiated it: unchanged unless its Accept names protobuf."""
    accept = request.headers.get("Accept", "")
    if not negotiation.names_protobuf(accept) or not isinstance(response, web.Response) or \
            response.content_type != "application/json" or not isinstance(response.body, bytes):
        return response
    try:
        obj = json.loads(response.body)
    except ValueError:
        return response
    if not isinstance(obj, dict):
        return response
    possible = obj.get("kind") != "Table" and envelope.has_message(str(obj.get("apiVersion", "")),
                                                                   str(obj.get("kind", "")))
    chosen = negotiation.choose(accept, protobuf_possible=possible)
    if chosen == "json":
        return response
    if chosen is None:
        status = errors.StatusError(406, "NotAcceptable", "only the following media types are accepted: "
                                    "application/json, application/yaml, application/vnd.kubernetes.protobuf")
        return _protobuf(status.to_status(), 406, response)
    try:
        return _protobuf(obj, response.status, response)
    except codec.CodecError as exc:
        log.error("cannot encode the answer to %s %s as protobuf: %s", request.method, request.path_qs, exc)
        status = errors.internal(f"the answer has no protobuf form ({exc}); ask for application/json")
        return _protobuf(status.to_status(), 500, response)


def _protobuf(obj: dict[str, object], status: int, original: web.Response) -> web.Response:
    headers = {k: v for k, v in original.headers.items() if k.lower() not in ("content-type", "content-length")}
    return web.Response(body=envelope.encode_object(obj), status=status, headers=headers,
                        content_type=negotiation.PROTOBUF)
