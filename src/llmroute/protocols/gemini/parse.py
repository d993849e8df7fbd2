"""``gemini``, frames -> events: section 5 of the six (the stream decoders,
``step`` and one small handler per event type, ``whole``, ``on_halt``)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...framing.sse import SSEEvent
from ...route.classify import from_stream_event
from ...route.decoding import DECODE_ERRORS
from ...schema.errors import InvalidProviderOutputError
from ...schema.events import (
    FinishReason,
    LLMEvent,
    Media,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolResult,
)
from ...schema.mime import sniff_base64
from ...schema.usage import Usage
from ...schema.usage_read import modality_counts, usage_count, usage_from_cached, with_modalities
from .._partial_json import parse_path
from .._shared import ToolInput, decode_frame
from .grounding import NS, PartText, emit_grounding, hosted_id
from .state import GeminiState, StreamedCall
from .wire import NAME, Chunk, InlineData, PartIn

_decoder = msgspec.json.Decoder(Chunk)
_decode = _decoder.decode
_usage_decoder = msgspec.json.Decoder(dict[str, Any])

# 5. step / on_halt --------------------------------------------------------------------------------

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content-filter",
    "RECITATION": "content-filter",
    "BLOCKLIST": "content-filter",
    "PROHIBITED_CONTENT": "content-filter",
    "SPII": "content-filter",
    "IMAGE_SAFETY": "content-filter",
    "IMAGE_PROHIBITED_CONTENT": "content-filter",
    "IMAGE_RECITATION": "content-filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "LANGUAGE": "unknown",
    "OTHER": "unknown",
    "FINISH_REASON_UNSPECIFIED": "unknown",
}


def step(state: GeminiState, frame: bytes | SSEEvent, out: list[LLMEvent]) -> None:
    # ``SSEDataFraming`` hands over the event's data bytes (Gemini never reads the event name); an
    # ``SSEEvent`` is accepted too.
    data = frame if isinstance(frame, bytes) else frame.data
    try:
        chunk = _decode(data)
    except DECODE_ERRORS:  # blank frames are skipped; the slow path reports the raw frame
        if not data.strip():
            return
        chunk = decode_frame(_decoder, data, f"{NAME} chunk")
    on_chunk(state, chunk, out)


def whole(state: GeminiState, body: bytes, out: list[LLMEvent]) -> None:
    """A ``:generateContent`` body: one response with every part, read as a one-chunk stream. The
    body is whole, so one without ``finishReason`` is still an answer (finish ``unknown``), not a
    cut stream."""
    on_chunk(state, decode_frame(_decoder, body, f"{NAME} response"), out)
    if state.finish_reason is None and state.block_reason is None:
        state.finish_reason = "FINISH_REASON_UNSPECIFIED"


def on_chunk(state: GeminiState, chunk: Chunk, out: list[LLMEvent]) -> None:
    """One decoded ``GenerateContentResponse`` (``step`` decodes each frame into one; an envelope
    such as Code Assist's hands over the chunk it decoded)."""
    if chunk.error is not None:
        raise from_stream_event(chunk.error, NAME)
    if not state.started:
        state.started = True
        state.response_id = chunk.response_id
        state.metadata = {"id": chunk.response_id, "model": chunk.model_version}
    if chunk.usage_metadata:
        state.raw_usage = chunk.usage_metadata
    candidates = chunk.candidates
    if candidates:
        candidate = candidates[0]
        if candidate.index != 0:
            return  # candidateCount > 1: only the first candidate is surfaced
        content = candidate.content
        if content is not None and content.parts:
            for part in content.parts:
                text = part.text
                current = state.open
                thought = part.thought
                if (
                    text
                    and current is not None
                    and current.kind == ("thought" if thought else "text")
                    and (part.thought_signature is None or current.signature is None)
                ):  # hot path: the open block continues
                    if part.thought_signature is not None:
                        current.signature = part.thought_signature
                    if thought:
                        out.append(ReasoningDelta(current.block_id, text))
                    else:
                        current.chunks.append(text)
                        out.append(TextDelta(current.block_id, text))
                else:
                    _on_part(state, part, out)
        if candidate.grounding_metadata is not None:
            state.grounding.merge(candidate.grounding_metadata)
        if candidate.url_context_metadata is not None and candidate.url_context_metadata.url_metadata:
            state.url_context = candidate.url_context_metadata.url_metadata
        if candidate.finish_reason:
            state.finish_reason = candidate.finish_reason
            state.finish_message = candidate.finish_message or state.finish_message
    feedback = chunk.prompt_feedback
    if feedback is not None and feedback.block_reason:
        state.block_reason = feedback.block_reason
        state.finish_message = feedback.block_reason_message or state.finish_message


def _next_id(state: GeminiState, kind: str) -> str:
    id = f"{kind}-{state.counter}"
    state.counter += 1
    return id


def _on_part(state: GeminiState, part: PartIn, out: list[LLMEvent]) -> None:
    if part.function_call is not None:
        _on_function_call(state, part, out)
        return
    if state.streamed is not None and (
        part.text
        or part.executable_code
        or part.code_execution_result
        or part.inline_data
        or part.tool_call
        or part.tool_response
    ):
        _end_streamed_call(state, out)  # content after a call whose closing piece never came
    if part.executable_code is not None:
        _on_code(state, part, part.executable_code, out)
    elif part.code_execution_result is not None:
        _on_code_result(state, part, part.code_execution_result, out)
    elif part.tool_call is not None:
        _on_server_call(state, part, part.tool_call, out)
    elif part.tool_response is not None:
        _on_server_response(state, part, part.tool_response, out)
    elif part.inline_data is not None:
        if not part.thought:  # interim "thought" images (Gemini 3 image models) are not the answer
            _on_media(state, part, part.inline_data, out)
    else:
        _on_text(state, part, out)  # text, or an empty part carrying only a signature


def _on_text(state: GeminiState, part: PartIn, out: list[LLMEvent]) -> None:
    text = part.text or ""
    kind = "thought" if part.thought else "text"
    sig = part.thought_signature
    if not text and sig is None:
        return  # an empty part carries nothing ({"text": ""} closing a Gemini 3 stream)
    current = state.open
    if current is not None and current.kind == kind and (sig is None or current.signature is None):
        # continues the open block (an empty text part may carry the signature of the part)
        if sig is not None:
            current.signature = sig
    else:
        _close_all(state, out)
        current = PartText(kind, _next_id(state, "reasoning" if part.thought else "text"), sig)
        state.parts.append(current)
        state.open = current
        meta = {NS: {"thoughtSignature": sig}} if sig is not None and not part.thought else None
        out.append(ReasoningStart(current.block_id) if part.thought else TextStart(current.block_id, meta))
    if text:
        if part.thought:
            out.append(ReasoningDelta(current.block_id, text))
        else:
            current.chunks.append(text)
            out.append(TextDelta(current.block_id, text))


def _close_all(state: GeminiState, out: list[LLMEvent]) -> None:
    current = state.open
    if current is None:
        return
    state.open = None
    sig = current.signature
    meta = {NS: {"thoughtSignature": sig}} if sig is not None else None
    if current.kind == "thought":
        out.append(ReasoningEnd(current.block_id, sig, None, meta))
    else:
        out.append(TextEnd(current.block_id, meta))


def _call_id(state: GeminiState, given: str | None) -> str:
    if given:
        if given in state.call_ids:  # a second call under one id: the caller could answer only one
            raise InvalidProviderOutputError(f"{NAME}: function call id {given!r} repeated")
        state.call_ids.add(given)
        return given
    n = state.local_calls
    # Gemini 2.x sends no call ids: derive stable ones (identical under any re-chunking).
    return f"call_{state.response_id}_{n}" if state.response_id else f"call_{n}"


def _on_function_call(state: GeminiState, part: PartIn, out: list[LLMEvent]) -> None:
    call = part.function_call
    assert call is not None
    if call.name:
        _close_all(state, out)
        _end_streamed_call(state, out)
        sig = part.thought_signature
        meta = {NS: {"thoughtSignature": sig}} if sig is not None else None
        tool = ToolInput(_call_id(state, call.id), call.name, out, metadata=meta)
        state.local_calls += 1
        state.parts.append(PartText("other", tool.id, sig))
        if not call.will_continue and call.partial_args is None:
            tool.finish(out, input=call.args if call.args is not None else {})
            return
        state.streamed = StreamedCall(tool)
        for key, value in (call.args or {}).items():
            tool.delta(state.streamed.writer.set((key,), value), out)
    streamed = state.streamed
    if streamed is None:
        return  # a piece with no call open (``{}`` after a whole call) adds nothing
    for entry in call.partial_args or ():
        try:
            text = streamed.writer.set(parse_path(entry.json_path), entry.value())
        except ValueError as exc:
            raise InvalidProviderOutputError(
                f"{NAME}: partialArgs of {streamed.tool.name!r}: {exc}"
            ) from None
        streamed.tool.delta(text, out)
    if not call.will_continue:
        _end_streamed_call(state, out)


def _end_streamed_call(state: GeminiState, out: list[LLMEvent]) -> None:
    """Close the call whose arguments were streaming (its closing piece, another part, or the end)."""
    streamed = state.streamed
    if streamed is not None:
        state.streamed = None
        streamed.tool.delta(streamed.writer.finish(), out)
        streamed.tool.finish(out, input=streamed.writer.value)


def _on_media(state: GeminiState, part: PartIn, blob: InlineData, out: list[LLMEvent]) -> None:
    """One whole image (or audio) part; its thought signature rides along so it round-trips."""
    _close_all(state, out)
    sig = part.thought_signature
    media = Media(
        _next_id(state, "media"),
        blob.mime_type or sniff_base64(blob.data) or "application/octet-stream",
        blob.data,
        {NS: {"thoughtSignature": sig}} if sig is not None else None,
    )
    state.parts.append(PartText("other", media.id, sig))
    out.append(media)


def _is_file_search(code: dict[str, Any]) -> bool:
    """File search runs as generated code calling ``file_search.query(...)``: it is the file search
    call (its result comes later as ``retrievedContext`` grounding), not user-visible code execution."""
    return "file_search." in str(code.get("code", ""))


def _signed(sig: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Gemini's metadata for a part: its thought signature (and what else must go back with it)."""
    meta = {**(extra or {}), **({"thoughtSignature": sig} if sig is not None else {})}
    return {NS: meta} if meta else None


def _on_code(state: GeminiState, part: PartIn, code: dict[str, Any], out: list[LLMEvent]) -> None:
    _close_all(state, out)
    sig = part.thought_signature
    if _is_file_search(code):
        tool = ToolInput(hosted_id(state, "file_search"), "file_search", out, provider_executed=True)
        state.file_search_id = tool.id
    else:
        # its signature goes back with the code on the next turn (Gemini 3 refuses the turn without it)
        tool = ToolInput(
            hosted_id(state, "code"), "code_execution", out, provider_executed=True, metadata=_signed(sig)
        )
        state.pending_code_id = tool.id
    state.parts.append(PartText("other", tool.id, sig))
    tool.finish(out, input=code)


def _on_code_result(state: GeminiState, part: PartIn, result: dict[str, Any], out: list[LLMEvent]) -> None:
    _close_all(state, out)
    id = state.pending_code_id or hosted_id(state, "code")  # a result without its call gets its own id
    state.pending_code_id = None
    sig = part.thought_signature
    state.parts.append(PartText("other", id, sig))
    failed = result.get("outcome") not in (None, "OUTCOME_OK")
    out.append(ToolResult(id, "code_execution", result, failed, True, _signed(sig)))


def _server_tool_name(call: dict[str, Any]) -> str:
    """A server-side tool's name from its ``toolType`` (``GOOGLE_SEARCH_WEB`` -> ``google_search_web``)."""
    kind = call.get("toolType")
    return kind.lower() if isinstance(kind, str) and kind else "server_tool"


def _on_server_call(state: GeminiState, part: PartIn, call: dict[str, Any], out: list[LLMEvent]) -> None:
    """A Gemini 3 ``toolCall`` part: a hosted call Gemini ran itself, kept whole (with its thought
    signature) so the next turn sends it back as it came."""
    _close_all(state, out)
    given = call.get("id")
    id = given if isinstance(given, str) and given else hosted_id(state, "tool")
    sig = part.thought_signature
    tool = ToolInput(
        id, _server_tool_name(call), out, provider_executed=True, metadata=_signed(sig, {"toolCall": call})
    )
    state.parts.append(PartText("other", tool.id, sig))
    args = call.get("args")
    tool.finish(out, input=args if isinstance(args, dict) else {})


def _on_server_response(
    state: GeminiState, part: PartIn, response: dict[str, Any], out: list[LLMEvent]
) -> None:
    """A Gemini 3 ``toolResponse`` part: the result of the ``toolCall`` with its ``id``."""
    _close_all(state, out)
    given = response.get("id")
    id = given if isinstance(given, str) and given else hosted_id(state, "tool")
    sig = part.thought_signature
    state.parts.append(PartText("other", id, sig))
    result = response.get("response")
    meta = _signed(sig, {"toolResponse": response})
    out.append(ToolResult(id, _server_tool_name(response), result, False, True, meta))


def _usage(state: GeminiState) -> Usage | None:
    if state.raw_usage is None:
        return None
    raw = decode_frame(_usage_decoder, state.raw_usage, f"{NAME} usageMetadata")
    prompt, candidates, tool_prompt, thoughts, cached = (
        usage_count(raw, key, NAME)
        for key in (
            "promptTokenCount",
            "candidatesTokenCount",
            "toolUsePromptTokenCount",
            "thoughtsTokenCount",
            "cachedContentTokenCount",
        )
    )
    # input = prompt + tool-use prompt, output = candidates + thoughts (None when neither is given)
    sums = Usage(input_tokens=prompt, output_tokens=candidates) + Usage(
        input_tokens=tool_prompt, output_tokens=thoughts
    )
    output = sums.output_tokens
    searches = len(state.grounding.queries) if state.grounding.queries else None
    usage = usage_from_cached(
        input_tokens=sums.input_tokens,
        output_tokens=output,
        cache_read=cached,
        reasoning=thoughts if thoughts is not None or output is None else 0,
        web_search_requests=searches,
        raw=raw,
    )
    return _with_modalities(usage, raw)


def _with_modalities(usage: Usage, raw: dict[str, Any]) -> Usage:
    """The audio and image parts of ``promptTokensDetails`` (with the tool-use prompt's),
    ``cacheTokensDetails`` and ``candidatesTokensDetails``, where Gemini lists them."""
    prompt = modality_counts(raw.get("promptTokensDetails"), NAME)
    for modality, count in modality_counts(raw.get("toolUsePromptTokensDetails"), NAME).items():
        prompt[modality] = prompt.get(modality, 0) + count
    cached = modality_counts(raw.get("cacheTokensDetails"), NAME)
    output = modality_counts(raw.get("candidatesTokensDetails"), NAME)
    if not (prompt or cached or output):
        return usage
    return with_modalities(
        usage,
        input_audio=prompt.get("AUDIO"),
        cache_read_audio=cached.get("AUDIO"),
        input_image=prompt.get("IMAGE"),
        output_audio=output.get("AUDIO"),
        output_image=output.get("IMAGE"),
    )


def on_halt(state: GeminiState, out: list[LLMEvent]) -> None:
    if not state.done and state.finish_reason is None and state.block_reason is None:
        raise InvalidProviderOutputError(f"{NAME}: stream ended before a finishReason")
    _close_all(state, out)
    _end_streamed_call(state, out)
    if state.done:
        return
    emit_grounding(state, out)
    if state.block_reason is not None and state.finish_reason is None:
        reason: FinishReason = "content-filter"
    else:
        reason = _FINISH.get(state.finish_reason or "", "unknown")
    if reason == "stop" and state.local_calls:
        reason = "tool-calls"
    state.reason = reason
    state.usage = _usage(state)
    extra = {
        k: v
        for k, v in (
            ("finish_reason", state.finish_reason),
            ("finish_message", state.finish_message),
            ("block_reason", state.block_reason),
        )
        if v is not None
    }
    if extra:
        state.metadata = {**(state.metadata or {}), **extra}
    state.done = True
