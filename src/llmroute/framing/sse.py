"""Incremental, WHATWG-correct Server-Sent Events decoding.

Works on bytes: line endings (LF, CR, CRLF, mixed, split across reads) are normalised to LF, then
events are cut at blank lines. ``data`` stays bytes so protocols hand it straight to msgspec without
a str round-trip; UTF-8 sequences split across reads are never cut because events only end at LF.

A CRLF stream (Gemini) is cut at its CRLF blank lines without normalising first, and its common
shape (one ``data:`` line per event) split without normalising at all; the first other line ending
switches the stream to the normalising path for good, so nothing waits on a CRLF that never comes.

``SSEDataFraming`` is the same parser for protocols that never read the event name (Anthropic
repeats the type inside the JSON): its decoder yields each event's ``data`` bytes, and its fast path
builds no ``SSEEvent`` at all.
"""

from __future__ import annotations

import re

import msgspec

from ..schema.errors import InvalidProviderOutputError

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "SSEDataDecoder",
    "SSEDataFraming",
    "SSEDecoder",
    "SSEEvent",
    "SSEFraming",
]

DEFAULT_MAX_EVENT_BYTES = 32 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_LONE_CR = re.compile(rb"\r(?!\n)")


class SSEEvent(msgspec.Struct, frozen=True, gc=False):
    """One server-sent event."""

    data: bytes
    """Its ``data:`` lines, joined by newlines."""
    event: str = "message"
    """Its ``event:`` name (``message`` when none)."""
    id: str | None = None
    """The last event id seen (``id:``), carried on."""
    retry: int | None = None
    """A ``retry:`` reconnection time, in milliseconds."""


class _Parser:
    """The buffering and the general parser both decoders share. An unterminated event at end of
    input is discarded (spec); ``partial`` tells whether one was pending, for truncation diagnostics."""

    __slots__ = (
        "_buf",
        "_data",
        "_event",
        "_last_id",
        "_max",
        "_more",
        "_names",
        "_raw",
        "_retry",
        "_size",
        "_start",
        "_trailing_cr",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buf: bytes = b""
        # Reads that completed no event wait here unjoined, so one huge event arriving in small reads
        # costs one join when it ends, not a copy of everything so far per read (quadratic).
        self._more: list[bytes] = []
        self._size = 0  # bytes in _buf and _more
        self._trailing_cr = False
        self._start = True
        self._max = max_event_bytes
        self._data: list[bytes] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._names: dict[bytes, str] = {}
        # CRLF streams (Gemini) are cut at CRLF blank lines as they are, not normalised first: None
        # until the first line ending decides, False for good once any other line ending appears.
        self._raw: bool | None = None

    @property
    def partial(self) -> bool:
        return bool(self._buf.strip(b"\r\n")) or bool(self._more) or bool(self._data)

    def _region(self, chunk: bytes) -> bytes | None:
        """Buffer ``chunk``; the complete events it ends (without the final blank line), or
        ``None`` when it ends none."""
        if self._start:
            chunk = self._buf + chunk
            self._buf = b""
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._buf = chunk  # may still become a BOM
                return None
            self._start = False
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._raw is None and (b"\r" in chunk or b"\n" in chunk):
            # Held bytes have no line ending yet, so they read the same either way.
            self._raw = _starts_crlf(chunk)
        if self._raw:
            return self._region_raw(chunk) if chunk else None
        if self._trailing_cr or b"\r" in chunk:
            if self._trailing_cr and chunk.startswith(b"\n"):
                chunk = chunk[1:]  # second half of a CRLF whose CR ended the previous read
            self._trailing_cr = chunk.endswith(b"\r")
            if _LONE_CR.search(chunk) is None:
                chunk = chunk.translate(None, b"\r")  # CRLF only (Gemini): drop the CRs in one pass
            else:  # a lone CR ends a line too (and one ending this read may pair with the next LF)
                chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk:
            return None
        tail = self._more[-1] if self._more else self._buf
        if b"\n\n" not in chunk and not (tail.endswith(b"\n") and chunk.startswith(b"\n")):
            # No event ends in this read: keep it for later (O(len(chunk)), whatever is pending).
            self._hold(chunk, tail)
            return None
        buf = self._with_held(chunk)
        cut = buf.rfind(b"\n\n")  # found in the last read's bytes: a backward scan of those only
        self._buf = buf[cut + 2 :]
        self._size = len(self._buf)
        return buf[:cut]

    def _region_raw(self, chunk: bytes) -> bytes | None:
        """``_region`` for a CRLF stream: cut at the last CRLF blank line; the region comes back
        raw (``self._raw`` still true) for the caller to fast-path or normalise. Whatever stays
        held is CRLF only, so no event that another line ending would end waits here."""
        tail = self._more[-1] if self._more else self._buf
        if b"\r\n\r\n" not in chunk and b"\r\n\r\n" not in tail[-3:] + chunk[:3]:
            if not _crlf_only(chunk, tail.endswith(b"\r")):
                return self._leave_raw(None, chunk)
            self._hold(chunk, tail)
            return None
        buf = self._with_held(chunk)
        cut = buf.rfind(b"\r\n\r\n")
        rest = buf[cut + 4 :]
        if not _crlf_only(rest, False):
            self._buf, self._size = b"", 0
            return self._leave_raw(buf[:cut], rest)
        self._buf = rest
        self._size = len(rest)
        return buf[:cut]

    def _hold(self, chunk: bytes, tail: bytes) -> None:
        """Keep a read that ends no event (a list of reads, joined once: O(n) whatever is held);
        past the size limit, drop what is held and refuse the event."""
        self._size += len(chunk)
        if self._size > self._max:
            head = self._buf or (self._more[0] if self._more else chunk)
            self._buf, self._more, self._size = b"", [], 0
            raise InvalidProviderOutputError(
                f"SSE event exceeds the {self._max}-byte limit", raw=_excerpt(head)
            )
        if tail:
            self._more.append(chunk)
        else:
            self._buf = chunk

    def _with_held(self, chunk: bytes) -> bytes:
        """The held bytes followed by ``chunk``, with nothing held any more in ``_more``."""
        if self._more:
            buf = b"".join((self._buf, *self._more, chunk))
            self._more = []
            return buf
        return self._buf + chunk if self._buf else chunk

    def _leave_raw(self, region: bytes | None, rest: bytes) -> bytes | None:
        """Another line ending appeared: from here on the stream is normalised as any other.
        ``region`` (raw, cut before a CRLF blank line) is normalised alone; the held bytes and
        ``rest`` go through the normalising path."""
        held = b"".join((self._buf, *self._more))
        self._buf, self._more, self._size = b"", [], 0
        self._raw = False
        after = self._region(held + rest)
        if region is None:
            return after
        head = _normalise(region)
        return head if after is None else head + b"\n\n" + after

    def _flush_raw(self) -> bytes | None:
        """At end of input: held CRLF bytes that end in a CRLF then a CR end an event there (the
        normalising path dispatches it when the CR arrives)."""
        if not self._raw:
            return None
        held = _normalise(b"".join((self._buf, *self._more)))
        cut = held.rfind(b"\n\n")
        return held[:cut] if cut >= 0 else None

    def _fast_crlf(self, region: bytes) -> list[bytes] | None:
        """A raw CRLF region where every event is one ``data:`` line (Gemini): its data, cut
        without normalising. Exact: every CR and LF must belong to a blank-line separator."""
        if (
            self._event
            or self._last_id is not None
            or self._retry is not None
            or not region.startswith(b"data: ")
        ):
            return None
        separators = region.count(b"\r\n\r\ndata: ")
        if region.count(b"\n") != 2 * separators or region.count(b"\r") != 2 * separators:
            return None
        return region[6:].split(b"\r\n\r\ndata: ")

    def _events(self, region: bytes) -> list[SSEEvent]:
        """Every event in ``region``, any shape (the general parser, with two per-block shortcuts)."""
        out: list[SSEEvent] = []
        for block in region.split(b"\n\n"):
            if block.startswith(b"data: ") and b"\n" not in block and not self._data:
                # The common shape: one data line, default event type.
                if self._event:
                    out.append(SSEEvent(block[6:], self._event, self._last_id, self._retry))
                    self._event = ""
                elif self._last_id is None and self._retry is None:
                    out.append(SSEEvent(block[6:]))
                else:
                    out.append(SSEEvent(block[6:], "message", self._last_id, self._retry))
                continue
            if block.startswith(b"event: ") and not self._data:
                # Also common: one event line then one data line (Anthropic, OpenAI Responses).
                nl = block.find(b"\n")
                if nl > 0 and block.startswith(b"data: ", nl + 1) and block.find(b"\n", nl + 1) < 0:
                    name = block[7:nl].decode("utf-8", "replace") or "message"
                    out.append(SSEEvent(block[nl + 7 :], name, self._last_id, self._retry))
                    self._event = ""
                    continue
            self._block(block, out)
        return out

    def _reset(self) -> None:
        self._buf = b""
        self._more = []
        self._size = 0
        self._data = []
        self._event = ""

    def _block(self, block: bytes, out: list[SSEEvent]) -> None:
        for line in block.split(b"\n"):
            if not line:
                self._dispatch(out)
                continue
            if line[0] == 0x3A:  # ':' comment
                continue
            colon = line.find(b":")
            if colon < 0:
                field, value = line, b""
            else:
                field, value = line[:colon], line[colon + 1 :]
                if value[:1] == b" ":
                    value = value[1:]
            if field == b"data":
                self._data.append(value)
            elif field == b"event":
                self._event = value.decode("utf-8", "replace")
            elif field == b"id":
                if b"\0" not in value:
                    self._last_id = value.decode("utf-8", "replace")
            elif field == b"retry" and value and value.isdigit():
                self._retry = int(value)
        self._dispatch(out)

    def _dispatch(self, out: list[SSEEvent]) -> None:
        if not self._data:
            self._event = ""
            return
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        out.append(SSEEvent(data, self._event or "message", self._last_id, self._retry))
        self._data = []
        self._event = ""


class SSEDecoder(_Parser):
    """``feed(bytes) -> list[SSEEvent]``; ``close()`` at end of input."""

    __slots__ = ()

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        region = self._region(chunk)
        if region is None:
            return []
        if self._raw:
            data = self._fast_crlf(region)
            if data is not None:
                return [SSEEvent(d) for d in data]
            region = _normalise(region)
        if not self._event and self._last_id is None and self._retry is None:  # events carry id/retry
            fast = self._fast(region)
            if fast is not None:
                return fast
        return self._events(region)

    def _fast(self, region: bytes) -> list[SSEEvent] | None:
        """The two shapes nearly every provider sends, decoded without per-line work; ``None`` means
        "not this shape" and the general parser runs. Both checks are exact, not heuristics."""
        if region.startswith(b"data: "):
            # Every event one ``data:`` line (OpenAI Chat, Gemini): all newlines are separators.
            separators = region.count(b"\n\ndata: ")
            if region.count(b"\n") == 2 * separators:
                return [SSEEvent(d) for d in region[6:].split(b"\n\ndata: ")]
            return None
        if region.startswith(b"event: "):
            # Every event ``event:`` + ``data:`` (Anthropic, OpenAI Responses): the lines go name,
            # data, blank, name, data, blank, ... name, data. One split, no per-event partition.
            lines = region.split(b"\n")
            n = len(lines) // 3 + 1
            if len(lines) % 3 != 2 or any(lines[2::3]) or region.count(b"\ndata: ") != n:
                return None  # (with every name line an ``event:`` one, the n ``data:`` are the data lines)
            names = self._names
            out: list[SSEEvent] = []
            for head, data in zip(lines[0::3], lines[1::3], strict=True):
                name = names.get(head)  # only ``event: `` lines are ever cached
                if name is None:
                    if not head.startswith(b"event: "):
                        return None
                    name = head[7:].decode("utf-8", "replace") or "message"
                    if len(names) < 256:
                        names[head] = name
                out.append(SSEEvent(data[6:], name))
            return out
        return None

    def close(self) -> list[SSEEvent]:
        region = self._flush_raw()
        out = self._events(region) if region is not None else []
        self._reset()
        return out


class _SSE:
    """What both SSE framings hold: the name and the per-event size limit of their decoders."""

    name = "sse"

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes


class SSEFraming(_SSE):
    """SSE whose frames are ``SSEEvent`` (name and data): for protocols that read the name."""

    def decoder(self) -> SSEDecoder:
        return SSEDecoder(self.max_event_bytes)


class SSEDataDecoder(_Parser):
    """``feed(bytes) -> list[bytes]``: each event's ``data``, for a protocol that dispatches on the
    payload alone. Same parser, same limits; the common shape builds no ``SSEEvent``."""

    __slots__ = ("_heads",)

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        super().__init__(max_event_bytes)
        self._heads: set[bytes] = set()  # ``event: ...`` lines seen (names are not needed here)

    def feed(self, chunk: bytes) -> list[bytes]:
        region = self._region(chunk)
        if region is None:
            return []
        if self._raw:
            data = self._fast_crlf(region)
            if data is not None:
                return data
            region = _normalise(region)
        if not self._event and self._last_id is None:
            fast = self._fast_data(region)
            if fast is not None:
                return fast
        return [event.data for event in self._events(region)]

    def close(self) -> list[bytes]:
        region = self._flush_raw()
        out = [event.data for event in self._events(region)] if region is not None else []
        self._reset()
        return out

    def _fast_data(self, region: bytes) -> list[bytes] | None:
        """``SSEDecoder._fast``'s two shapes, checked the same way, giving the data slices only."""
        if region.startswith(b"data: "):
            separators = region.count(b"\n\ndata: ")
            if region.count(b"\n") == 2 * separators:
                return region[6:].split(b"\n\ndata: ")
            return None
        if region.startswith(b"event: "):
            lines = region.split(b"\n")
            if len(lines) % 3 != 2 or any(lines[2::3]):
                return None
            heads = self._heads
            if not heads.issuperset(lines[0::3]):  # one C call while the names are known ones
                for head in lines[0::3]:
                    if not head.startswith(b"event: "):
                        return None
                    if len(heads) < 256:
                        heads.add(head)
            datas = lines[1::3]
            # Lines with a common prefix are contiguous in byte order: if the least and the greatest
            # start with ``data: `` they all do (cheaper than counting the prefix in the region).
            if not (min(datas).startswith(b"data: ") and max(datas).startswith(b"data: ")):
                return None
            return [data[6:] for data in datas]
        return None


class SSEDataFraming(_SSE):
    """SSE for protocols that never read the event name: frames are the events' ``data`` bytes."""

    def decoder(self) -> SSEDataDecoder:
        return SSEDataDecoder(self.max_event_bytes)


def _normalise(region: bytes) -> bytes:
    """CRLF and lone CR to LF, for a region cut just before a CRLF (so a final CR is a lone one)."""
    return region.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in region else region


def _starts_crlf(chunk: bytes) -> bool:
    """The first line ending in ``chunk`` is a CRLF."""
    cr = chunk.find(b"\r")
    return cr >= 0 and chunk.find(b"\n") == cr + 1


def _crlf_only(data: bytes, after_cr: bool) -> bool:
    """Every line ending in ``data`` is a CRLF; it may end with the CR of one the next read ends,
    and start (``after_cr``: the bytes before ended with a CR) with the LF of one."""
    if after_cr:
        if not data.startswith(b"\n"):
            return False
        data = data[1:]
    if data.endswith(b"\r"):
        data = data[:-1]
    return data.count(b"\r") == data.count(b"\n") == data.count(b"\r\n")


def _excerpt(data: bytes, limit: int = 200) -> str:
    return data[:limit].decode("utf-8", "replace")
