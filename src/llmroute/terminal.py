"""Terminal-control hygiene for text a provider wrote (answers, titles, URLs, error bodies).

``sanitize(text)`` removes what a terminal would act on instead of print: ECMA-48 escape sequences
(CSI ``ESC [`` … final byte; the OSC, DCS, SOS, PM and APC strings ``ESC ] P X ^ _`` … ended by BEL
or ST, or running unterminated to the end; nF escapes ``ESC (`` …; every other two-character escape),
their 8-bit C1 forms (U+0080 to U+009F), C0 controls except TAB and LF, a CR not followed by LF (a bare
CR returns the cursor, so what follows overwrites the line: only CRLF is kept), DEL, the Unicode bidi
embedding/override/isolate controls (U+202A to U+202E, U+2066 to U+2069) that reorder what is displayed,
and the zero-width characters (U+200B to U+200D, U+2060 to U+2064, U+FEFF, U+180E) that hide text or
make two strings that look alike differ. A ZERO WIDTH JOINER between two emoji is kept: it is what
joins an emoji ZWJ sequence (a family, a profession, a flag), without which the sequence shows as its
members; anywhere else it is removed. Printable text,
non-ASCII included, is untouched; so are the bidi *marks* (U+200E, U+200F, U+061C), which real
right-to-left text needs.

``StreamSanitizer`` does the same on a stream of chunks. It is a state machine over characters, so the
output does not depend on where the chunks were split, and it keeps a state, not the text: an
unterminated OSC swallowing a 50 MB body costs no memory.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["StreamSanitizer", "sanitize", "sanitize_mapped"]

_ESC: Final = "\x1b"
_BEL: Final = "\x07"
_ST8: Final = "\x9c"  # 8-bit String Terminator
_CSI8: Final = "\x9b"
_STRING_OPENERS: Final = frozenset("]PX^_")  # OSC, DCS, SOS, PM, APC after ESC
_STRING_OPENERS8: Final = frozenset("\x9d\x90\x98\x9e\x9f")  # the same as 8-bit C1

# Everything that is not plain text: C0 except TAB/LF (CR is kept only before LF), DEL, C1, bidi
# embeddings/overrides/isolates, zero-width characters.
_ZERO_WIDTH: Final = "\u200b-\u200d\u2060-\u2064\ufeff\u180e"
_ZWJ: Final = "\u200d"
_ZERO_WIDTH_BUT_ZWJ: Final = "\u200b\u200c\u2060-\u2064\ufeff\u180e"  # a ZWJ is decided by its neighbours
_SPECIAL: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069{_ZERO_WIDTH}]")
# A whole sequence or a lone control that ends where it starts, matched in one step (the fast path);
# anything else (a sequence cut by the chunk end or malformed) goes through the state machine.
_WHOLE: Final = re.compile(
    "(?:\x1b\\[|\x9b)[\x20-\x3f]*[\x40-\x7e]"  # CSI
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x9c|\x1b\\\\)"  # strings
    "|\x1b[\x20-\x2f]*[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e]"  # nF, Fp, Fe, Fs
    "|\r(?=[^\n])"  # a bare CR (one at the chunk end waits for the next chunk)
    f"|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x8f\x91-\x97\x99\x9a\x9c\u202a-\u202e\u2066-\u2069{_ZERO_WIDTH_BUT_ZWJ}]+"
)
_CSI_BODY: Final = re.compile("[\x20-\x3f]*")  # parameter and intermediate bytes
_NF_BODY: Final = re.compile("[\x20-\x2f]*")  # intermediate bytes
_STRING_END: Final = re.compile("[\x07\x1b\x9c]")  # BEL, ESC (maybe ST), 8-bit ST

# States of the machine.
_GROUND: Final = 0
_ESCAPE: Final = 1  # after ESC
_CSI: Final = 2  # inside a control sequence
_NF: Final = 3  # inside an nF escape (ESC + intermediates)
_STRING: Final = 4  # inside an OSC/DCS/SOS/PM/APC string
_STRING_ESC: Final = 5  # ESC inside a string: ST if a backslash follows
_CR: Final = 6  # a CR ended the last chunk: kept only if LF comes next
_JOINER: Final = 7  # a ZWJ after an emoji: kept only if an emoji comes next


def _is_emoji(ch: str) -> bool:
    """A code point of an emoji ZWJ sequence's members (Unicode emoji blocks, dingbats and symbols
    used as emoji, the emoji variation selector U+FE0F, skin-tone modifiers, tag characters)."""
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2300 <= cp <= 0x23FF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0xFE0F, 0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139)
        or 0xE0020 <= cp <= 0xE007F
    )


def _is_final(ch: str) -> bool:
    return "\x40" <= ch <= "\x7e"


class StreamSanitizer:
    """Feed chunks, get sanitised text; ``close()`` ends the stream (a sequence still open at the
    end is dropped). For any split of a text, the joined outputs equal ``sanitize(text)``."""

    __slots__ = ("_last", "_state")

    def __init__(self) -> None:
        self._state = _GROUND
        self._last = ""  # the last character kept, for a ZWJ to look back at

    def feed(self, chunk: str) -> str:
        text = self._feed(chunk, [], self._state)
        if text:
            self._last = text[-1]
        return text

    def _feed(self, chunk: str, out: list[str], state: int) -> str:
        i, n = 0, len(chunk)
        while i < n:
            if state == _GROUND:
                m = _SPECIAL.search(chunk, i)
                if m is None:
                    out.append(chunk[i:])
                    break
                j = m.start()
                if j > i:
                    out.append(chunk[i:j])
                whole = _WHOLE.match(chunk, j)
                if whole is not None:
                    i = whole.end()
                    continue
                ch = chunk[j]
                i = j + 1
                if ch == "\r":
                    if i == n:
                        state = _CR
                    elif chunk[i] == "\n":
                        out.append("\r\n")
                        i += 1
                elif ch == _ESC:
                    state = _ESCAPE
                elif ch == _CSI8:
                    state = _CSI
                elif ch in _STRING_OPENERS8:
                    state = _STRING
                elif ch == _ZWJ and _is_emoji(next((p[-1] for p in reversed(out) if p), self._last) or " "):
                    state = _JOINER
                # any other control is dropped
            elif state == _ESCAPE:
                ch = chunk[i]
                if ch == "[":
                    state, i = _CSI, i + 1
                elif ch in _STRING_OPENERS:
                    state, i = _STRING, i + 1
                elif "\x20" <= ch <= "\x2f":
                    state, i = _NF, i + 1
                elif "\x30" <= ch <= "\x7e":  # Fp, Fe, Fs: a complete two-character escape
                    state, i = _GROUND, i + 1
                else:  # not an escape after all: drop the ESC, read ch as text
                    state = _GROUND
            elif state in (_CSI, _NF):
                body = (_CSI_BODY if state == _CSI else _NF_BODY).match(chunk, i)
                i = body.end() if body else i  # the patterns match the empty string: never None
                if i < n:
                    ch = chunk[i]
                    if _is_final(ch) or (state == _NF and "\x30" <= ch <= "\x3f"):
                        i += 1
                    # a malformed sequence ends before ch, which is read again as text
                    state = _GROUND
            elif state == _STRING:
                m = _STRING_END.search(chunk, i)
                if m is None:
                    break  # all of it is string content
                i = m.end()
                state = _STRING_ESC if m.group() == _ESC else _GROUND
            elif state == _CR:
                if chunk[i] == "\n":
                    out.append("\r\n")
                    i += 1
                state = _GROUND  # else the CR was bare: dropped
            elif state == _JOINER:
                if _is_emoji(chunk[i]):
                    out.append(_ZWJ)  # joins two emoji: kept; the emoji is read next as text
                state = _GROUND  # else the joiner joined nothing: dropped
            else:  # _STRING_ESC
                if chunk[i] == "\\":
                    state, i = _GROUND, i + 1
                else:  # the string ends here and the ESC starts a new escape
                    state = _ESCAPE
        self._state = state
        return "".join(out)

    def close(self) -> str:
        """End of stream: whatever sequence is still open is dropped. Returns ``""`` (symmetry with
        ``feed``: callers may append it)."""
        self._state = _GROUND
        return ""


def sanitize(text: str) -> str:
    """``text`` without terminal control sequences, C0/C1 controls (TAB, LF and CRLF kept), bidi
    overrides and zero-width characters. Returns ``text`` itself when there is nothing to remove."""
    if _SPECIAL.search(text) is None:
        return text
    return StreamSanitizer().feed(text)


def sanitize_mapped(text: str) -> tuple[str, list[int]]:
    """``sanitize(text)`` and where each position ``0..len(text)`` lands in it (to place something
    in the sanitised text at a position meant for the original)."""
    if sanitize(text) is text:
        return text, list(range(len(text) + 1))
    machine = StreamSanitizer()
    out: list[str] = []
    where: list[int] = []
    size = 0
    for ch in text:
        where.append(size)
        kept = machine.feed(ch)
        out.append(kept)
        size += len(kept)
    where.append(size)
    return "".join(out), where
