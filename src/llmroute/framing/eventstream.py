"""Incremental AWS event-stream (``application/vnd.amazon.eventstream``) decoding.

A message is ``prelude | headers | payload | message CRC``; the prelude is total length, headers
length (both big-endian uint32) and the CRC32 of those 8 bytes. Both CRCs are checked. Frames may be
split at any byte boundary. The decoder is linear in its input: it walks a buffer with an offset and
keeps only the unfinished tail (botocore's ``EventStreamBuffer`` re-slices the whole remainder after
every frame, quadratic when a body arrives as one chunk). Header blocks repeat byte for byte on a
stream, so parsed headers are cached by their bytes.

``exception`` / ``error`` messages are yielded like any other: turning one into a typed error is the
protocol's job (``route.classify.from_exception_frame``). The framing only raises
``InvalidProviderOutputError`` for frames it cannot read (checksums, size, truncation).
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Mapping
from struct import Struct as _Packer
from struct import error as StructError
from types import MappingProxyType
from zlib import crc32

import msgspec

from ..schema.errors import InvalidProviderOutputError

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "EventStreamDecoder",
    "EventStreamFraming",
    "EventStreamMessage",
    "HeaderValue",
    "encode_message",
]

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
_PRELUDE = 12  # total length, headers length, prelude CRC
_MIN_FRAME = 16  # prelude + message CRC
_CACHE_LIMIT = 256

_u32x3 = _Packer(">III")
_u32 = _Packer(">I")
_u16 = _Packer(">H")
_i8 = _Packer(">b")
_i16 = _Packer(">h")
_i32 = _Packer(">i")
_i64 = _Packer(">q")

HeaderValue = bool | int | bytes | str | _dt.datetime | uuid.UUID
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class EventStreamMessage(msgspec.Struct, frozen=True, gc=False):
    """One decoded message. ``headers`` is read-only (it is shared by messages whose header bytes are
    identical); the common headers are also plain attributes."""

    headers: Mapping[str, HeaderValue]
    """Every header, read-only."""
    payload: bytes
    """The message's payload bytes."""
    message_type: str = "event"
    """``:message-type``: event, exception or error."""
    event_type: str | None = None
    """``:event-type``."""
    exception_type: str | None = None
    """``:exception-type`` (or ``:error-code`` on error messages)."""


def _fail(message: str, raw: bytes | memoryview = b"") -> InvalidProviderOutputError:
    excerpt = bytes(raw[:64]).hex() if len(raw) else None
    return InvalidProviderOutputError(f"AWS event stream: {message}", raw=excerpt)


def _parse_headers(block: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    i, end = 0, len(block)
    try:
        while i < end:
            name_len = block[i]
            name = block[i + 1 : i + 1 + name_len].decode("utf-8")
            i += 1 + name_len
            kind = block[i]
            i += 1
            value: HeaderValue
            if kind == 7:  # string
                (n,) = _u16.unpack_from(block, i)
                value = block[i + 2 : i + 2 + n].decode("utf-8")
                i += 2 + n
            elif kind == 0:
                value = True
            elif kind == 1:
                value = False
            elif kind == 2:
                (value,) = _i8.unpack_from(block, i)
                i += 1
            elif kind == 3:
                (value,) = _i16.unpack_from(block, i)
                i += 2
            elif kind == 4:
                (value,) = _i32.unpack_from(block, i)
                i += 4
            elif kind == 5:
                (value,) = _i64.unpack_from(block, i)
                i += 8
            elif kind == 6:  # byte array
                (n,) = _u16.unpack_from(block, i)
                value = bytes(block[i + 2 : i + 2 + n])
                i += 2 + n
            elif kind == 8:  # timestamp, milliseconds since the epoch
                (ms,) = _i64.unpack_from(block, i)
                value = _EPOCH + _dt.timedelta(milliseconds=ms)
                i += 8
            elif kind == 9:
                value = uuid.UUID(bytes=bytes(block[i : i + 16]))
                i += 16
            else:
                raise _fail(f"unknown header value type {kind} for header {name!r}")
            if i > end:
                raise _fail(f"header {name!r} runs past the header block")
            headers[name] = value
    # OverflowError: a timestamp outside datetime's range (years 1..9999).
    except (IndexError, UnicodeDecodeError, ValueError, StructError, OverflowError) as exc:
        raise _fail(f"malformed headers ({type(exc).__name__})", block) from None
    return headers


def _str(value: HeaderValue | None) -> str | None:
    return value if isinstance(value, str) else None


class EventStreamDecoder:
    """``feed(bytes) -> list[EventStreamMessage]``; ``close()`` raises on a truncated frame.

    Linear: complete frames are read in place from the chunk; only an unfinished frame is kept,
    appended to until the length its prelude declared has arrived, then read once."""

    __slots__ = ("_cache", "_failed", "_max", "_need", "_pending")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._pending = bytearray()
        self._need = 0  # total length of the pending frame, once its prelude has arrived
        self._max = max_frame_bytes
        self._cache: dict[bytes, tuple[Mapping[str, HeaderValue], str, str | None, str | None]] = {}
        self._failed = False

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held back."""
        return len(self._pending)

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[EventStreamMessage]:
        if self._failed:
            raise _fail("decoder already failed on earlier input")
        out: list[EventStreamMessage] = []
        if not chunk:
            return out
        pending = self._pending
        if pending:
            pending += chunk
            if len(pending) < self._need:
                return out  # the pending frame is still incomplete: nothing to read yet
            data = bytes(pending)
            pending.clear()
        else:
            data = chunk if isinstance(chunk, bytes) else bytes(chunk)
        pos = self._walk(data, out)
        if pos < len(data):
            pending += memoryview(data)[pos:]
        return out

    def _walk(self, data: bytes, out: list[EventStreamMessage]) -> int:
        pos, end = 0, len(data)
        view = memoryview(data)
        cache = self._cache
        unpack = _u32x3.unpack_from
        append = out.append
        self._need = 0
        try:
            while end - pos >= _PRELUDE:
                total, hlen, prelude_crc = unpack(data, pos)
                if crc32(data[pos : pos + 8]) != prelude_crc:  # an 8-byte copy beats a view
                    raise _fail("prelude checksum mismatch", data[pos : pos + _PRELUDE])
                if total > self._max:
                    raise _fail(
                        f"frame declares {total} bytes, over the {self._max}-byte limit",
                        data[pos : pos + _PRELUDE],
                    )
                if total < _MIN_FRAME or hlen > total - _MIN_FRAME:
                    raise _fail(
                        f"invalid frame lengths (total {total}, headers {hlen})", data[pos : pos + _PRELUDE]
                    )
                if end - pos < total:
                    self._need = total
                    break
                stop = pos + total - 4
                (message_crc,) = _u32.unpack_from(data, stop)
                if crc32(view[pos + 8 : stop], prelude_crc) != message_crc:
                    raise _fail("message checksum mismatch", data[pos : pos + min(total, 64)])
                hend = pos + _PRELUDE + hlen
                key = data[pos + _PRELUDE : hend]
                parsed = cache.get(key)
                if parsed is None:
                    parsed = _describe(_parse_headers(key))
                    if len(cache) < _CACHE_LIMIT:
                        cache[key] = parsed
                headers, mtype, etype, xtype = parsed
                append(EventStreamMessage(headers, data[hend:stop], mtype, etype, xtype))
                pos = stop + 4
        except InvalidProviderOutputError:
            self._failed = True
            self._pending = bytearray()
            raise
        finally:
            view.release()
        return pos

    def close(self) -> list[EventStreamMessage]:
        pending = len(self._pending)
        self._pending = bytearray()
        if pending and not self._failed:
            self._failed = True
            raise _fail(f"stream ended inside a frame ({pending} bytes of an unfinished frame)")
        return []


def _describe(
    headers: dict[str, HeaderValue],
) -> tuple[Mapping[str, HeaderValue], str, str | None, str | None]:
    return (
        MappingProxyType(headers),
        _str(headers.get(":message-type")) or "event",
        _str(headers.get(":event-type")),
        _str(headers.get(":exception-type")) or _str(headers.get(":error-code")),
    )


class EventStreamFraming:
    name = "aws-eventstream"

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes

    def decoder(self) -> EventStreamDecoder:
        return EventStreamDecoder(self.max_frame_bytes)

    def __repr__(self) -> str:
        return f"EventStreamFraming(max_frame_bytes={self.max_frame_bytes})"


# Encoding (tests, benchmarks, local servers) -----------------------------------------------------


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw_name = name.encode("utf-8")
    head = bytes([len(raw_name)]) + raw_name
    if value is True:
        return head + b"\x00"
    if value is False:
        return head + b"\x01"
    if isinstance(value, int):
        if -(2**7) <= value < 2**7:
            return head + b"\x02" + _i8.pack(value)
        if -(2**15) <= value < 2**15:
            return head + b"\x03" + _i16.pack(value)
        if -(2**31) <= value < 2**31:
            return head + b"\x04" + _i32.pack(value)
        return head + b"\x05" + _i64.pack(value)
    if isinstance(value, bytes):
        return head + b"\x06" + _u16.pack(len(value)) + value
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return head + b"\x07" + _u16.pack(len(raw)) + raw
    if isinstance(value, _dt.datetime):
        ms = (value - _EPOCH) // _dt.timedelta(milliseconds=1)
        return head + b"\x08" + _i64.pack(ms)
    return head + b"\x09" + value.bytes


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One event-stream message with valid CRCs (for tests, benchmarks and local servers)."""
    block = b"".join(_encode_header(k, v) for k, v in headers.items())
    total = _MIN_FRAME + len(block) + len(payload)
    prelude = _u32.pack(total) + _u32.pack(len(block))
    prelude += _u32.pack(crc32(prelude))
    body = prelude + block + payload
    return body + _u32.pack(crc32(body))
