"""``bedrock_converse``, frames -> events: section 5 of the six (the stream decoders,
``step`` and one small handler per event type, ``whole``, ``on_halt``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...framing.eventstream import EventStreamMessage
from ...route.classify import from_exception_frame
from ...schema.errors import InvalidProviderOutputError
from ...schema.events import Citation, FinishReason, LLMEvent, ReasoningDelta, TextDelta, ToolResult
from ...schema.usage import Usage
from ...schema.usage_read import usage_from_cached, usage_from_uncached
from .._output_tool import AnswerInput
from .._shared import ToolInput, decode_frame
from .state import ConverseState, PendingResult
from .wire import (
    NAME,
    NAMESPACE,
    BlockDelta,
    BlockStart,
    BlockStop,
    CitationDelta,
    ConverseResponse,
    Delta,
    MessageStop,
    Metadata,
    ReasoningDeltaIn,
    Start,
    WholeBlock,
)

_start_decoder = msgspec.json.Decoder(BlockStart)
_whole_decoder = msgspec.json.Decoder(ConverseResponse)
_delta_decoder = msgspec.json.Decoder(BlockDelta)
_stop_decoder = msgspec.json.Decoder(BlockStop)
_message_stop_decoder = msgspec.json.Decoder(MessageStop)
_metadata_decoder = msgspec.json.Decoder(Metadata)

# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "content_filtered": "content-filter",
    "guardrail_intervened": "content-filter",
}


def step(state: ConverseState, frame: EventStreamMessage, out: list[LLMEvent]) -> None:
    if frame.message_type != "event":
        raise from_exception_frame(frame)
    kind = frame.event_type
    if state.stop_reason is not None and kind in _MESSAGE_EVENTS:
        # the step is finished: content (or a second stop) now would follow its finish
        raise InvalidProviderOutputError(f"{NAME}: {kind} after messageStop")
    if kind == "contentBlockDelta":  # hot path: most of a stream
        _on_content_block_delta(state, decode_frame(_delta_decoder, frame.payload, _DELTA), out)
        return
    handler = _HANDLERS.get(kind)
    if handler is not None:
        decoder, what, on_event = handler
        on_event(state, decode_frame(decoder, frame.payload, what), out)
    # messageStart carries only the role; unknown event types are skipped.


_MESSAGE_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)


def _violation(what: str) -> InvalidProviderOutputError:
    return InvalidProviderOutputError(f"{NAME}: {what}")


def whole(state: ConverseState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``/converse`` response: each content block as start/delta/stop, then stop and metadata."""
    response = decode_frame(_whole_decoder, body, f"{NAME} response")
    message = response.output.message if response.output is not None else None
    for index, block in enumerate(message.content or () if message is not None else ()):
        _on_whole_block(state, index, block, out)
        _on_content_block_stop(state, BlockStop(index), out)
    _on_message_stop(state, MessageStop(response.stopReason, response.additionalModelResponseFields), out)
    _on_metadata(state, Metadata(response.usage, response.metrics), out)
    state.done = True


def _on_whole_block(state: ConverseState, index: int, block: WholeBlock, out: list[LLMEvent]) -> None:
    if block.text is not None:
        _on_content_block_delta(state, BlockDelta(index, Delta(text=block.text)), out)
    if block.reasoningContent is not None:
        text = block.reasoningContent.reasoningText or ReasoningDeltaIn()
        delta = ReasoningDeltaIn(text.text, text.signature, block.reasoningContent.redactedContent)
        _on_content_block_delta(state, BlockDelta(index, Delta(reasoningContent=delta)), out)
    if block.toolUse is not None:
        use = block.toolUse
        _on_content_block_start(state, BlockStart(index, Start(toolUse=use)), out)
        state.tools[index].finish(out, input=use.input if use.input is not None else {})
    if block.toolResult is not None:
        result = block.toolResult
        _on_content_block_start(state, BlockStart(index, Start(toolResult=result)), out)
        state.results[index].items.extend(result.content or ())
    if block.citationsContent is not None:
        cited = block.citationsContent
        text = "".join(str(part.get("text", "")) for part in cited.content or ())
        _on_content_block_delta(state, BlockDelta(index, Delta(text=text)), out)
        for citation in cited.citations or ():
            _on_citation(state, index, citation, out)


def _on_content_block_delta(state: ConverseState, event: BlockDelta, out: list[LLMEvent]) -> None:
    delta = event.delta
    if delta is None:
        return
    index = event.contentBlockIndex
    text = delta.text
    if text is not None:
        if index == state.text_index:  # hot path: more text for the open block
            if text:
                out.append(TextDelta(state.blocks.text, text))  # pyright: ignore[reportArgumentType]
        else:
            _end_reasoning(state, out)
            _end_text(state, out)
            state.blocks.text_delta(text, out, f"text-{index}")  # an ended block is refused there
            state.text_index = index
    if delta.reasoningContent is not None:
        _on_reasoning(state, index, delta.reasoningContent, out)
    if delta.toolUse is not None:
        tool = state.tools.get(index)
        if tool is None:
            raise InvalidProviderOutputError(
                f"{NAME}: toolUse delta for block {index}, which did not start a tool",
                raw=delta.toolUse.input[:200],
            )
        tool.delta(delta.toolUse.input, out)
    if delta.toolResult is not None:
        pending = state.results.get(index)
        if pending is None:
            raise InvalidProviderOutputError(
                f"{NAME}: toolResult delta for block {index}, which did not start one"
            )
        pending.items.extend(delta.toolResult)
    if delta.citation is not None:
        _on_citation(state, index, delta.citation, out)


def _on_reasoning(state: ConverseState, index: int, delta: ReasoningDeltaIn, out: list[LLMEvent]) -> None:
    if index == state.reasoning_index:
        if delta.text:
            out.append(ReasoningDelta(state.blocks.reasoning, delta.text))  # pyright: ignore[reportArgumentType]
    else:
        _end_text(state, out)
        _end_reasoning(state, out)
        state.blocks.reasoning_delta(delta.text or "", out, f"reasoning-{index}")
        state.reasoning_index = index
    if delta.signature:
        state.signature = (state.signature or "") + delta.signature
    if delta.redactedContent:
        state.redacted = (state.redacted or "") + delta.redactedContent


def _end_text(state: ConverseState, out: list[LLMEvent]) -> None:
    state.blocks.end_text(out)
    state.text_index = -1


def _end_reasoning(state: ConverseState, out: list[LLMEvent]) -> None:
    if state.blocks.reasoning is None:
        return
    signature, redacted = state.signature, state.redacted
    metadata = {NAMESPACE: {"signature": signature}} if signature else None
    state.blocks.end_reasoning(out, signature, redacted, metadata)
    state.signature = state.redacted = None
    state.reasoning_index = -1


def _on_citation(state: ConverseState, index: int, cite: CitationDelta, out: list[LLMEvent]) -> None:
    location = cite.location or {}
    web = location.get("web")
    url = web.get("url") if isinstance(web, dict) else None  # type: ignore[union-attr]
    cited = "".join(str(c.get("text", "")) for c in cite.sourceContent or ()) or None
    block_id = state.blocks.text or f"text-{index}"
    metadata = {NAMESPACE: {"location": location}} if location else None
    out.append(
        Citation(
            block_id, url if isinstance(url, str) else cite.source, cite.title, None, None, cited, metadata
        )
    )


def _on_content_block_start(state: ConverseState, event: BlockStart, out: list[LLMEvent]) -> None:
    start = event.start
    if start is None:
        return
    index = event.contentBlockIndex
    if index in state.tools or index in state.results:
        raise _violation(f"contentBlockStart for block {index}, which already started")
    if start.toolUse is not None:
        use = start.toolUse
        if use.toolUseId in state.tool_names:
            raise _violation(f"toolUseId {use.toolUseId!r} repeated")
        _close_all(state, out)
        server = use.type == "server_tool_use"
        metadata = {NAMESPACE: {"type": use.type}} if use.type and use.type != "tool_use" else None
        state.tool_names[use.toolUseId] = use.name
        if not server and use.name == state.answer_tool:
            state.tools[index] = AnswerInput(use.toolUseId, use.name, out)
            state.answered = True
            return
        state.tools[index] = ToolInput(use.toolUseId, use.name, out, server, metadata)
        state.client_tools = state.client_tools or not server
    elif start.toolResult is not None:
        result = start.toolResult
        _close_all(state, out)
        state.results[index] = PendingResult(result.toolUseId, result.status, result.type)


def _on_content_block_stop(state: ConverseState, event: BlockStop, out: list[LLMEvent]) -> None:
    index = event.contentBlockIndex
    tool = state.tools.get(index)
    if tool is not None:
        tool.finish(out)
        return
    pending = state.results.pop(index, None)
    if pending is not None:
        _emit_result(state, pending, out)
        return
    if index == state.reasoning_index:
        _end_reasoning(state, out)
    elif index == state.text_index:
        _end_text(state, out)


def _emit_result(state: ConverseState, pending: PendingResult, out: list[LLMEvent]) -> None:
    items = pending.items
    value: Any = items
    if len(items) == 1:
        only = items[0]
        value = only["json"] if "json" in only else only.get("text", only)
    metadata: dict[str, Any] = {NAMESPACE: {"type": pending.type, "status": pending.status}}
    name = state.tool_names.get(pending.id, pending.type or "tool")
    out.append(ToolResult(pending.id, name, value, pending.status == "error", True, metadata))


def _close_all(state: ConverseState, out: list[LLMEvent]) -> None:
    _end_reasoning(state, out)
    _end_text(state, out)


def _on_message_stop(state: ConverseState, event: MessageStop, out: list[LLMEvent]) -> None:
    state.stop_reason = event.stopReason or "unknown"
    if event.additionalModelResponseFields is not None:
        state.metadata = {
            **(state.metadata or {}),
            "additional_model_response_fields": event.additionalModelResponseFields,
        }
    _finish(state, out)


def _on_metadata(state: ConverseState, event: Metadata, _out: list[LLMEvent]) -> None:
    if event.usage is not None:
        state.usage = _usage(event.usage)
    if event.metrics:
        state.metadata = {**(state.metadata or {}), "metrics": event.metrics}
    if state.stop_reason is not None:
        state.done = True  # metadata is the last event of a converse stream


_DELTA = f"{NAME} contentBlockDelta"
_OnEvent = Callable[[ConverseState, Any, list[LLMEvent]], None]
# ``:event-type`` (``None`` when a message has none) -> (payload decoder, what a malformed
# payload is called, handler)
_HANDLERS: dict[str | None, tuple[msgspec.json.Decoder[Any], str, _OnEvent]] = {
    "contentBlockDelta": (_delta_decoder, _DELTA, _on_content_block_delta),
    "contentBlockStart": (_start_decoder, f"{NAME} contentBlockStart", _on_content_block_start),
    "contentBlockStop": (_stop_decoder, f"{NAME} contentBlockStop", _on_content_block_stop),
    "messageStop": (_message_stop_decoder, f"{NAME} messageStop", _on_message_stop),
    "metadata": (_metadata_decoder, f"{NAME} metadata", _on_metadata),
}


def _finish(state: ConverseState, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    for tool in state.tools.values():
        tool.finish(out)
    for pending in state.results.values():
        _emit_result(state, pending, out)
    state.results.clear()
    reason = _FINISH.get(state.stop_reason or "", "unknown")
    if reason == "stop" and state.client_tools:
        reason = "tool-calls"
    elif reason == "tool-calls" and state.answered and not state.client_tools:
        reason = "stop"  # the forced output tool answered: that is the reply
    state.reason = reason


def _int(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    return value if isinstance(value, int) else None


def _usage(raw: dict[str, Any]) -> Usage:
    """``inputTokens`` excludes cache reads and writes (``totalTokens`` = input + output + both);
    a provider that reports it inclusive is recognised by ``totalTokens``."""
    inp, output, total = _int(raw, "inputTokens"), _int(raw, "outputTokens"), _int(raw, "totalTokens")
    read, write = _int(raw, "cacheReadInputTokens"), _int(raw, "cacheWriteInputTokens")
    if inp is not None and (read or write) and output is not None and total == inp + output:
        return usage_from_cached(
            input_tokens=inp, output_tokens=output, cache_read=read, cache_write=write, raw=raw
        )
    return usage_from_uncached(
        uncached_input=inp, output_tokens=output, cache_read=read, cache_write=write, raw=raw
    )


def on_halt(state: ConverseState, out: list[LLMEvent]) -> None:
    if state.stop_reason is None:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before messageStop")
    state.done = True  # messageStop already finished everything; only metadata may be missing
