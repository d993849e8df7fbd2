"""``openai_responses``, frames -> events: section 5 of the six (the stream decoders,
``step`` and one small handler per event type, ``whole``, ``on_halt``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...framing.sse import SSEEvent
from ...route.classify import from_stream_event
from ...route.decoding import DECODE_ERRORS
from ...schema.errors import InvalidProviderOutputError
from ...schema.events import LLMEvent, ReasoningDelta, TextDelta
from ...schema.usage import Usage
from .. import openai_responses_finish as finish
from .. import openai_responses_items as calls
from .._shared import decode_frame
from .._websearch import search_from_citations
from ..openai_usage import responses_usage
from .state import ResponsesState
from .wire import (
    NAME,
    OPENAI,
    Annotation,
    Event,
    EventType,
    OutputItem,
    PartAdded,
    ResponseObject,
    WholeResponse,
)

_event_decoder = msgspec.json.Decoder(Event)
_type_decoder = msgspec.json.Decoder(EventType)
_whole_decoder = msgspec.json.Decoder(WholeResponse)
_item_decoder = msgspec.json.Decoder(OutputItem)
_annotation_decoder = msgspec.json.Decoder(Annotation)
_response_decoder = msgspec.json.Decoder(ResponseObject)
_part_added_decoder = msgspec.json.Decoder(PartAdded)
raw_decoder = msgspec.json.Decoder(dict[str, Any])

# 5. step / on_halt --------------------------------------------------------------------------------

# wire item type -> the handler reading a hosted call and its result from its done item
HOSTED_ITEMS: dict[str, Callable[[ResponsesState, str, str, dict[str, Any], list[LLMEvent]], None]] = {
    "web_search_call": calls.on_web_search_call,
    "file_search_call": calls.on_hosted_call,
    "code_interpreter_call": calls.on_hosted_call,
    "image_generation_call": calls.on_image_generation_call,
    "mcp_call": calls.on_mcp_call,
    "mcp_list_tools": calls.on_hosted_call,
}
_STREAMED_INPUT = ("function_call", "custom_tool_call")  # their input streams as deltas


def _decode_event(data: bytes) -> Event | None:
    """One event; ``None`` for an event type this parser does not know whose fields have shapes
    of their own (skipped, as unknown types are). A known type with a bad shape is a typed error."""
    try:
        return _event_decoder.decode(data)
    except msgspec.ValidationError:  # not decode_frame alone: an unknown type with odd shapes is skipped
        kind = decode_frame(_type_decoder, data, f"{NAME} event").type
        if kind in _HANDLERS or kind in _STREAMED:
            decode_frame(_event_decoder, data, f"{NAME} event")  # raises, typed, with the frame
        return None
    except DECODE_ERRORS:  # the slow path reports the raw frame (and retries invalid UTF-8)
        return decode_frame(_event_decoder, data, f"{NAME} event")


# handled outside ``_HANDLERS``: the text hot path and the part that opens a text block
_STREAMED = frozenset(("response.output_text.delta", "response.refusal.delta", "response.content_part.added"))


def step(state: ResponsesState, frame: SSEEvent, out: list[LLMEvent]) -> None:
    ev = _decode_event(frame.data)
    if ev is None:
        return
    kind = ev.type
    if kind != "response.output_text.delta":  # the hot path skips this block
        if ev.output_index >= 0 and ev.item_id is not None:
            ev.item_id = state.item_ids.get(ev.output_index, ev.item_id)
        if kind != "response.refusal.delta":
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(state, ev, out)
            elif kind == "response.content_part.added":
                _on_content_added(state, ev, frame.data, out)
            return
        state.refused = True  # refusal text is message text: handled below like output_text
    delta = ev.delta
    if delta:
        if state.text_index != ev.content_index or state.text_item != ev.item_id:
            item_id = state.item_ids.get(ev.output_index, ev.item_id)
            if state.text_index != ev.content_index or state.text_item != item_id:
                _open_text(state, item_id, ev.content_index, out)
        out.append(TextDelta(state.blocks.text, delta))  # type: ignore[arg-type]
        state.text_chunks.append(delta)


def whole(state: ResponsesState, body: bytes, out: list[LLMEvent]) -> None:
    """A whole Response, as the events a stream of it would have carried."""
    response = msgspec.Raw(body)
    items = decode_frame(_whole_decoder, body, f"{NAME} response").output or []
    _on_created(state, Event("response.created", response=response), out)
    for raw in items:
        ev = Event("response.output_item.added", item=raw)
        _on_item_added(state, ev, out)
        item = _decode_item(raw)
        if item is not None and item.type == "reasoning":
            parts = [(i, s.text) for i, s in enumerate(item.summary or ())]
            parts += [(i, c.text) for i, c in enumerate(item.content or ()) if c.type == "reasoning_text"]
            for index, text in parts:
                _reasoning_delta(state, Event(item_id=item.id, delta=text), index, out)
        _on_item_done(state, ev, out)
    _on_terminal(state, Event("response.completed", response=response), out)


def _open_text(state: ResponsesState, item_id: str | None, index: int, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    state.text_item, state.text_index = item_id, index
    item_id = item_id or "msg"
    meta: dict[str, Any] = {"item_id": item_id}
    phase = state.phases.get(item_id)
    if phase is not None:
        meta["phase"] = phase
    state.blocks.text_delta("", out, id=f"{item_id}:{index}", metadata={OPENAI: meta})


def _close_text(state: ResponsesState, out: list[LLMEvent]) -> None:
    block = state.blocks.text
    if block is not None:
        state.blocks.end_text(out)
        state.texts[block] = "".join(state.text_chunks)
        state.text_item, state.text_index = None, -1
        state.text_chunks = []


def _text_of(state: ResponsesState, block: str) -> str:
    if block == state.blocks.text:
        text = "".join(state.text_chunks)
        state.text_chunks = [text]  # joined once per annotation burst, not once per annotation
        return text
    return state.texts.get(block, "")


def _open_reasoning(state: ResponsesState, item_id: str, index: int, out: list[LLMEvent]) -> None:
    if state.reasoning_index == index and state.reasoning_item == item_id:
        return
    blocks = state.blocks
    blocks.end_reasoning(out)
    state.reasoning_item, state.reasoning_index = item_id, index
    blocks.reasoning_delta("", out, id=f"{item_id}:{index}", metadata={OPENAI: {"item_id": item_id}})


def _end_reasoning(state: ResponsesState, out: list[LLMEvent], item: OutputItem | None = None) -> None:
    if state.blocks.reasoning is not None:
        if state.reasoning_item is not None:
            state.reasoning_ended.add(state.reasoning_item)
        if item is None:
            state.blocks.end_reasoning(out)
        else:
            state.blocks.end_reasoning(out, None, item.encrypted_content, {OPENAI: {"item_id": item.id}})
        state.reasoning_item, state.reasoning_index = None, -1


def _on_created(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    if ev.response and state.metadata is None:
        response = decode_frame(_response_decoder, ev.response, f"{NAME} response")
        state.metadata = {"id": response.id, "model": response.model}


def _decode_item(raw: msgspec.Raw) -> OutputItem | None:
    """One output item; ``None`` for a type this parser does not know whose fields have shapes of
    their own. A known type with a bad shape is a typed error."""
    try:
        return _item_decoder.decode(raw)
    except msgspec.ValidationError:  # not decode_frame alone: an unknown type with odd shapes is skipped
        kind = decode_frame(_type_decoder, raw, f"{NAME} item").type
        if kind in calls.KNOWN_ITEMS:
            decode_frame(_item_decoder, raw, f"{NAME} item")  # raises, typed, with the item
        return None
    except DECODE_ERRORS:
        return decode_frame(_item_decoder, raw, f"{NAME} item")


def _on_item_added(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    item = _decode_item(ev.item)
    if item is None:
        return
    if ev.output_index >= 0:
        state.item_ids[ev.output_index] = item.id
    state.added.add(item.id)
    kind = item.type
    if kind == "message":
        if item.phase:
            state.phases[item.id] = item.phase
    else:
        role = calls.call_role(state, item)
        if role is None or (kind not in _STREAMED_INPUT and kind not in HOSTED_ITEMS):
            # no call, or one whose input (and final call id) only the done item carries
            return
        if item.id in state.tools or item.id in state.called:
            return  # added again (a proxy replaying events): one call, as a repeated done is
        _close_text(state, out)
        _end_reasoning(state, out)
        tool = state.tools[item.id] = calls.tool_input(state, item, role, out)
        if isinstance(item.arguments, str) and item.arguments:
            tool.delta(item.arguments, out)


_TEXT_PARTS = ("output_text", "refusal")


def _on_content_added(state: ResponsesState, ev: Event, data: bytes, out: list[LLMEvent]) -> None:
    # A message's text or refusal opens its block; a reasoning item's ``reasoning_text`` part is
    # the reasoning block its deltas open.
    part = decode_frame(_part_added_decoder, data, f"{NAME} event").part
    if part is not None and part.type not in _TEXT_PARTS:
        return
    # An open reasoning block stays open: its item's done event (with the encrypted content) may
    # still come, after the text started (OpenRouter); it ends there, or when the response does.
    _open_text(state, ev.item_id, ev.content_index, out)


def _on_content_done(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    if state.text_index == ev.content_index and state.text_item == ev.item_id:
        _close_text(state, out)


def _on_summary_part(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    _open_reasoning(state, ev.item_id or "rs", ev.summary_index, out)


def _on_summary_delta(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    _reasoning_delta(state, ev, ev.summary_index, out)


def _on_reasoning_text_delta(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    _reasoning_delta(state, ev, ev.content_index, out)


def _reasoning_delta(state: ResponsesState, ev: Event, index: int, out: list[LLMEvent]) -> None:
    delta = ev.delta
    if delta:
        item_id = ev.item_id or "rs"
        # raw reasoning_text and summary parts share ``item:index`` ids: a part whose block has
        # ended goes on in the item's open block (in stream order) rather than opening it twice
        if (state.reasoning_index != index or state.reasoning_item != item_id) and (
            state.reasoning_item != item_id or not state.blocks.reasoning_ended(f"{item_id}:{index}")
        ):
            _open_reasoning(state, item_id, index, out)
        out.append(ReasoningDelta(state.blocks.reasoning, delta))  # type: ignore[arg-type]


def _on_item_done(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    item = _decode_item(ev.item)
    if item is None:
        _keep_other(state, ev.item)
        return
    item.id = state.item_ids.get(ev.output_index, item.id)
    kind = item.type
    if kind == "message":
        _on_message_done(state, item, out)
    elif kind == "reasoning":
        _on_reasoning_done(state, item, out)
    elif kind in HOSTED_ITEMS:
        if calls.first_done(state, item.id):
            data = decode_frame(raw_decoder, ev.item, f"{NAME} item")
            HOSTED_ITEMS[kind](state, kind, item.id, data, out)
    elif kind in calls.OUTPUT_ITEMS:
        calls.on_output_done(state, item, ev.item, out)
    elif kind == "mcp_approval_request":
        _close_text(state, out)
        _end_reasoning(state, out)
        calls.on_approval_request(state, item, out)
    else:
        role = calls.call_role(state, item)
        if role is not None:
            calls.on_call_done(state, item, role, ev.item, out)
        else:  # compaction, program, a type this parser does not know: kept raw, never fatal
            _keep_other(state, ev.item)


def _on_reasoning_done(state: ResponsesState, item: OutputItem, out: list[LLMEvent]) -> None:
    """The item's reasoning block ends here, carrying its encrypted content. One already ended (a
    tool call or the next reasoning item closed it first) is not opened again."""
    if item.id in state.reasoning_ended:
        return
    if state.reasoning_item != item.id:
        _open_reasoning(state, item.id, 0, out)  # no summary: the block still carries the item
    _end_reasoning(state, out, item)


def _keep_other(state: ResponsesState, raw: msgspec.Raw) -> None:
    if state.metadata is None:
        state.metadata = {}
    state.metadata.setdefault("other_items", []).append(decode_frame(raw_decoder, raw, f"{NAME} item"))


def _on_message_done(state: ResponsesState, item: OutputItem, out: list[LLMEvent]) -> None:
    if state.text_item == item.id:
        _close_text(state, out)
    for index, content in enumerate(item.content or ()):
        block = f"{item.id or 'msg'}:{index}"
        text = content.text or content.refusal or ""
        if block not in state.texts and text:
            # text only in the final item (no deltas streamed, or a whole body): one block
            _open_text(state, item.id, index, out)
            out.append(TextDelta(block, text))
            state.text_chunks.append(text)
            _close_text(state, out)
        if content.type == "refusal":
            state.refused = True
        for annotation in content.annotations or ():
            calls.cite(state, block, annotation, out, text)


def _on_annotation(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    annotation = decode_frame(_annotation_decoder, ev.annotation, f"{NAME} annotation")
    block = f"{ev.item_id or 'msg'}:{ev.content_index}"
    calls.cite(state, block, annotation, out, _text_of(state, block))


def _usage(raw: dict[str, Any], state: ResponsesState, service_tier: str | None) -> Usage:
    return responses_usage(raw, state.searches, service_tier, state.billed)


def _on_terminal(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    response = (
        decode_frame(_response_decoder, ev.response, f"{NAME} response") if ev.response else ResponseObject()
    )
    state.metadata = {**(state.metadata or {}), "id": response.id, "model": response.model}
    if response.service_tier:
        state.metadata["service_tier"] = response.service_tier
    if response.usage is not None:
        state.usage = _usage(response.usage, state, response.service_tier)
    status = response.status or ev.type.removeprefix("response.")
    if status == "failed":
        raise from_stream_event(response.error or {"message": "response failed"}, NAME)
    finish.refuse_unfinished(response.id, status)
    _close_all(state, out)
    if state.cited_urls and not state.searched:  # OpenRouter's web plugin reports no call
        state.searched = True
        search_from_citations(f"ws_{response.id or 'response'}", state.cited_urls, out)
    details = response.incomplete_details
    incomplete = details.reason if details else None
    state.reason = finish.finish_reason(status, incomplete, state.refused, state.client_calls)
    state.done = True


def _on_error(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    error: dict[str, Any] = {}
    if ev.error:
        error = decode_frame(raw_decoder, ev.error, f"{NAME} error")
    if ev.code or ev.message:
        error = {"code": ev.code, "message": ev.message, **error}
    exc = from_stream_event(error, NAME, status=ev.status)
    code = error.get("code")
    if isinstance(code, str) and code:
        exc.code = code  # OpenAI's specific kind (previous_response_not_found), not its category
    raise exc


def _close_all(state: ResponsesState, out: list[LLMEvent]) -> None:
    _close_text(state, out)
    _end_reasoning(state, out)
    for tool in state.tools.values():
        tool.finish(out)
    state.tools.clear()


def _on_arguments_delta(state: ResponsesState, ev: Event, out: list[LLMEvent]) -> None:
    calls.on_arguments_delta(state, ev.item_id, ev.delta, out)


_HANDLERS: dict[str, Callable[[ResponsesState, Event, list[LLMEvent]], None]] = {
    "response.created": _on_created,
    "response.in_progress": _on_created,
    "response.output_item.added": _on_item_added,
    "response.output_item.done": _on_item_done,
    "response.content_part.done": _on_content_done,
    "response.reasoning_summary_part.added": _on_summary_part,
    "response.reasoning_summary_text.delta": _on_summary_delta,
    "response.reasoning_text.delta": _on_reasoning_text_delta,
    "response.function_call_arguments.delta": _on_arguments_delta,
    "response.custom_tool_call_input.delta": _on_arguments_delta,
    "response.output_text.annotation.added": _on_annotation,
    "response.completed": _on_terminal,
    "response.done": _on_terminal,
    "response.incomplete": _on_terminal,
    "response.failed": _on_terminal,
    "error": _on_error,
}


def on_halt(state: ResponsesState, out: list[LLMEvent]) -> None:
    if not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before response.completed")
    _close_all(state, out)
