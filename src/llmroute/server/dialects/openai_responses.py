"""The OpenAI Responses dialect (``POST /v1/responses``): the client's request to an ``LLMRequest``,
and a run's events back to a ``response`` object or its streamed events, errors as OpenAI's
``{"error": ...}`` (streamed: ``response.failed``).

Stateless like the rest of the gateway: ``previous_response_id`` and stored conversations are
refused; the client sends the whole input. Function tools pass through; the gateway's server tools
(``web_search``) never reach the client.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Mapping
from typing import Any, Literal

import msgspec

from ...schema.content import Part, ReasoningPart, TextPart, ToolCallPart
from ...schema.cost import Cost
from ...schema.errors import InvalidRequestError
from ...schema.events import (
    Finish,
    FinishReason,
    LLMEvent,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolResult,
)
from ...schema.options import GenerationOptions
from ...schema.request import LLMRequest, ModelRef, OutputSchema
from ...schema.response import LLMResponse
from ...schema.tools import ToolChoice, ToolDefinition
from ...schema.usage import Usage
from ..dialect import Dialect, Inbound, Unresolved, sse_comment
from ..failure import Failure, openai_error, openai_error_json
from .conversation import (
    Conversation,
    arguments_json,
    decode_body,
    function_tool,
    image_part,
    output_format,
    output_schema,
    tool_choice,
)

__all__ = [
    "DIALECT",
    "ResponsesRequest",
    "ResponsesStream",
    "decode",
    "response_object",
    "to_llm_request",
    "usage",
]

_encode = msgspec.json.Encoder().encode


class _InputPart(msgspec.Struct, frozen=True):
    type: str
    text: str | None = None
    image_url: str | None = None


class _Summary(msgspec.Struct, frozen=True):
    text: str = ""


class _Item(msgspec.Struct, frozen=True):
    """A message (``role`` + ``content``), a ``function_call``, a ``function_call_output`` (text or
    content parts) or a ``reasoning`` item (summary and encrypted content, from an earlier turn)."""

    type: str = "message"
    role: Literal["system", "developer", "user", "assistant"] | None = None
    content: str | list[_InputPart] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | list[_InputPart] | None = None
    id: str | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None


class _Tool(msgspec.Struct, frozen=True):
    type: str
    name: str | None = None
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class _Format(msgspec.Struct, frozen=True):
    type: Literal["text", "json_schema", "json_object"]
    name: str | None = None
    schema: dict[str, Any] | None = None
    description: str | None = None
    strict: bool | None = None


class _Text(msgspec.Struct, frozen=True):
    format: _Format | None = None


class _NamedTool(msgspec.Struct, frozen=True):
    type: str
    name: str


class ResponsesRequest(msgspec.Struct, frozen=True):
    """The fields of ``POST /v1/responses`` the gateway honours; others are ignored."""

    model: str
    input: str | list[_Item]
    instructions: str | None = None
    stream: bool = False
    tools: list[_Tool] | None = None
    tool_choice: str | _NamedTool | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    text: _Text | None = None
    previous_response_id: str | None = None


_decoder = msgspec.json.Decoder(ResponsesRequest)


def decode(body: bytes, path: Mapping[str, str] | None = None) -> Inbound[None]:
    """A Responses body as the gateway's ``Inbound``."""
    req = decode_body(_decoder, body)
    return Inbound(req.model, req.stream, to_llm_request(req, Unresolved(req.model)), None)


def to_llm_request(req: ResponsesRequest, model: ModelRef) -> LLMRequest:
    if req.previous_response_id is not None:
        raise InvalidRequestError(
            "previous_response_id: the gateway is stateless; send the whole input",
            code="unsupported_parameter",
        )
    conversation = Conversation([TextPart(req.instructions)] if req.instructions else [], field="input")
    items = [_Item(role="user", content=req.input)] if isinstance(req.input, str) else req.input
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if item.type == "message":
            role = item.role
            if role is None:
                raise InvalidRequestError(f"{where}.role: required on a message")
            parts = _parts(item, where)
            if role in ("system", "developer"):
                conversation.instructions(parts)
            else:  # an assistant message joins the calls next to it
                conversation.add(role, parts, merge=role == "assistant")
        elif item.type == "function_call":
            if not item.call_id or not item.name:
                raise InvalidRequestError(f"{where}: a function_call needs call_id and name")
            call = conversation.call(item.call_id, item.name, item.arguments, f"{where}.arguments")
            conversation.add("assistant", (call,), merge=True)
        elif item.type == "function_call_output":
            if not item.call_id:
                raise InvalidRequestError(f"{where}.call_id: required on a function_call_output")
            output = item.output or ""
            if isinstance(output, list):  # content parts: text and images the tool returned
                output = _parts(_Item(role="user", content=output), f"{where}.output")
            conversation.result(item.call_id, output)
        elif item.type == "reasoning":
            text = "\n\n".join(s.text for s in item.summary or () if s.text)
            meta = {"openai": {"item_id": item.id}} if item.id else None
            reasoning = ReasoningPart(text, encrypted=item.encrypted_content, provider_metadata=meta)
            conversation.add("assistant", (reasoning,), merge=True)
        else:
            raise InvalidRequestError(f"{where}.type: unsupported input item {item.type!r}")
    schema, json_mode = _output(req.text)
    tools: list[ToolDefinition] = []
    for i, tool in enumerate(req.tools or ()):
        if tool.type != "function" or not tool.name:
            raise InvalidRequestError(f"tools[{i}]: only function tools (with a name) are supported")
        tools.append(function_tool(tool.name, tool.description, tool.parameters, tool.strict))
    return conversation.request(
        model,
        tools=tools,
        tool_choice=_tool_choice(req.tool_choice),
        generation=GenerationOptions(
            max_tokens=req.max_output_tokens, temperature=req.temperature, top_p=req.top_p
        ),
        output_schema=schema,
        json_mode=json_mode,
    )


def _parts(item: _Item, where: str) -> tuple[Part, ...]:
    content = item.content
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),)
    parts: list[Part] = []
    for j, part in enumerate(content):
        if part.type in ("input_text", "output_text", "text") and part.text is not None:
            parts.append(TextPart(part.text))
        elif part.type == "input_image" and part.image_url is not None and item.role == "user":
            parts.append(image_part(part.image_url, f"{where}.content[{j}].image_url"))
        else:
            raise InvalidRequestError(f"{where}.content[{j}]: unsupported content part {part.type!r}")
    return tuple(parts)


def _tool_choice(choice: str | _NamedTool | None) -> ToolChoice | None:
    if isinstance(choice, _NamedTool):
        return ToolChoice.named(choice.name)
    return tool_choice(choice)


def _output(text: _Text | None) -> tuple[OutputSchema | None, bool]:
    """``text.format``: ``json_schema`` -> the output schema, ``json_object`` -> JSON mode."""
    fmt = text.format if text is not None else None
    if fmt is None:
        return None, False
    schema = None
    if fmt.schema is not None and fmt.name:
        schema = output_schema(fmt.name, fmt.schema, fmt.description, fmt.strict)
    return output_format(fmt.type, schema, "text.format")


# -- the answer ------------------------------------------------------------------------------------


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def usage(value: Usage | None, cost: Cost | None = None) -> dict[str, Any] | None:
    """The Responses usage object, plus ``cost`` in USD when it is known."""
    if value is None:
        return None
    inputs = value.input_tokens or 0
    outputs = value.output_tokens or 0
    out: dict[str, Any] = {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": value.cache_read_tokens or 0},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": value.reasoning_tokens or 0},
        "total_tokens": inputs + outputs,
    }
    if cost is not None:
        out["cost"] = float(cost.total)
    return out


def status(reason: FinishReason) -> tuple[str, dict[str, str] | None]:
    if reason == "length":
        return "incomplete", {"reason": "max_output_tokens"}
    if reason == "content-filter":
        return "incomplete", {"reason": "content_filter"}
    return "completed", None


def message_item(id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(call: ToolCallPart) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments_json(call.input),
        "status": "completed",
    }


def envelope(
    id: str,
    model: str,
    created: int,
    state: str,
    output: list[dict[str, Any]],
    usage_value: dict[str, Any] | None = None,
    incomplete: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "id": id,
        "object": "response",
        "created_at": created,
        "status": state,
        "model": model,
        "output": output,
        "incomplete_details": incomplete,
        "error": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage_value,
    }


def whole(inbound: Inbound[None], response: LLMResponse, hidden: frozenset[str]) -> bytes:
    return _encode(response_object(response, inbound.model, hidden))


def response_object(response: LLMResponse, model: str, hidden: Collection[str]) -> dict[str, Any]:
    """The ``response`` object from the final step; calls to ``hidden`` (server) tools left out."""
    output: list[dict[str, Any]] = []
    if response.text:
        output.append(message_item(new_id("msg"), response.text))
    output.extend(
        call_item(p)
        for p in response.message.content
        if isinstance(p, ToolCallPart) and not p.provider_executed and p.name not in hidden
    )
    state, incomplete = status(response.finish_reason)
    return envelope(
        new_id("resp"),
        model,
        int(time.time()),
        state,
        output,
        usage(response.usage, response.cost),
        incomplete,
    )


class ResponsesStream:
    """One streamed answer as Responses events: one message item per run of text (closed when a
    tool call comes between), client function calls as items whose arguments stream, then
    ``response.completed`` (``response.incomplete``, ``response.failed``)."""

    __slots__ = (
        "_created",
        "_hidden",
        "_id",
        "_model",
        "_output",
        "_sequence",
        "_streaming",
        "_text",
        "_text_id",
    )

    def __init__(self, inbound: Inbound[None], hidden: frozenset[str]) -> None:
        self._id, self._created, self._model = new_id("resp"), int(time.time()), inbound.model
        self._hidden = hidden
        self._sequence = 0
        self._output: list[dict[str, Any]] = []
        self._text_id: str | None = None
        self._text: list[str] = []
        # calls whose arguments stream: id -> (the added item, its output index, fragments so far)
        self._streaming: dict[str, tuple[dict[str, Any], int, list[str]]] = {}

    def _event(self, type: str, **fields: Any) -> bytes:
        self._sequence += 1
        body = {"type": type, "sequence_number": self._sequence, **fields}
        return b"event: " + type.encode() + b"\ndata: " + _encode(body) + b"\n\n"

    def _close_text(self, out: list[bytes]) -> None:
        text_id = self._text_id
        if text_id is None:
            return
        index, full = len(self._output), "".join(self._text)
        part: dict[str, Any] = {"type": "output_text", "text": full, "annotations": []}
        item = message_item(text_id, full)
        event = self._event
        out.append(
            event(
                "response.output_text.done", item_id=text_id, output_index=index, content_index=0, text=full
            )
        )
        out.append(
            event(
                "response.content_part.done", item_id=text_id, output_index=index, content_index=0, part=part
            )
        )
        out.append(event("response.output_item.done", output_index=index, item=item))
        self._output.append(item)
        self._text_id = None
        self._text.clear()

    def opening(self) -> bytes:
        started = envelope(self._id, self._model, self._created, "in_progress", [])
        return self._event("response.created", response=started) + self._event(
            "response.in_progress", response=started
        )

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        if isinstance(event, TextDelta):
            self._text_delta(event, out)
        elif isinstance(event, ToolInputStart):
            if not event.provider_executed and event.name not in self._hidden:
                self._close_text(out)
                item = {
                    "type": "function_call",
                    "id": new_id("fc"),
                    "call_id": event.id,
                    "name": event.name,
                    "arguments": "",
                    "status": "in_progress",
                }
                index = len(self._output)
                self._streaming[event.id] = (item, index, [])
                out.append(self._event("response.output_item.added", output_index=index, item=item))
                self._output.append(item)  # its slot; replaced by the finished item
        elif isinstance(event, ToolInputDelta):
            call = self._streaming.get(event.id)
            if call is not None:
                call[2].append(event.text)
                out.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=call[0]["id"],
                        output_index=call[1],
                        delta=event.text,
                    )
                )
        elif isinstance(event, ToolCall) and not event.provider_executed:
            self._call(event, out)
        elif isinstance(event, ToolResult) and event.name in self._hidden:
            out.append(sse_comment(event))

    def _text_delta(self, ev: TextDelta, out: list[bytes]) -> None:
        text_id, index = self._text_id, len(self._output)
        if text_id is None:
            self._text_id = text_id = new_id("msg")
            item: dict[str, Any] = {
                "type": "message",
                "id": text_id,
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": []}
            out.append(self._event("response.output_item.added", output_index=index, item=item))
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=text_id,
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            )
        self._text.append(ev.text)
        out.append(
            self._event(
                "response.output_text.delta",
                item_id=text_id,
                output_index=index,
                content_index=0,
                delta=ev.text,
            )
        )

    def _call(self, ev: ToolCall, out: list[bytes]) -> None:
        self._close_text(out)
        call = self._streaming.pop(ev.id, None)
        output = self._output
        if call is not None:
            opened, index, chunks = call
            joined = "".join(chunks) if chunks else arguments_json(ev.input)
            if not chunks:
                out.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=opened["id"],
                        output_index=index,
                        delta=joined,
                    )
                )
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    item_id=opened["id"],
                    output_index=index,
                    name=ev.name,
                    arguments=joined,
                )
            )
            item = {**opened, "arguments": joined, "status": "completed"}
            output[index] = item
            out.append(self._event("response.output_item.done", output_index=index, item=item))
        elif ev.name in self._hidden:
            out.append(sse_comment(ev))
        else:
            item = call_item(ToolCallPart(ev.id, ev.name, ev.input))
            out.append(self._event("response.output_item.added", output_index=len(output), item=item))
            out.append(self._event("response.output_item.done", output_index=len(output), item=item))
            output.append(item)

    def failed(self, failure: Failure) -> bytes:
        body = envelope(self._id, self._model, self._created, "failed", self._output)
        body["error"] = openai_error(failure)["error"]
        return self._event("response.failed", response=body)

    def end(self, finish: Finish | None, cost: Cost | None) -> bytes:
        out: list[bytes] = []
        self._close_text(out)
        state, incomplete = status(finish.reason if finish is not None else "stop")
        usage_value = usage(finish.usage if finish is not None else None, cost)
        done = envelope(self._id, self._model, self._created, state, self._output, usage_value, incomplete)
        kind = "response.completed" if state == "completed" else "response.incomplete"
        return b"".join(out) + self._event(kind, response=done)


DIALECT: Dialect[None] = Dialect(
    name="openai-responses",
    paths=("/v1/responses",),
    decode=decode,
    whole=whole,
    stream=ResponsesStream,
    error=openai_error_json,
)
"""OpenAI Responses (stateless), as the gateway serves it."""
