"""Helpers every protocol uses: typed frame decoding, block lifecycle, tool-input accumulation,
and lowering of tools (``lower_tools``; hosted ones through each protocol's ``HOSTED_TOOLS`` table
by ``lower_hosted``), tool results and media. Quirk-free by design: quirks live in the protocol
modules."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import msgspec

from ..route.decoding import MAX_JSON_DEPTH, RAW_LIMIT, decode_json, json_too_deep, value_too_deep
from ..schema.content import MediaPart, TextPart
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.events import (
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
)
from ..schema.options import CachePolicy
from ..schema.tools import HostedTool, ToolDefinition, ToolSpec

__all__ = [
    "RAW_LIMIT",
    "Blocks",
    "ToolInput",
    "cache_targets",
    "content_parts",
    "data_url",
    "decode_frame",
    "json_arguments",
    "lower_hosted",
    "lower_tools",
    "ns",
    "only_fields",
    "parse_tool_input",
    "result_text",
    "with_options",
]

T = TypeVar("T")

_json_encoder = msgspec.json.Encoder()


# Decode one frame payload: the typed decoder first, then on failure invalid UTF-8 is replaced and
# malformed JSON, wrong types or nesting too deep are an ``InvalidProviderOutputError`` (see
# ``route.decoding.decode_json``). An alias, not a wrapper: it runs once per streamed event.
decode_frame = decode_json


def lower_hosted(table: Mapping[str, Callable[..., T]], tool: HostedTool, protocol: str, *args: Any) -> T:
    """``tool`` lowered by its entry in a protocol's ``HOSTED_TOOLS`` table (kind -> lowering, the
    one place a protocol declares the hosted tools it offers); a kind with no entry is an
    ``InvalidRequestError`` naming the kinds it has."""
    lower = table.get(tool.kind)
    if lower is None:
        offered = ", ".join(sorted(table)) or "none"
        raise InvalidRequestError(f"{protocol} has no hosted {tool.kind!r} tool (supported: {offered})")
    return lower(tool, *args)


def lower_tools(
    tools: Iterable[ToolSpec],
    lower_tool: Callable[[ToolDefinition], T],
    lower_hosted: Callable[[HostedTool], T | None],
) -> list[T]:
    """A request's tools in order: function tools by ``lower_tool``, hosted ones by ``lower_hosted``
    (``None``: the tool lowers somewhere else than the tools list, as Anthropic's MCP servers do)."""
    out: list[T] = []
    for tool in tools:
        lowered = lower_hosted(tool) if isinstance(tool, HostedTool) else lower_tool(tool)
        if lowered is not None:
            out.append(lowered)
    return out


def only_fields(
    struct: type[msgspec.Struct], keep: dict[str, Any], skip: Sequence[str] = ()
) -> type[msgspec.Struct]:
    """A decoding type for the one common shape of ``struct`` (a hot path): the ``keep`` fields
    with the types given, the ``skip`` fields not decoded, and every other field absent or null,
    else decoding fails and the caller takes its general path. Built from ``struct``'s own fields,
    so a field added there later is covered at once."""
    fields: list[Any] = [
        (name, keep[name]) if name in keep else (name, None, None)
        for name in struct.__struct_fields__
        if name not in skip
    ]
    return msgspec.defstruct(f"{struct.__name__}Only", fields)


def parse_tool_input(raw: str) -> Any:
    """Streamed tool arguments -> a JSON value. Empty means ``{}``; text that is not JSON (or nests
    past ``MAX_JSON_DEPTH``: model output a prompt injection can shape) is kept as the raw string, so
    nothing is lost and the tool runtime can report it to the model."""
    if not raw.strip():
        return {}
    if json_too_deep(raw):
        return raw
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return raw


class Blocks:
    """Open/close bookkeeping for text and reasoning blocks, so every protocol emits the same
    ordering: start before deltas, end after, everything closed before the step finishes. A block
    id that has ended is never opened again: a provider stream asking for that (text for a part
    another part already closed) is malformed, an ``InvalidProviderOutputError`` naming the id. The
    check costs a set lookup per block opened, nothing per delta."""

    __slots__ = ("_counter", "_ended_reasoning", "_ended_text", "reasoning", "text")

    def __init__(self) -> None:
        self.text: str | None = None
        self.reasoning: str | None = None
        self._counter = 0
        self._ended_text: set[str] = set()
        self._ended_reasoning: set[str] = set()

    def _next(self, kind: str) -> str:
        id = f"{kind}-{self._counter}"
        self._counter += 1
        return id

    def _switch(
        self,
        current: str | None,
        start: Callable[[str, dict[str, Any] | None], LLMEvent],
        end: Callable[[str], LLMEvent],
        ended: set[str],
        kind: str,
        id: str | None,
        metadata: dict[str, Any] | None,
        out: list[LLMEvent],
    ) -> str:
        """Close ``current`` (if open) and open block ``id`` (a new id when ``None``)."""
        if id is not None and id in ended:
            raise InvalidProviderOutputError(f"{kind} block {id!r} opened again after it ended")
        if current is not None:
            out.append(end(current))
            ended.add(current)
        opened = id or self._next(kind)
        out.append(start(opened, metadata))
        return opened

    def text_delta(
        self, text: str, out: list[LLMEvent], id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> str:
        """More text; opens a block first when none is open or ``id`` names another one
        (``metadata`` goes on that ``text-start``)."""
        current = self.text
        if current is None or (id is not None and id != current):
            current = self.text = self._switch(
                current, TextStart, TextEnd, self._ended_text, "text", id, metadata, out
            )
        if text:
            out.append(TextDelta(current, text))
        return current

    def reasoning_delta(
        self, text: str, out: list[LLMEvent], id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> str:
        current = self.reasoning
        if current is None or (id is not None and id != current):
            current = self.reasoning = self._switch(
                current, ReasoningStart, ReasoningEnd, self._ended_reasoning, "reasoning", id, metadata, out
            )
        if text:
            out.append(ReasoningDelta(current, text))
        return current

    def reasoning_ended(self, id: str) -> bool:
        """Reasoning block ``id`` has ended (opening it again would be refused)."""
        return id in self._ended_reasoning

    def end_text(self, out: list[LLMEvent], metadata: dict[str, Any] | None = None) -> None:
        if self.text is not None:
            out.append(TextEnd(self.text, metadata))
            self._ended_text.add(self.text)
            self.text = None

    def end_reasoning(
        self,
        out: list[LLMEvent],
        signature: str | None = None,
        encrypted: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if self.reasoning is not None:
            out.append(ReasoningEnd(self.reasoning, signature, encrypted, metadata))
            self._ended_reasoning.add(self.reasoning)
            self.reasoning = None

    def close(self, out: list[LLMEvent]) -> None:
        self.end_reasoning(out)
        self.end_text(out)


class ToolInput:
    """One streamed tool call: start, argument fragments, then exactly one parsed ``tool-call``."""

    __slots__ = ("chunks", "done", "id", "metadata", "name", "provider_executed")

    def __init__(
        self,
        id: str,
        name: str,
        out: list[LLMEvent],
        provider_executed: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.chunks: list[str] = []
        self.done = False
        self.provider_executed = provider_executed
        self.metadata = metadata
        out.append(ToolInputStart(id, name, provider_executed))

    def delta(self, text: str, out: list[LLMEvent]) -> None:
        if text:
            if self.done:  # the call went out with its input: a later piece would be lost or contradict it
                raise InvalidProviderOutputError(
                    f"tool call {self.name!r} ({self.id!r}): input after the call ended"
                )
            self.chunks.append(text)
            out.append(ToolInputDelta(self.id, self.name, text))

    def finish(self, out: list[LLMEvent], input: Any = None, raw: str | None = None) -> ToolCall | None:
        """Emit input-end and the parsed call (``input`` overrides the streamed text when the provider
        sends final arguments separately)."""
        if self.done:
            return None
        self.done = True
        out.append(ToolInputEnd(self.id, self.name))
        if input is None:
            input = parse_tool_input(raw if raw is not None else "".join(self.chunks))
        elif value_too_deep(input):  # decoded whole by the provider's frame: bounded like text
            raise InvalidProviderOutputError(
                f"tool call {self.name!r}: arguments nested deeper than {MAX_JSON_DEPTH} levels"
            )
        call = ToolCall(self.id, self.name, input, self.provider_executed, self.metadata)
        out.append(call)
        return call


def content_parts(result: Any) -> tuple[TextPart | MediaPart, ...] | None:
    """The parts of a tool result given as content (text and images), else ``None``."""
    if not isinstance(result, tuple | list) or not result:
        return None
    items: tuple[Any, ...] = tuple(cast("Sequence[Any]", result))
    if all(isinstance(p, TextPart | MediaPart) for p in items):
        return items
    return None


def json_arguments(value: Any) -> str:
    """Tool-call input as the JSON text Chat-style APIs carry (a raw string stays as it was)."""
    return value if isinstance(value, str) else _json_encoder.encode(value).decode()


def result_text(result: Any) -> str:
    """A tool result as the text most chat-style APIs accept."""
    if isinstance(result, str):
        return result
    parts = content_parts(result)
    if parts is not None:
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return _json_encoder.encode(result).decode()


def ns(metadata: dict[str, Any] | None, namespace: str) -> dict[str, Any]:
    """``metadata[namespace]`` when it is a dict (a part's provider metadata), else empty."""
    value: Any = metadata.get(namespace) if metadata else None
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def breakpoint_ttl(policy: CachePolicy) -> str | None:
    """A breakpoint's ``ttl`` (Anthropic, Bedrock): the policy's, ``24h`` as their longest, ``1h``."""
    return "1h" if policy.ttl == "24h" else policy.ttl


def cache_targets(policy: CachePolicy, *, tools: bool, system: bool, messages: int) -> list[str | int]:
    """Where prompt-cache breakpoints go, most valuable first: ``"tools"``, ``"system"``, then
    message indices newest first (the last ``policy.messages``). Callers stop at their budget."""
    targets: list[str | int] = []
    if policy.tools and tools:
        targets.append("tools")
    if policy.system and system:
        targets.append("system")
    if policy.messages > 0:
        targets.extend(range(messages - 1, max(messages - policy.messages, 0) - 1, -1))
    return targets


def data_url(part: MediaPart) -> str:
    if part.is_url:
        return part.data  # type: ignore[return-value]
    return f"data:{part.mime_type};base64,{part.base64()}"


def with_options(body: T, options: dict[str, Any]) -> T | dict[str, Any]:
    """Provider options become top-level body keys. They may add fields, never replace one built
    from the request (that would silently drop what the caller asked for)."""
    if not options:
        return body
    data: dict[str, Any] = dict(body) if isinstance(body, dict) else msgspec.to_builtins(body)  # pyright: ignore[reportUnknownArgumentType]
    clash = sorted(k for k in options if k in data)
    if clash:
        raise InvalidRequestError(
            f"provider option(s) {', '.join(clash)} clash with fields built from the request"
        )
    data.update(options)
    return data
