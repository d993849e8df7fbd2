"""terminal.py pinned at the edges of each byte range (CSI final ``@`` and ``~``, nF finals ``0`` and
``~``, every string opener and terminator, 8-bit forms), each case also split at every position
(the streaming state machine must agree with the one-step path)."""

from __future__ import annotations

import pytest

from llmroute.terminal import StreamSanitizer, sanitize

CASES = {
    "csi ending in @": ("a\x1b[2@b", "ab"),
    "csi ending in ~": ("a\x1b[1~b", "ab"),
    "csi with every parameter byte edge": ("a\x1b[\x20\x3f@b", "ab"),
    "8-bit csi": ("a\x9b2@b", "ab"),
    "malformed csi: a DEL where the final should be": ("a\x1b[2\x7fb", "ab"),
    "malformed csi: a letter-free stop at a control": ("a\x1b[2\x07b", "ab"),
    "osc ended by BEL": ("a\x1b]0;title\x07b", "ab"),
    "osc ended by 8-bit ST": ("a\x1b]0;title\x9cb", "ab"),
    "osc ended by ESC backslash": ("a\x1b]0;title\x1b\\b", "ab"),
    "dcs": ("a\x1bPq#0\x1b\\b", "ab"),
    "sos": ("a\x1bXsos\x07b", "ab"),
    "pm": ("a\x1b^pm\x07b", "ab"),
    "apc": ("a\x1b_apc\x07b", "ab"),
    "8-bit osc": ("a\x9d0;t\x07b", "ab"),
    "8-bit dcs": ("a\x90q\x9cb", "ab"),
    "8-bit sos": ("a\x98s\x9cb", "ab"),
    "8-bit pm": ("a\x9ep\x9cb", "ab"),
    "8-bit apc": ("a\x9fp\x9cb", "ab"),
    "ESC inside a string starts a new escape": ("a\x1b]x\x1b[2@b", "ab"),
    "csi with no parameter bytes": ("a\x1b[mX", "aX"),
    "osc with an empty body": ("a\x1b]\x07X", "aX"),
    "nF intermediate '/' (the last one)": ("a\x1b/AX", "aX"),
    "Fp '0' (the first one)": ("a\x1b0X", "aX"),
    "nF final '?' (the last parameter-range final)": ("a\x1b(?X", "aX"),
    "nF cut by a newline: the newline stays": ("a\x1b(\nX", "a\nX"),
    "CRLF followed by text": ("a\r\nbc", "a\r\nbc"),
    "unterminated string runs to the end": ("a\x1b]never ends", "a"),
    "nF with final 0": ("a\x1b(0b", "ab"),
    "nF with final B": ("a\x1b(Bb", "ab"),
    "nF with two intermediates": ("a\x1b\x20\x2f~b", "ab"),
    "nF cut by a control": ("a\x1b(\x07b", "ab"),
    "Fp 7": ("a\x1b7b", "ab"),
    "Fs ~": ("a\x1b~b", "ab"),
    "Fe =": ("a\x1b=b", "ab"),
    "ESC before a non-escape keeps that character": ("a\x1bé", "aé"),
    "ESC before DEL": ("a\x1b\x7fb", "ab"),
    "C0 controls": ("a\x00\x01\x08\x0b\x0c\x0e\x1f\x7fb", "ab"),
    "C1 controls": ("a\x80\x85\x9ab", "ab"),
    "tab and newline kept": ("a\tb\nc", "a\tb\nc"),
    "bidi overrides and isolates": ("a\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069b", "ab"),
    "bidi marks kept": ("a\u200e\u200f\u061cb", "a\u200e\u200f\u061cb"),
    "text next to the ranges kept": ("\u2029\u202f\u2065\u206a\xa0", "\u2029\u202f\u2065\u206a\xa0"),
}


@pytest.mark.parametrize(("text", "expected"), list(CASES.values()), ids=list(CASES))
def test_sanitize(text: str, expected: str) -> None:
    assert sanitize(text) == expected


@pytest.mark.parametrize(("text", "expected"), list(CASES.values()), ids=list(CASES))
def test_every_split_agrees(text: str, expected: str) -> None:
    for cut in range(len(text) + 1):
        s = StreamSanitizer()
        assert s.feed(text[:cut]) + s.feed(text[cut:]) + s.close() == expected, cut
    s = StreamSanitizer()
    assert "".join(s.feed(ch) for ch in text) + s.close() == expected


def test_a_split_csi_ending_in_at() -> None:
    s = StreamSanitizer()
    assert s.feed("x\x1b") == "x"
    assert s.feed("[") == ""
    assert s.feed("2") == ""
    assert s.feed("@y") == "y"


def test_close_drops_an_open_sequence_and_resets() -> None:
    s = StreamSanitizer()
    assert s.feed("a\x1b]title") == "a"
    assert s.close() == ""
    assert s.feed("b") == "b"
    s.feed("\x1b[2")
    s.close()
    assert s.feed("@") == "@"


def test_clean_text_is_the_same_object() -> None:
    text = "plain text, ünïcode ✓"
    assert sanitize(text) is text


def test_sanitize_mapped_says_where_each_position_lands() -> None:
    from llmroute.terminal import sanitize_mapped

    assert sanitize_mapped("plain") == ("plain", [0, 1, 2, 3, 4, 5])
    assert sanitize_mapped("a\x1b[2@b") == ("ab", [0, 1, 1, 1, 1, 1, 2])
    assert sanitize_mapped("a\r\nb") == ("a\r\nb", [0, 1, 1, 3, 4])
    assert sanitize_mapped("\u202eab\x07") == ("ab", [0, 0, 1, 2, 2])
