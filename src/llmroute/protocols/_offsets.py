"""Text offsets as providers count them -> Python ``str`` indices.

Gemini grounding segments are UTF-8 *byte* offsets; OpenAI annotation indices are sometimes UTF-16
code units (JavaScript string indices) instead of code points; search limits count UTF-16 units. A
Python ``str`` index is a code point, so every such offset is converted here, in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["byte_span_in", "byte_span_to_str", "utf16_to_index", "utf16_units"]


def byte_span_to_str(data: bytes, start: int, end: int) -> tuple[int, int]:
    """UTF-8 byte offsets ``[start, end)`` into ``data`` -> ``str`` indices into ``data.decode()``.
    Offsets are clamped to the text; one inside a multi-byte character snaps to that character's
    start (never raises, never yields U+FFFD)."""
    size = len(data)
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    # a prefix cut inside a character decodes without its partial bytes: that is the snap
    s = len(data[:start].decode("utf-8", "ignore"))
    e = len(data[:end].decode("utf-8", "ignore")) if end > start else s
    return s, e


def byte_span_in(pieces: Sequence[bytes], start: int, end: int) -> tuple[int, int, int]:
    """UTF-8 byte offsets into the concatenation of ``pieces`` -> ``(piece, s, e)``: the piece the
    span starts in (the last one when it starts past them all) and ``str`` indices into that piece,
    clipped to it. ``pieces`` must not be empty."""
    base = 0
    last = len(pieces) - 1
    for n, data in enumerate(pieces):
        if start < base + len(data) or n == last:
            s, e = byte_span_to_str(data, start - base, end - base)
            return n, s, e
        base += len(data)
    raise ValueError("byte_span_in: no pieces")


def utf16_to_index(text: str, units: int) -> int:
    """A UTF-16 code unit offset into ``text`` -> its ``str`` index (astral characters are two
    units; an offset inside one or past the end snaps forward to the next character or the end)."""
    count = 0
    for i, ch in enumerate(text):
        if count >= units:
            return i
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def utf16_units(text: str) -> int:
    """``text``'s length in UTF-16 code units (JavaScript's ``length``)."""
    return len(text) + sum(1 for ch in text if ch > "\uffff")
