"""Decode failures -> typed errors, in one place.

Provider bytes are hostile input: invalid UTF-8, JSON nested thousands of levels deep, fields of the
wrong type, events out of order. Protocol parsers decode with typed msgspec Structs and
``decode_json``; whatever still escapes a parser (a wrong shape its state machine did not foresee)
is caught once, by the executor, and turned into an ``InvalidProviderOutputError`` by
``output_error``. Either way the caller sees the provider's name, what was being decoded and a short
excerpt of the offending bytes (the executor redacts known secrets from it) -- never a raw
``UnicodeDecodeError``, ``RecursionError`` or ``AttributeError``.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from ..schema.errors import InvalidProviderOutputError

__all__ = [
    "DECODE_ERRORS",
    "MAX_JSON_DEPTH",
    "RAW_LIMIT",
    "decode_json",
    "is_utf8",
    "json_too_deep",
    "output_error",
    "snippet",
    "value_too_deep",
]

T = TypeVar("T")

RAW_LIMIT = 2000  # bytes of an offending frame kept on InvalidProviderOutputError.raw
# Tool arguments, error bodies and frames that failed to decode are refused past this depth before
# (re)decoding: msgspec, and every recursive walk after it, hits Python's recursion limit near 1,000
# levels. Frames that decode are not scanned (it would cost every event). No provider payload or
# sane tool input nests this deep.
MAX_JSON_DEPTH = 256

# What msgspec raises on hostile input: bad JSON or types, bad UTF-8 inside a string (not a
# DecodeError), nesting past the recursion limit.
DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_too_deep(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``data`` nests arrays/objects deeper than ``limit``. Two C-speed counts settle the
    usual case; only a payload with more than ``limit`` openers is walked, bracket by bracket."""
    raw = data.encode() if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    depth = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', raw)):
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def value_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """``json_too_deep`` for a decoded value (a tool input a provider sent as an object), through
    its JSON encoding; too deep to encode at all counts as too deep."""
    if not isinstance(value, dict | list):
        return False
    try:
        return json_too_deep(msgspec.json.encode(value), limit)
    except RecursionError:
        return True
    except TypeError:  # not JSON (a value the protocol built): not ours to judge here
        return False


def snippet(data: bytes | str, limit: int = RAW_LIMIT) -> str:
    """A short, printable excerpt of offending bytes (invalid UTF-8 replaced)."""
    if isinstance(data, str):
        return data[:limit]
    return data[:limit].decode("utf-8", "replace")


def decode_json(decoder: msgspec.json.Decoder[T], data: Any, what: str) -> T:
    """Decode one payload with a typed decoder. Invalid UTF-8 is replaced (as WHATWG SSE decoding
    would) and decoded again; anything else malformed -- bad JSON, wrong field types, nesting past
    ``MAX_JSON_DEPTH`` -- is an ``InvalidProviderOutputError`` with the raw excerpt."""
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:
        problem = str(exc)
    except UnicodeDecodeError:  # msgspec raises this, not DecodeError, for bad UTF-8 in a string
        problem = "invalid UTF-8"
    except RecursionError:
        problem = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    data = bytes(data)  # the slow path also takes a ``msgspec.Raw`` or ``memoryview``
    if problem != "invalid UTF-8" and is_utf8(data):
        raise InvalidProviderOutputError(f"malformed {what}: {problem}", raw=snippet(data))
    if json_too_deep(data):
        raise InvalidProviderOutputError(
            f"malformed {what}: JSON nested deeper than {MAX_JSON_DEPTH} levels", raw=snippet(data)
        )
    try:
        return decoder.decode(data.decode("utf-8", "replace").encode())
    except (msgspec.DecodeError, RecursionError) as exc:
        detail = str(exc) if isinstance(exc, msgspec.DecodeError) else "nested too deeply"
        raise InvalidProviderOutputError(f"malformed {what}: {detail}", raw=snippet(data)) from None


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` decodes as UTF-8 (msgspec >= 0.23 reports bad UTF-8 as a plain DecodeError)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def output_error(exc: Exception, protocol: str, frame: Any = None) -> InvalidProviderOutputError:
    """An unforeseen failure while a parser handled ``frame`` (a wrong shape: a field of the wrong
    type, an event out of order) as a typed error naming the protocol and quoting the frame."""
    raw = _frame_bytes(frame)
    if isinstance(exc, RecursionError):
        what = f"a frame nested deeper than the parser can follow ({MAX_JSON_DEPTH} levels)"
    else:
        what = f"an unexpected frame shape ({type(exc).__name__})"
    return InvalidProviderOutputError(
        f"{protocol}: {what}", raw=snippet(raw) if raw is not None else None, code="bad_shape"
    )


def _frame_bytes(frame: Any) -> bytes | str | None:
    """The payload of an SSE event, an event-stream message, a WebSocket message or a whole body."""
    if isinstance(frame, bytes | str):
        return frame
    for name in ("data", "payload"):
        value = getattr(frame, name, None)
        if isinstance(value, bytes | str):
            return value
    return None
