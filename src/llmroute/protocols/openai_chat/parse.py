"""``openai_chat``, frames -> events: section 5 of the six (the stream decoders,
``step`` and one small handler per event type, ``whole``, ``on_halt``)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import msgspec

from ...framing.sse import SSEEvent
from ...hosted import WEB_SEARCH, search_result
from ...route.classify import from_stream_event
from ...route.decoding import DECODE_ERRORS
from ...schema.errors import InvalidProviderOutputError
from ...schema.events import Citation, FinishReason, LLMEvent, Media, TextDelta, ToolCall, ToolResult
from ...schema.mime import sniff, sniff_base64
from ...schema.usage import Usage
from .._shared import RAW_LIMIT, ToolInput, decode_frame, only_fields, parse_tool_input
from .._websearch import emit_search, hit_pairs, search_from_citations
from ..openai_chat_custom import call_metadata
from ..openai_usage import chat_usage
from .reasoning import details_text, end_reasoning, on_content_chunks, on_reasoning_details
from .state import ChatState
from .wire import (
    NAME,
    Annotation,
    Audio,
    ChatQuirks,
    Choice,
    Chunk,
    Completion,
    CustomDelta,
    Delta,
    ExecutedTool,
    FnDelta,
    ImageOut,
    ToolDelta,
    UrlCitation,
)

_decoder = msgspec.json.Decoder(Chunk)
# Nearly every chunk of a text stream: one choice whose delta holds only ``content`` (a string).
_text_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
    only_fields(
        Chunk,
        {"choices": tuple[only_fields(Choice, {"delta": only_fields(Delta, {"content": str})}, ("index",))]},
        # ``service_tier`` rides on every OpenAI chunk; the first and the usage chunk (general path)
        # record it, so the text chunks need not decode it
        ("id", "model", "service_tier"),
    )
)
_completion_decoder = msgspec.json.Decoder(Completion)

# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool-calls",
    "error": "error",
}


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object from loosely typed provider data; anything else reads as empty."""
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def step(state: ChatState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    # ``SSEDataFraming`` hands over the event's data bytes (Chat never reads the event name); an
    # ``SSEEvent`` (a WebSocket message, an envelope, a test) is accepted too.
    data = frame if isinstance(frame, bytes) else frame.data
    if data == b"[DONE]":
        _finish(state, out)
        state.done = True
        return
    if state.done:
        return
    blocks = state.blocks
    block = blocks.text
    if block is not None and blocks.reasoning is None:
        # Hot path: while a text block is open, nearly every chunk only adds text to it. Any other
        # shape (more fields, another choice, bad bytes) fails this decode and takes the full path.
        try:
            content = _text_decoder.decode(data).choices[0].delta.content
        except DECODE_ERRORS:
            pass
        else:
            if content:
                out.append(TextDelta(block, content))
                state.text_len += len(content)
            return
    chunk = decode_frame(_decoder, data, f"{NAME} chunk")  # raises with the raw frame, or repairs UTF-8
    _on_chunk(state, chunk, data, out)


def whole(state: ChatState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``chat.completion``: its message is one delta holding every field (tool calls get their
    position as ``index``), then the finish; the body is complete, so a missing ``finish_reason``
    finishes as ``unknown`` instead of failing as a cut stream would."""
    completion = decode_frame(_completion_decoder, body, f"{NAME} response")
    choices: list[Choice] = []
    for choice in completion.choices or ():
        delta = choice.message
        if delta is not None and delta.tool_calls:
            calls = [
                c if c.index is not None else msgspec.structs.replace(c, index=i)
                for i, c in enumerate(delta.tool_calls)
            ]
            delta = msgspec.structs.replace(delta, tool_calls=calls)
        choices.append(Choice(choice.index, delta, choice.finish_reason, choice.annotations))
    chunk = Chunk(
        completion.id,
        completion.model,
        choices,
        completion.usage,
        completion.error,
        completion.x_groq,
        completion.web_search,
        completion.service_tier,
    )
    _on_chunk(state, chunk, body, out)
    state.done = True


def _on_chunk(state: ChatState, chunk: Chunk, data: bytes, out: list[LLMEvent]) -> None:
    if not state.started:
        _keep_ids(state, chunk)
    if chunk.error is not None:
        raise from_stream_event(chunk.error, state.name)  # OpenRouter / Groq: an error after HTTP 200
    if chunk.web_search is not None:
        _on_web_search(state, chunk.web_search, out)
    choices = chunk.choices
    if choices:
        choice = choices[0]
        delta = choice.delta
        if delta is not None:
            _on_delta(state, delta, out)
        if choice.annotations:
            _on_annotations(state, choice.annotations, out)
        if choice.finish_reason:
            state.finish_reason = choice.finish_reason
            _finish(state, out)
    elif not state.quirks.empty_choices_ok and chunk.usage is None and chunk.x_groq is None:
        raise InvalidProviderOutputError(
            f"{state.name}: chunk without choices", raw=data[:RAW_LIMIT].decode("utf-8", "replace")
        )
    if chunk.service_tier is not None:
        state.service_tier = chunk.service_tier
    if chunk.usage is not None:
        state.usage = _usage(chunk.usage, state.quirks, state.service_tier)
    elif chunk.x_groq is not None and isinstance(chunk.x_groq.get("usage"), dict):
        state.usage = _usage(chunk.x_groq["usage"], state.quirks, state.service_tier)


def _keep_ids(state: ChatState, chunk: Chunk) -> None:
    """The response id and model from the first chunks that name them: Azure's first chunk is a
    prompt-filter report with ``"id": ""`` and ``"model": ""``; the next one names both."""
    meta = state.metadata
    if meta is None:
        meta = state.metadata = {"id": chunk.id, "model": chunk.model}
    else:
        if chunk.id and not meta.get("id"):
            meta["id"] = chunk.id
        if chunk.model and not meta.get("model"):
            meta["model"] = chunk.model
    state.started = bool(meta.get("id") and meta.get("model"))


def _on_delta(state: ChatState, delta: Delta, out: list[LLMEvent]) -> None:
    blocks = state.blocks
    reasoning = _reasoning_text(state.quirks, delta)
    details = delta.reasoning_details
    if not reasoning and details:
        reasoning = details_text(details)
    if reasoning:
        blocks.end_text(out)  # text and reasoning are never open together
        blocks.reasoning_delta(reasoning, out)
    if details:
        on_reasoning_details(state, details, out)
    if delta.executed_tools:
        _on_executed_tools(state, delta.executed_tools, out)
    content = delta.content
    if isinstance(content, list):
        on_content_chunks(state, content, out, _on_text)
    elif content:
        _on_text(state, content, out)
    if delta.refusal:
        _on_text(state, delta.refusal, out)
        state.refused = True
    if delta.tool_calls:
        for tool_delta in delta.tool_calls:
            _on_tool_delta(state, tool_delta, out)
    if delta.annotations:
        _on_annotations(state, delta.annotations, out)
    if delta.images:
        _on_images(state, delta.images, out)
    if delta.audio is not None:
        _on_audio(state, delta.audio, out)


_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,", re.ASCII)


def _on_images(state: ChatState, images: list[ImageOut], out: list[LLMEvent]) -> None:
    """Each generated image (a ``data:`` URL, whole in one delta) becomes media; a plain URL is
    not media the model produced in the response, so it is not reported as such."""
    for image in images:
        url = image.image_url.url if image.image_url is not None else ""
        match = _DATA_URL.match(url)
        if match is None:
            continue
        data = url[match.end() :]
        mime = match.group(1) or sniff_base64(data) or "application/octet-stream"
        out.append(Media(f"image-{state.images}", mime, data))
        state.images += 1


def _on_audio(state: ChatState, audio: Audio, out: list[LLMEvent]) -> None:
    """The transcript is the message's text; the audio pieces add up to one clip."""
    if audio.transcript:
        _on_text(state, audio.transcript, out)
    if audio.data:
        try:
            state.audio += base64.b64decode(audio.data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidProviderOutputError(f"{state.name}: audio data is not base64") from None
    for key, value in (("id", audio.id), ("expires_at", audio.expires_at)):
        if value is not None:
            state.audio_info[key] = value


def _end_audio(state: ChatState, out: list[LLMEvent]) -> None:
    """The whole clip as media: its type from its bytes (wav, mp3, flac, opus), else raw PCM
    (``pcm16``, the format a streamed answer must use: 24 kHz, 16-bit little-endian, mono)."""
    if not state.audio:
        return
    clip = bytes(state.audio)
    state.audio = bytearray()
    mime = sniff(clip) or "audio/pcm"
    id = state.audio_info.get("id") or "audio-0"
    out.append(
        Media(id, mime, base64.b64encode(clip).decode("ascii"), {"openai": {"audio": state.audio_info}})
    )


def _on_text(state: ChatState, text: str, out: list[LLMEvent]) -> None:
    """Message text (content or refusal): one block, its start offset recorded for citations."""
    end_reasoning(state, out)
    blocks = state.blocks
    opening = blocks.text is None
    block = blocks.text_delta(text, out)
    if opening:
        state.text_starts.append((state.text_len, block))
    state.text_len += len(text)


def _reasoning_text(quirks: ChatQuirks, delta: Delta) -> str | None:
    for field in quirks.reasoning_fields:
        value = getattr(delta, field, None)
        if value:
            return value
    return None


def _close_all(state: ChatState, out: list[LLMEvent]) -> None:
    end_reasoning(state, out)
    state.blocks.end_text(out)


def _on_tool_delta(state: ChatState, delta: ToolDelta, out: list[LLMEvent]) -> None:
    # ``type`` decides: Snowflake Cortex sends an empty ``custom`` beside a function call's ``function``
    custom = delta.type == "custom" or (delta.type is None and delta.function is None)
    fn = delta.custom if custom else delta.function  # a custom tool's free text comes as ``custom.input``
    tool: ToolInput | None = None
    if delta.id is not None and delta.id in state.tool_by_id:
        tool = state.tool_by_id[delta.id]  # some servers repeat the id in every fragment
        if _another_call(state, tool, delta, fn):
            raise InvalidProviderOutputError(f"{NAME}: tool call id {delta.id!r} repeated")
    elif state.quirks.tool_call_key == "index" and delta.index is not None:
        tool = state.tools.get(delta.index)
        if tool is not None and delta.id is not None and delta.id != tool.id:
            # Some compatible servers reuse index 0 for every call: a new id is a new call. The
            # earlier one keeps its place (re-keyed by its id) and still finishes.
            state.tools[tool.id] = state.tools.pop(delta.index)
            tool = None
    elif delta.id is None and state.tools:
        tool = next(reversed(state.tools.values()))  # no index, no id: continues the last call
    if tool is None:
        if delta.id is None and (fn is None or fn.name is None):
            raise InvalidProviderOutputError(
                f"{NAME}: tool-call fragment for an unknown call", raw=msgspec.json.encode(delta).decode()
            )
        _close_all(state, out)
        call_id = delta.id or f"call_{len(state.tools)}"
        key: int | str = (
            delta.index if state.quirks.tool_call_key == "index" and delta.index is not None else call_id
        )
        custom = custom and delta.custom is not None
        tool = ToolInput(
            call_id, (fn.name if fn else None) or "", out, metadata=call_metadata() if custom else None
        )
        state.tools[key] = tool
        state.tool_by_id[tool.id] = tool
    if fn is None:
        return
    text = fn.arguments if isinstance(fn, FnDelta) else fn.input
    if text:
        tool.delta(text, out)


def _another_call(
    state: ChatState, tool: ToolInput, delta: ToolDelta, fn: FnDelta | CustomDelta | None
) -> bool:
    """A named first fragment at another index under a known id: a second call reusing the id (the
    caller could answer only one), not a fragment of the first."""
    if state.quirks.tool_call_key != "index" or delta.index is None or fn is None or not fn.name:
        return False
    return state.tools.get(delta.index) is not tool


# Provider-executed tools reported inside a Chat stream: Groq compound ``executed_tools`` (a call
# without ``output``, then the same index with it) and GLM's top-level ``web_search`` hits. Both
# become tool-call + tool-result with ``provider_executed=True``; ids are derived from the response
# id so they stay unique across the steps of a tool loop. Searches are the canonical ``web_search``
# (``llmroute.hosted.SearchResult``); what the provider sent stays in ``provider_metadata``:
# Groq's executed tool under ``["groq"]``, GLM's hits under ``["glm"]["web_search"]`` (hit *i*
# behind source *i*, with ``media``, ``publish_date``, ``refer``, ``content``, ``icon``). A search
# only ``url_citation`` annotations show (OpenRouter's web plugin, OpenAI search models) is
# reported once at the end of the step, sources = the cited URLs.

_EXECUTED_NAMES = {"search": "web_search", "visit": "web_fetch", "python": "code_execution"}


def _hosted_id(state: ChatState, kind: str, n: int) -> str:
    response_id = (state.metadata or {}).get("id") or "response"
    return f"{response_id}-{kind}-{n}"


def _on_executed_tools(state: ChatState, tools: list[ExecutedTool], out: list[LLMEvent]) -> None:
    for tool in tools:
        entry = state.executed.get(tool.index)
        if entry is None:
            _close_all(state, out)
            name = _EXECUTED_NAMES.get(tool.type, tool.type or "tool")
            entry = (_hosted_id(state, "executed", tool.index), name, False)
            state.executed[tool.index] = entry
            out.append(ToolCall(entry[0], name, parse_tool_input(tool.arguments or ""), True))
            state.searched = state.searched or name == WEB_SEARCH
        if tool.output is not None and not entry[2]:
            _close_all(state, out)
            state.executed[tool.index] = (entry[0], entry[1], True)
            result, meta = _executed_result(tool, entry[1])
            out.append(ToolResult(entry[0], entry[1], result, provider_executed=True, provider_metadata=meta))


def _executed_result(tool: ExecutedTool, name: str) -> tuple[Any, dict[str, Any] | None]:
    raw_hits = (tool.search_results or {}).get("results")
    if name != WEB_SEARCH:
        hits = [_obj(hit) for hit in _list(raw_hits) if isinstance(hit, dict)]
        return ({"sources": hits, "output": tool.output} if hits else {"output": tool.output}), None
    query = _obj(parse_tool_input(tool.arguments or "")).get("query")
    result = search_result(hit_pairs(raw_hits), [query])
    return result, {"groq": {"type": tool.type, "output": tool.output, "search_results": tool.search_results}}


def _on_web_search(state: ChatState, hits: Any, out: list[LLMEvent]) -> None:
    """GLM: ``web_search`` hits next to ``choices``, on any chunk, possibly repeated: new hits
    (deduplicated by link) surface as one hosted web_search call + result."""
    new: list[dict[str, Any]] = []
    for hit in _list(hits):
        entry = _obj(hit)  # kept as sent: the hits ride in provider_metadata
        key = str(entry.get("link") or msgspec.json.encode(entry).decode())
        if not entry or key in state.web_seen:
            continue
        state.web_seen.add(key)
        new.append(entry)
    if not new:
        return
    _close_all(state, out)
    state.searched = True
    call_id = _hosted_id(state, WEB_SEARCH, len(state.web_seen) - len(new))
    result = search_result(hit_pairs(new, url="link"), dedupe=False)
    # dedupe=False: the hits are unique by link already, and source i must stay hit i
    emit_search(call_id, {}, result, out, result_metadata={"glm": {"web_search": new}})


def _on_annotations(state: ChatState, annotations: list[Annotation], out: list[LLMEvent]) -> None:
    for annotation in annotations:
        cite = annotation.url_citation
        if annotation.type != "url_citation" or cite is None:
            continue
        state.cited.append((cite.url, cite.title))
        if state.text_starts:
            out.append(_citation(state, cite))
        else:
            state.pending_citations.append(cite)  # OpenRouter sends sources before the text


def _citation(state: ChatState, cite: UrlCitation) -> Citation:
    start, end = cite.start_index, cite.end_index
    block_id, offset = _block_at(state, start)
    if start is None or end is None or end <= start:
        start = end = None  # no span (OpenRouter/Exa send 0..0): the source without a position
    else:
        start, end = start - offset, end - offset
    return Citation(block_id, cite.url, cite.title, start, end, cite.content)


def _block_at(state: ChatState, position: int | None) -> tuple[str, int]:
    if not state.text_starts:
        return "", 0  # the step produced no text to bind to
    chosen = state.text_starts[0]
    for entry in state.text_starts:
        if position is not None and entry[0] <= position:
            chosen = entry
    return chosen[1], chosen[0]


def _finish(state: ChatState, out: list[LLMEvent]) -> None:
    _close_all(state, out)
    _end_audio(state, out)
    for tool in state.tools.values():
        # a custom call's input is the model's text as written; only function arguments are JSON
        tool.finish(out, input="".join(tool.chunks) if tool.metadata is not None else None)
    if state.pending_citations:
        pending, state.pending_citations = state.pending_citations, []
        out.extend(_citation(state, cite) for cite in pending)
    if state.cited and not state.searched:
        state.searched = True
        search_from_citations(_hosted_id(state, WEB_SEARCH, 0), state.cited, out)
    reason = _FINISH.get(state.finish_reason or "", "unknown")
    if state.tools and reason == "stop":
        reason = "tool-calls"  # some servers say "stop" after calling tools
    elif state.refused and reason in ("stop", "unknown"):
        reason = "content-filter"  # a refusal ends with finish_reason "stop"
    state.reason = reason


def _usage(raw: dict[str, Any], quirks: ChatQuirks, service_tier: str | None) -> Usage:
    return chat_usage(raw, quirks.completion_has_reasoning, service_tier)


def on_halt(state: ChatState, out: list[LLMEvent]) -> None:
    if state.finish_reason is None and not state.done:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before a finish_reason or [DONE]")
    _finish(state, out)
    state.done = True
