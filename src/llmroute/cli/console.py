"""An event stream written to a terminal: what ``llmroute demo`` and ``llmroute chat`` print.

Colour only on a TTY without ``NO_COLOR`` (https://no-color.org) and not on ``TERM=dumb``.
Reasoning past ``reasoning_limit`` is not printed, but never silently: a TTY sees a live count of
the hidden characters, any other output one line with the total. Everything a provider wrote (text,
reasoning, tool names and inputs, titles, quotes) passes ``terminal.sanitize`` first: a stream is
cleaned as one, whatever its chunks, so no escape sequence it sends reaches the terminal.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from ..schema.events import LLMEvent
from ..terminal import StreamSanitizer, sanitize

__all__ = ["Renderer", "Style", "use_color"]


def use_color(out: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


class Style:
    """ANSI attributes, or empty strings when colour is off."""

    def __init__(self, color: bool) -> None:
        self.bold = "\033[1m" if color else ""
        self.dim = "\033[2m" if color else ""
        self.cyan = "\033[36m" if color else ""
        self.reset = "\033[0m" if color else ""


def short(value: Any, limit: int = 100) -> str:
    """``value`` (its repr unless a str) sanitised, on one line, cut to ``limit`` characters."""
    text = " ".join(sanitize(value if isinstance(value, str) else repr(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Renderer:
    """Writes events as they come (``write(event)``), flushing after each one it shows."""

    def __init__(self, out: TextIO, *, color: bool, live: bool, reasoning_limit: int | None = None) -> None:
        self.out = out
        self.style = Style(color)
        self.live = live  # a TTY: the hidden-reasoning counter updates in place
        self.reasoning_limit = reasoning_limit
        self._shown = 0
        self._hidden = 0
        self._counter = ""
        self._blocks: dict[str, list[str]] = {}  # raw text per block: citation offsets index it
        self._clean: dict[tuple[str, str], StreamSanitizer] = {}  # per open (kind, block id)

    def _hidden_note(self) -> str:
        return f" (+{self._hidden} chars)"

    def write(self, event: LLMEvent) -> None:
        out, s = self.out, self.style
        limit = self.reasoning_limit
        match event.type:
            case "reasoning-start":
                out.write(f"{s.dim}[thinking] ")
                self._shown = self._hidden = 0
                self._counter = ""
            case "reasoning-delta":
                text = self._sanitizer("reasoning", event.id).feed(event.text)
                if limit is None:
                    out.write(text)
                elif self._shown < limit:
                    visible = text[: limit - self._shown].replace("\n", " ")
                    self._shown += len(text)
                    out.write(visible)
                    if self._shown >= limit:
                        out.write(" …")
                        self._hidden = self._shown - limit
                else:
                    self._hidden += len(text)
                    if self.live:
                        note = self._hidden_note()
                        out.write("\b" * len(self._counter) + note)
                        self._counter = note
            case "reasoning-end":
                self._clean.pop(("reasoning", event.id), None)  # an open escape at the end is dropped
                if self._hidden and not self.live:
                    out.write(self._hidden_note())
                if event.encrypted and self._shown == 0:
                    out.write(f"(encrypted, {len(event.encrypted)} chars, carried into the next turn)")
            case "text-start":
                out.write(f"{s.reset}\n")
            case "text-delta":
                self._blocks.setdefault(event.id, []).append(event.text)
                out.write(self._sanitizer("text", event.id).feed(event.text))
            case "text-end":
                self._clean.pop(("text", event.id), None)
                return
            case "tool-call":
                who = "hosted " if event.provider_executed else ""
                out.write(f"{s.reset}\n  -> {who}tool call {event.name}({short(event.input)})")
            case "tool-result" if event.provider_executed:
                out.write(f"\n  <- hosted result for {event.name}: {short(event.result)}")
            case "tool-error":
                out.write(f"\n  !! tool {event.name} failed: {short(event.message)}")
            case "citation":
                text = "".join(self._blocks.get(event.block_id, ()))
                quoted = (
                    text[event.start : event.end] if event.start is not None else (event.cited_text or "")
                )
                source = event.title or event.url or ""
                out.write(f'\n  [cite] "{short(" ".join(quoted.split()), 60)}" <- {short(source, 60)}')
            case "finish":
                usage = event.usage
                tokens = (
                    f"{usage.input_tokens} in / {usage.output_tokens} out" if usage else "no usage reported"
                )
                out.write(f"{s.reset}\n  finish: {event.reason}, {tokens}\n")
            case _:
                return
        out.flush()

    def _sanitizer(self, kind: str, block: str) -> StreamSanitizer:
        clean = self._clean.get((kind, block))
        if clean is None:
            clean = self._clean[kind, block] = StreamSanitizer()
        return clean
