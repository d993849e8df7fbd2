"""``anthropic_messages``, frames -> events: section 5 of the six (the stream decoders,
``step`` and one small handler per event type, ``whole``, ``on_halt``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, cast

import msgspec

from ...framing.sse import SSEEvent
from ...route.classify import from_stream_event
from ...route.decoding import DECODE_ERRORS
from ...schema.errors import InvalidProviderOutputError
from ...schema.events import (
    Citation,
    FinishReason,
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
)
from ...schema.usage import Usage
from ...schema.usage_read import usage_from_uncached
from .._output_tool import AnswerInput
from .._shared import ToolInput, decode_frame
from ..anthropic_server_tools import on_server_tool_result, on_web_search_tool_result
from .state import REDACTED, TEXT, THINKING, TOOL, AnthropicState, OpenBlock
from .wire import NAME, NAMESPACE, BlockIn, Delta, Event, MessageIn

_decoder = msgspec.json.Decoder(Event)
_EVENT = f"{NAME} event"  # what a malformed frame is called in the error
_whole_decoder = msgspec.json.Decoder(MessageIn)


# Nearly every event of a text stream: a ``text_delta`` with nothing else. Any other key (a field
# added later, a null, anything the general Structs would read) fails this decode and takes the
# general path, so both give the same events (tests/unit/test_hot_paths.py); it builds only these
# few fields, untracked by the GC.
class _TextDeltaOnly(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["text_delta"]
    text: str


class _TextEventOnly(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: Literal["content_block_delta"]
    delta: _TextDeltaOnly
    index: int = 0


_text_decode = msgspec.json.Decoder(_TextEventOnly).decode

# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "pause_turn": "tool-calls",  # resend the conversation to continue (see the module docstring)
    "refusal": "content-filter",
}


def step(state: AnthropicState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    data = frame if isinstance(frame, bytes) else frame.data
    block = state.text
    if block is not None:  # hot path: while a text block is open nearly every event adds text to it
        try:
            lean = _text_decode(data)
        except DECODE_ERRORS:
            pass
        else:
            if lean.index == block.index:
                text = lean.delta.text
                out.append(TextDelta(block.id, text))
                block.length += len(text)
                return
    event = decode_frame(_decoder, data, _EVENT)
    kind = event.type
    if kind == "content_block_delta":
        delta = event.delta
        if delta is not None and delta.type == "text_delta" and (text := delta.text) is not None:
            block = state.open.get(event.index)
            if block is not None and block.kind == TEXT:
                out.append(TextDelta(block.id, text))
                block.length += len(text)
                return
        _on_content_block_delta(state, event, out)
        return
    handler = _HANDLERS.get(kind)
    if handler is not None:
        handler(state, event, out)
    # ping and event types added after this was written are ignored


def whole(state: AnthropicState, body: bytes, out: list[LLMEvent]) -> None:
    """A whole Message reads as a stream whose ``message_start`` carries everything."""
    message = decode_frame(_whole_decoder, body, f"{NAME} response")
    if message.type == "error":
        _on_error(state, Event("error", error=message.error), out)
    _on_message_start(state, Event(message=message), out)
    if message.stop_reason is None:  # no stop reason: still a finish (``unknown``), as streamed
        _on_message_delta(state, Event(delta=Delta()), out)
    _on_message_stop(state, Event(), out)


def _on_message_start(state: AnthropicState, event: Event, out: list[LLMEvent]) -> None:
    message = event.message
    if message is None:
        return
    if state.started and not state.done:
        if _benign_repeat(state, message):
            return
        raise InvalidProviderOutputError(f"{NAME}: message_start inside an open message")
    state.started = True
    state.metadata = {"id": message.id, "model": message.model}
    if message.usage:
        state.raw_usage.update(message.usage)
    for index, block in enumerate(message.content or ()):  # the message arrives whole
        _on_content_block_start(state, Event(index=index, content_block=block), out)
        _on_content_block_stop(state, Event(index=index), out)
    if message.stop_reason is not None:
        delta = Delta(
            stop_reason=message.stop_reason, stop_sequence=message.stop_sequence, container=message.container
        )
        _on_message_delta(state, Event(delta=delta), out)


def _benign_repeat(state: AnthropicState, message: MessageIn) -> bool:
    """Some Anthropic-compatible endpoints send ``message_start`` twice: the same id again, before
    any content, is that duplicate (ignored); another id, or one after content, is a new message."""
    known = (state.metadata or {}).get("id")
    return known is not None and message.id == known and not state.indices and not message.content


def _on_content_block_start(state: AnthropicState, event: Event, out: list[LLMEvent]) -> None:
    block = event.content_block
    if block is None:
        return
    index = event.index
    if index in state.indices:  # reopening would orphan or repeat a block the caller already saw
        raise InvalidProviderOutputError(f"{NAME}: content_block_start for used index {index}")
    state.indices.add(index)
    kind = block.type
    if kind == "text":
        opened = state.text = OpenBlock(TEXT, f"text-{index}", index)
        out.append(TextStart(opened.id))
        if block.text:
            out.append(TextDelta(opened.id, block.text))
            opened.length = len(block.text)
        opened.citations.extend(block.citations or ())
    elif kind in ("thinking", "redacted_thinking"):
        opened = OpenBlock(THINKING if kind == "thinking" else REDACTED, f"reasoning-{index}")
        out.append(ReasoningStart(opened.id))
        if block.thinking:
            out.append(ReasoningDelta(opened.id, block.thinking))
        opened.signature = block.signature or None
        opened.data = block.data
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        opened = OpenBlock(TOOL, block.id or f"toolu_{index}")
        if opened.id in state.tool_ids:
            raise InvalidProviderOutputError(f"{NAME}: tool use id {opened.id!r} repeated")
        state.tool_ids.add(opened.id)
        name = block.name or ""
        meta: dict[str, Any] | None = None
        if kind != "tool_use":
            state.server_names[opened.id] = name
            info: dict[str, Any] = {"type": kind}
            if block.server_name is not None:
                info["server_name"] = block.server_name
            meta = {NAMESPACE: info}
        if kind == "tool_use" and name == state.answer_tool:
            opened.tool = AnswerInput(opened.id, name, out)
            state.answered = True
        else:
            state.called = state.called or kind == "tool_use"
            opened.tool = ToolInput(opened.id, name, out, kind != "tool_use", meta)
        opened.initial = block.input
    elif (hosted := HOSTED_ITEMS.get(kind)) is not None or kind.endswith("_tool_result"):
        # a result arrives whole; its stop event closes nothing
        (hosted or on_server_tool_result)(state, block, out)
        return
    else:
        return  # a block type this parser does not know: its deltas are ignored
    state.open[index] = opened


def _on_content_block_delta(state: AnthropicState, event: Event, out: list[LLMEvent]) -> None:
    delta = event.delta
    block = state.open.get(event.index)
    if delta is None or block is None:
        return
    kind = delta.type
    if kind == "thinking_delta":
        if delta.thinking and block.kind == THINKING:
            out.append(ReasoningDelta(block.id, delta.thinking))
    elif kind == "signature_delta":
        block.signature = (block.signature or "") + (delta.signature or "")
    elif kind == "input_json_delta":
        if block.tool is not None and delta.partial_json:
            block.tool.delta(delta.partial_json, out)
    elif kind == "citations_delta" and delta.citation is not None:
        block.citations.append(delta.citation)
    # text or thinking for a block not opened as that kind is ignored, like unknown deltas: emitting
    # it would put a delta under a block id that never had the matching start event


def _citation(block: OpenBlock, raw: dict[str, Any]) -> Citation:
    url = raw.get("url") or raw.get("source")
    title = raw.get("title") or raw.get("document_title")
    cited = raw.get("cited_text")
    span = (0, block.length) if block.length else (None, None)
    return Citation(block.id, url, title, span[0], span[1], cited, {NAMESPACE: raw})


def _close_block(state: AnthropicState, block: OpenBlock, out: list[LLMEvent]) -> None:
    kind = block.kind
    if kind == TEXT:
        if state.text is block:
            state.text = None
        for raw in block.citations:
            out.append(_citation(block, raw))
        out.append(
            TextEnd(block.id, {NAMESPACE: {"citations": block.citations}} if block.citations else None)
        )
    elif kind == THINKING:
        out.append(ReasoningEnd(block.id, block.signature or None))
    elif kind == REDACTED:
        out.append(ReasoningEnd(block.id, None, block.data, {NAMESPACE: {"type": "redacted_thinking"}}))
    elif block.tool is not None:
        initial = block.initial
        if not block.tool.chunks and isinstance(initial, dict) and initial:
            call = block.tool.finish(out, input=initial)  # complete input in the start event, no deltas
        else:
            call = block.tool.finish(out)
        if call is not None and call.provider_executed:
            state.server_inputs[call.id] = call.input


def _on_content_block_stop(state: AnthropicState, event: Event, out: list[LLMEvent]) -> None:
    block = state.open.pop(event.index, None)
    if block is not None:
        _close_block(state, block, out)


def _on_message_delta(state: AnthropicState, event: Event, _out: list[LLMEvent]) -> None:
    delta = event.delta
    if delta is not None:
        state.stop_reason = delta.stop_reason or state.stop_reason or ""
        state.reason = _FINISH.get(state.stop_reason, "unknown")
        if state.reason == "tool-calls" and state.answered and not state.called:
            state.reason = "stop"  # the forced output tool answered: that is the reply
        meta = dict(state.metadata or {})
        meta["stop_reason"] = state.stop_reason
        if delta.stop_sequence is not None:
            meta["stop_sequence"] = delta.stop_sequence
        if delta.container is not None:
            meta["container"] = delta.container
        state.metadata = meta
    elif state.stop_reason is None:
        state.stop_reason = ""
    if event.usage:
        state.raw_usage.update({k: v for k, v in event.usage.items() if v is not None})
    if state.raw_usage:
        state.usage = _usage(dict(state.raw_usage))


def _on_message_stop(state: AnthropicState, _event: Event, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    state.done = True


def _on_error(_state: AnthropicState, event: Event, _out: list[LLMEvent]) -> None:
    raise from_stream_event(event.error or {"message": "Anthropic Messages stream error"}, "anthropic")


_HANDLERS: dict[str, Callable[[AnthropicState, Event, list[LLMEvent]], None]] = {
    "message_start": _on_message_start,
    "content_block_start": _on_content_block_start,
    "content_block_stop": _on_content_block_stop,
    "message_delta": _on_message_delta,
    "message_stop": _on_message_stop,
    "error": _on_error,
}

# provider-executed result blocks by type (any other ``*_tool_result`` reads as
# ``on_server_tool_result``); the handlers are in ``anthropic_server_tools``
HOSTED_ITEMS: dict[str, Callable[[AnthropicState, BlockIn, list[LLMEvent]], None]] = {
    "web_search_tool_result": on_web_search_tool_result,
    "web_fetch_tool_result": on_server_tool_result,
    "code_execution_tool_result": on_server_tool_result,
    "bash_code_execution_tool_result": on_server_tool_result,
    "text_editor_code_execution_tool_result": on_server_tool_result,
    "mcp_tool_result": on_server_tool_result,
    "tool_result": on_server_tool_result,  # programmatic tool calling: a result its code produced
}


def _ttl_1h(split: object) -> int | None:
    """The 1-hour part of the cache writes from ``usage.cache_creation`` (the split by TTL: 1-hour
    writes cost 2x input, 5-minute ones 1.25x)."""
    if not isinstance(split, dict):
        return None
    value = cast(dict[str, Any], split).get("ephemeral_1h_input_tokens")
    return value if type(value) is int and value else None


def _usage(raw: dict[str, Any]) -> Usage:
    """Anthropic's ``input_tokens`` excludes cached input: the inclusive total adds cache reads and
    cache writes back."""
    usage = _counts(raw, raw)
    speed = raw.get("speed")
    iterations = raw.get("iterations")
    if isinstance(iterations, list) and iterations:
        parts = tuple(_iteration(item) for item in cast(list[Any], iterations))
        usage = msgspec.structs.replace(usage, iterations=parts)
    if isinstance(speed, str):
        usage = msgspec.structs.replace(usage, speed=speed)
    return usage


def _counts(raw: dict[str, Any], keep: dict[str, Any] | None) -> Usage:
    details = raw.get("output_tokens_details")
    server = raw.get("server_tool_use")
    return usage_from_uncached(
        uncached_input=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cache_read=raw.get("cache_read_input_tokens"),
        cache_write=raw.get("cache_creation_input_tokens"),
        reasoning=details.get("thinking_tokens") if isinstance(details, dict) else None,  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        web_search_requests=server.get("web_search_requests") if isinstance(server, dict) else None,  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        raw=keep,
        cache_write_1h=_ttl_1h(raw.get("cache_creation")),
    )


def _iteration(item: object) -> Usage:
    """One ``usage.iterations`` entry (a compaction, an advisor's or a fallback's sampling run): its
    counts, and its own ``model`` where it names one (the response's model otherwise)."""
    if not isinstance(item, dict):
        raise InvalidProviderOutputError(
            f"{NAME}: a usage.iterations entry is not an object", code="bad_usage"
        )
    entry = cast(dict[str, Any], item)
    usage = _counts(entry, None)
    model = entry.get("model")
    return msgspec.structs.replace(usage, model=model) if isinstance(model, str) else usage


def _close_all(state: AnthropicState, out: list[LLMEvent]) -> None:
    for index in sorted(state.open):
        _close_block(state, state.open[index], out)
    state.open.clear()


def on_halt(state: AnthropicState, out: list[LLMEvent]) -> None:
    if state.stop_reason is None and not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before message_delta / message_stop")
    _close_all(state, out)
    state.done = True
