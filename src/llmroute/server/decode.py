"""Request bodies in: one decoder per endpoint, one way to turn a bad body into a typed error."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from ..route.decoding import is_utf8
from ..schema.errors import InvalidRequestError

__all__ = ["decode_body"]

T = TypeVar("T")


def decode_body(decoder: msgspec.json.Decoder[T], body: bytes) -> T:
    """Parse and validate; ``InvalidRequestError`` names the bad field (``$.messages[0].role``)."""
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(f"invalid request: {exc}", code="invalid_request") from None
    except UnicodeDecodeError:  # msgspec < 0.23: a JSON string holding bytes that are not UTF-8
        raise _not_utf8() from None
    except msgspec.DecodeError:
        # msgspec >= 0.23 raises DecodeError for bad UTF-8 too; ask the bytes, not the message
        if not is_utf8(body):
            raise _not_utf8() from None
        raise InvalidRequestError(
            "invalid request: the body is not valid JSON", code="invalid_json"
        ) from None


def _not_utf8() -> InvalidRequestError:
    return InvalidRequestError(
        "invalid request: the body holds bytes that are not valid UTF-8", code="invalid_json"
    )
