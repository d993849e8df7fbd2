"""``GroundedAnswer``: one provider-neutral shape for a search-grounded answer.

Every renderer (``[n]`` markers, ``[Source](url)`` cited answers, the Markdown report) is a pure
function of this value, so provider quirks (Gemini's UTF-8 byte offsets, Anthropic's block-level
citations, OpenAI's marker spans) are resolved once, when the answer is built, and tested once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ..schema.usage import Usage

__all__ = ["CitedSpan", "GroundedAnswer", "Source", "marker_groups", "splice"]


class Source(msgspec.Struct, frozen=True, omit_defaults=True):
    """One source the answer may cite."""

    url: str | None = None
    """The source's URL (``None``: the provider gave none; renderers show ``No URI``)."""
    title: str | None = None
    """Its title (``None``: none given; renderers show ``Untitled``)."""


class CitedSpan(msgspec.Struct, frozen=True, omit_defaults=True):
    """``text[start:end]`` of the answer is supported by ``sources``. ``start``/``end`` are ``None``
    when the provider gave no usable span: the sources are listed but no marker is placed."""

    start: int | None
    """Where the span starts in ``GroundedAnswer.text`` (a Python ``str`` index)."""
    end: int | None
    """Where it ends, exclusive."""
    sources: tuple[int, ...]
    """0-based indices into ``GroundedAnswer.sources``, as the provider gave them (may repeat)."""


class GroundedAnswer(msgspec.Struct, frozen=True, omit_defaults=True):
    """A provider's answer to a search, normalised: text, sources and the citations binding them."""

    text: str
    """The answer text, thought parts excluded."""
    sources: tuple[Source, ...] = ()
    """The sources, in the provider's order."""
    citations: tuple[CitedSpan, ...] = ()
    """Spans of ``text`` bound to sources."""
    queries: tuple[str, ...] = ()
    """The search queries the provider ran."""
    provider: str | None = None
    """Who answered (``google``, ``openai``, ...)."""
    model: str | None = None
    """The model that answered."""
    usage: Usage | None = None
    """The answering call's token counts."""

    @classmethod
    def from_parts(
        cls,
        *,
        text: str,
        sources: Iterable[tuple[str | None, str | None] | Source] = (),
        citations: Iterable[tuple[int | None, int | None, Iterable[int]] | CitedSpan] = (),
        queries: Iterable[str] = (),
        provider: str | None = None,
        model: str | None = None,
        usage: Usage | None = None,
    ) -> GroundedAnswer:
        """Build an answer by hand: ``sources`` as ``(url, title)`` pairs, ``citations`` as
        ``(start, end, [source index, ...])`` with ``str`` indices and 0-based source indices.
        Raises ``ValueError`` naming the first span or index that does not fit."""
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        srcs = tuple(s if isinstance(s, Source) else Source(s[0], s[1]) for s in sources)
        spans: list[CitedSpan] = []
        for n, c in enumerate(citations):
            span = c if isinstance(c, CitedSpan) else CitedSpan(c[0], c[1], tuple(c[2]))
            _check_span(span, n, len(text), len(srcs))
            spans.append(span)
        return cls(text, srcs, tuple(spans), tuple(queries), provider, model, usage)

    def validate(self) -> GroundedAnswer:
        """Check every span and source index against ``text`` and ``sources``; returns ``self``."""
        for n, span in enumerate(self.citations):
            _check_span(span, n, len(self.text), len(self.sources))
        return self


def _check_span(span: CitedSpan, n: int, length: int, n_sources: int) -> None:
    start, end = span.start, span.end
    if (start is None) != (end is None):
        raise ValueError(f"citation {n}: start and end must both be set or both be None")
    if start is not None and end is not None and not 0 <= start <= end <= length:
        raise ValueError(f"citation {n}: span {start}:{end} is outside the text (length {length})")
    for index in span.sources:
        if not 0 <= index < n_sources:
            raise ValueError(f"citation {n}: source index {index} is out of range ({n_sources} sources)")


def marker_groups(answer: GroundedAnswer) -> list[tuple[int, tuple[int, ...]]]:
    """Where markers go: for each end position (ascending), the unique source indices of every
    citation ending there, ascending. Citations without a span place no marker."""
    at: dict[int, set[int]] = {}
    for span in answer.citations:
        if span.end is None or not span.sources:
            continue
        at.setdefault(span.end, set()).update(span.sources)
    return [(pos, tuple(sorted(at[pos]))) for pos in sorted(at)]


def splice(text: str, insertions: Sequence[tuple[int, str]]) -> str:
    """``text`` with each ``(position, insert)`` placed at its ``str`` index (positions ascending,
    clamped to the text). Linear in the size of the result."""
    out: list[str] = []
    prev = 0
    for pos, insert in insertions:
        pos = min(max(pos, prev), len(text))
        out.append(text[prev:pos])
        out.append(insert)
        prev = pos
    out.append(text[prev:])
    return "".join(out)
