"""``llmroute.terminal``: ``sanitize`` / ``StreamSanitizer``: every ECMA-48 family, 8-bit C1, bidi overrides, and
split invariance checked against an independent regex oracle."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmroute.terminal import StreamSanitizer, sanitize

ESC = "\x1b"

CASES: list[tuple[str, str, str]] = [
    # (family, input, expected)
    ("plain ascii", "hello, world", "hello, world"),
    ("non-ascii untouched", "Größe 東京タワー 🗼 café — ½ ‏עברית‎", "Größe 東京タワー 🗼 café — ½ ‏עברית‎"),
    ("tab lf cr kept", "a\tb\nc\r\nd", "a\tb\nc\r\nd"),
    ("csi sgr colour", f"{ESC}[31mred{ESC}[0m text", "red text"),
    ("csi with params and intermediates", f"a{ESC}[?25;1 qb", "ab"),
    ("csi cursor move and clear", f"x{ESC}[2J{ESC}[1;1Hy", "xy"),
    ("csi unterminated at end", f"ok{ESC}[38;5;", "ok"),
    ("csi aborted by a non-final char keeps the char", f"a{ESC}[12\nb", "a\nb"),
    ("csi 8-bit", "a\x9b31mb\x9b0mc", "abc"),
    ("osc title bel", f"{ESC}]0;pwned title\x07after", "after"),
    ("osc 8 hyperlink st", f"{ESC}]8;;https://evil.test{ESC}\\click{ESC}]8;;{ESC}\\", "click"),
    ("osc 52 clipboard write", f"x{ESC}]52;c;cm0gLXJmIH4K\x07y", "xy"),
    ("osc unterminated swallows the rest", f"safe{ESC}]0;title and then everything", "safe"),
    ("osc 8-bit opener and 8-bit st", "a\x9d0;t\x9cb", "ab"),
    ("osc ended by another escape", f"a{ESC}]0;t{ESC}[31mb", "ab"),
    ("dcs", f"a{ESC}Pq#0;2;0;0;0#1~~{ESC}\\b", "ab"),
    ("dcs 8-bit", "a\x90payload\x9cb", "ab"),
    ("sos", f"a{ESC}Xstring{ESC}\\b", "ab"),
    ("sos 8-bit", "a\x98s\x07b", "ab"),
    ("pm", f"a{ESC}^privacy{ESC}\\b", "ab"),
    ("pm 8-bit", "a\x9ep\x9cb", "ab"),
    ("apc", f"a{ESC}_Gf=100;AAAA{ESC}\\b", "ab"),
    ("apc 8-bit unterminated", "a\x9fkitty graphics", "a"),
    ("fe two-char escapes", f"a{ESC}Db{ESC}Ec{ESC}Md", "abcd"),
    ("fp and fs escapes", f"a{ESC}7b{ESC}8c{ESC}cd", "abcd"),
    ("nf charset designation", f"a{ESC}(0lqk{ESC}(Bb", "alqkb"),
    ("lone esc at end", f"abc{ESC}", "abc"),
    ("esc before a non-escape char", f"a{ESC}\nb{ESC}éc", "a\nbéc"),
    ("c0 controls", "a\x00b\x07c\x08d\x0be\x0cf\x0eg\x1fh\x7fi", "abcdefghi"),
    ("other c1 controls", "a\x80b\x85c\x8dd\x9ae", "abcde"),
    (
        "bidi overrides and isolates",
        "a\u202eevil\u202cb\u2066c\u2069d\u202ae\u202bf\u202dg\u2067h\u2068i",
        "aevilbcdefghi",
    ),
    ("bidi marks kept", "a\u200eb\u200fc\u061cd", "a\u200eb\u200fc\u061cd"),
    # a bare CR returns the cursor: "safe" would be overwritten by what follows on a terminal
    ("bare cr dropped", "rm -rf /\rsafe\r\nok\r", "rm -rf /safe\r\nok"),
    ("cr before cr lf", "a\r\r\nb", "a\r\nb"),
    (
        "zero-width characters dropped",
        "pay\u200bpal.com \u200cx\u200dy\u2060z\ufeffw\u180ev\u2061\u2064",
        "paypal.com xyzwv",
    ),
]


def test_a_zwj_inside_an_emoji_sequence_is_kept_and_removed_elsewhere() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one family, not three people
    heart = "\U0001f9d1\u200d\u2764\ufe0f\u200d\U0001f9d1"
    assert sanitize(family) == family and sanitize(heart) == heart
    assert sanitize("pay\u200dpal") == "paypal"  # between letters it only hides a difference
    assert sanitize("\U0001f468\u200d!") == "\U0001f468!" and sanitize("a\u200d\U0001f469") == "a\U0001f469"
    s = StreamSanitizer()  # split right after the joiner
    assert s.feed("\U0001f468\u200d") + s.feed("\U0001f469") + s.close() == "\U0001f468\u200d\U0001f469"


@pytest.mark.parametrize(("family", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_sequence_family_is_removed_and_text_is_kept(family: str, text: str, expected: str) -> None:
    assert sanitize(text) == expected
    # and byte by byte through the stream sanitizer
    s = StreamSanitizer()
    assert "".join(s.feed(ch) for ch in text) + s.close() == expected


def test_clean_text_is_returned_as_is() -> None:
    text = "no controls here: 東京 🗼"
    assert sanitize(text) is text


def test_close_resets_an_open_sequence() -> None:
    s = StreamSanitizer()
    assert s.feed(f"a{ESC}]0;never ends") == "a"
    assert s.close() == ""
    assert s.feed("fresh") == "fresh"


# An independent oracle: one regex for "one sequence or control", removed everywhere.
_C1_STRING = "\x9d\x90\x98\x9e\x9f"
ORACLE = re.compile(
    rf"""
    (?: \x1b[\]PX^_] | [{_C1_STRING}] ) .*? (?: \x07 | \x9c | \x1b\\ | (?=\x1b) | \Z )
  | (?: \x1b\[ | \x9b ) [\x20-\x3f]* [\x40-\x7e]?
  | \x1b [\x20-\x2f]+ [\x30-\x7e]?
  | \x1b [\x30-\x7e]?
  | \r(?!\n)
  | [\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b\u200c\u2060-\u2064\ufeff\u180e]
  | \u200d
    """,
    re.S | re.X,
)
# the emoji of ZWJ sequences, for the oracle (an independent, coarser list than the sanitiser's)
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2300-\u23ff\u2b00-\u2bff\ufe0f]")


def oracle(text: str) -> str:
    """Every match of ``ORACLE`` removed, but a ZWJ kept where it joins two emoji: after an emoji
    of the output and before an emoji of the input (a family stays one family)."""
    out: list[str] = []
    at = 0
    for m in ORACLE.finditer(text):
        out.append(text[at : m.start()])
        at = m.end()
        if m.group() == "\u200d":
            before = "".join(out)[-1:]
            if before and _EMOJI.match(before) and _EMOJI.match(text[at : at + 1]):
                out.append("\u200d")
    out.append(text[at:])
    return "".join(out)


ALPHABET = st.sampled_from(
    [ESC, "[", "]", "P", "X", "^", "_", "\\", "\x07", "\x9b", "\x9c", "\x9d", "\x90", "\x9f", "(", "B",
     "0", ";", "3", "1", "m", "?", " ", "a", "é", "東", "🗼", "\n", "\t", "\r", "\x00", "\x7f", "\u202e", "\u200f", "\u200b", "\u200d", "\u200d", "👨", "\ufe0f", "\ufeff"]
)  # fmt: skip
TEXTS = st.lists(ALPHABET, max_size=60).map("".join)


@settings(max_examples=400)
@given(TEXTS)
def test_matches_the_regex_oracle(text: str) -> None:
    assert sanitize(text) == oracle(text)


@settings(max_examples=400)
@given(TEXTS, st.lists(st.integers(0, 60), max_size=8))
def test_any_split_gives_the_same_output(text: str, cuts: list[int]) -> None:
    bounds = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    s = StreamSanitizer()
    assert "".join(s.feed(c) for c in chunks) + s.close() == sanitize(text)


@given(st.text())
def test_output_has_no_control_left_and_is_idempotent(text: str) -> None:
    out = sanitize(text)
    assert oracle(out) == out  # nothing left to remove: a ZWJ only between two emoji
    assert sanitize(out) == out
    it = iter(text)
    assert all(ch in it for ch in out)  # a subsequence of the input: nothing is ever added
