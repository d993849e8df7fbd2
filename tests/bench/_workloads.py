"""Recorded provider streams, lengthened to any number of text events for the socket benchmarks.

Each workload is a real recording from ``cassettes/`` cut into its SSE events (separators kept, so
Gemini's CRLF stays CRLF): the events before the first text delta, the text deltas (cycled to reach
``n``), and the events after them. The bytes on the wire are the provider's own; only their count
changes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

from llmroute.testing import Cassette

ROOT = Path(__file__).resolve().parents[2]


class Workload:
    __slots__ = ("head", "name", "separator", "tail", "texts")

    def __init__(self, name: str, cassette: str, is_text: Callable[[bytes], bool]) -> None:
        body = Cassette.load(ROOT / "cassettes" / cassette).interactions[0].response.body
        self.name = name
        self.separator = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
        events = [e + self.separator for e in body.split(self.separator) if e.strip()]
        first = next(i for i, e in enumerate(events) if is_text(e))
        last = max(i for i, e in enumerate(events) if is_text(e))
        self.head = events[:first]
        self.texts = events[first : last + 1]
        self.tail = events[last + 1 :]

    def events(self, n: int) -> list[bytes]:
        """The recording with exactly ``n`` text-delta events."""
        texts = self.texts
        return [*self.head, *(texts[i % len(texts)] for i in range(n)), *self.tail]

    def body(self, n: int) -> bytes:
        return b"".join(self.events(n))


@cache
def workloads() -> dict[str, Workload]:
    return {
        w.name: w
        for w in (
            Workload(
                "chat",
                "opencode/openai-chat/streams-text.yaml",
                lambda e: b'"delta":{"content":"' in e and b'"content":""' not in e,
            ),
            Workload(
                "anthropic",
                "opencode/anthropic-messages/streams-text.yaml",
                lambda e: b'"text_delta"' in e,
            ),
            Workload(
                "gemini",
                "vercel-ai/google/google-text.chunks.yaml",
                lambda e: b'"text":"' in e and b"finishReason" not in e,
            ),
        )
    }
