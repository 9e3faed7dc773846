"""JSON for the hot paths: every object the sim's API server writes and its in-process clients read.

The sim is CPU-bound on 2 cores, and every watch event is encoded once per watch and decoded again by
each in-process informer. orjson (a maintained Rust extension on PyPI) encodes about 30 times faster and
decodes about twice as fast as `json`; with it the sim's process spent about 10% less CPU on
conformance/test_rollout_traces.py + test_rolling_update.py (user CPU 47.2 and 47.9 s before, 43.4 and
42.0 s after, getrusage, same machine). Where its results differ from `json`'s, this module falls back to
`json`, so callers see the standard library's values and error messages:

* encoding: integers beyond 64 bits and non-string keys: orjson refuses them, `json` writes them (NaN, which
  the API server never stores, is written as null);
* decoding: NaN, Infinity and lone surrogates: orjson refuses them, `json` reads them (or words the error).

Decoding an integer beyond 64 bits gives a float, as Kubernetes' unstructured decoding does (int64 when it
fits, else float64); only the API server's clients decode here, so that is what a client of kube-apiserver sees.
(A guard that scanned for long digit runs cost more than the whole `json.loads` it would have avoided.)

One difference stays, on purpose: non-ASCII characters are written as UTF-8 rather than `\\u` escapes.
Both are the same JSON text; kube-apiserver writes UTF-8 too. Request bodies from users are not decoded
here: the API server parses them with `json` and its own strictness hooks.
"""

from __future__ import annotations

import copy as _copy
import json
from typing import Any

import orjson


def dumps(obj: Any) -> bytes:
    """Compact JSON, as `json.dumps(obj, separators=(",", ":")).encode()` gives (UTF-8 instead of escapes)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """`json.loads(data)`, but an integer beyond 64 bits comes back as a float (see above)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # the standard library decides: it reads NaN and lone surrogates, words errors


def copy(obj: Any) -> Any:
    """A deep copy of a JSON value (tuples come back as lists); anything else falls back to copy.deepcopy."""
    try:
        return orjson.loads(orjson.dumps(obj))
    except TypeError:
        return _copy.deepcopy(obj)
