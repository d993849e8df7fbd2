"""The OpenAI Chat Completions dialect (``POST /v1/chat/completions``): a client's body to an
``LLMRequest``, and a run's events back to a ``chat.completion`` or its ``chat.completion.chunk``
stream, errors as OpenAI's ``{"error": ...}``.

The gateway's own server tools (``web_search``) never reach the client: their calls and results are
left out of responses (streamed, they show as SSE comments). Text streams from every step; a
non-streamed answer is the final step's text.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Mapping
from typing import Any, Literal, cast

import msgspec

from ... import client_tools
from ...protocols._shared import ns
from ...protocols.openai_chat_custom import CUSTOM_ITEM, call_metadata
from ...schema.content import MediaPart, Part, ReasoningPart, TextPart, ToolCallPart
from ...schema.cost import Cost
from ...schema.errors import InvalidRequestError
from ...schema.events import (
    Finish,
    FinishReason,
    LLMEvent,
    ReasoningDelta,
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
    "ChatReply",
    "ChatRequest",
    "ChatStream",
    "completion",
    "decode",
    "finish_reason",
    "new_id",
    "to_llm_request",
    "usage",
]

_encode = msgspec.json.Encoder().encode


# -- the client's request --------------------------------------------------------------------------


class _ImageUrl(msgspec.Struct, frozen=True):
    url: str
    detail: str | None = None


class _InputAudio(msgspec.Struct, frozen=True):
    data: str
    format: str


class _ContentPart(msgspec.Struct, frozen=True):
    type: str
    text: str | None = None
    refusal: str | None = None  # an assistant's refusal part, sent back in the history
    image_url: _ImageUrl | None = None
    input_audio: _InputAudio | None = None


class _Function(msgspec.Struct, frozen=True):
    name: str
    arguments: str = ""


class _CustomInput(msgspec.Struct, frozen=True):
    name: str
    input: str = ""


class _ToolCallIn(msgspec.Struct, frozen=True):
    id: str
    function: _Function | None = None
    type: str = "function"
    custom: _CustomInput | None = None  # a custom tool's call: the model's free text


class _MessageIn(msgspec.Struct, frozen=True):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[_ContentPart] | None = None
    name: str | None = None
    tool_calls: list[_ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    function_call: _Function | None = None  # the legacy single call, answered by role "function"


class _FunctionDef(msgspec.Struct, frozen=True):
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class _CustomDef(msgspec.Struct, frozen=True):
    name: str
    description: str = ""
    format: dict[str, Any] | None = None  # {"type": "text"} or {"type": "grammar", "grammar": {...}}


class _ToolIn(msgspec.Struct, frozen=True):
    function: _FunctionDef | None = None
    type: Literal["function", "custom"] = "function"
    custom: _CustomDef | None = None


class _NamedFunction(msgspec.Struct, frozen=True):
    name: str


class _NamedChoice(msgspec.Struct, frozen=True):
    function: _NamedFunction | None = None
    type: str = "function"
    custom: _NamedFunction | None = None


class _JsonSchema(msgspec.Struct, frozen=True):
    name: str
    schema: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    description: str | None = None
    strict: bool | None = None


class _ResponseFormat(msgspec.Struct, frozen=True):
    type: Literal["text", "json_schema", "json_object"]
    json_schema: _JsonSchema | None = None


class _StreamOptions(msgspec.Struct, frozen=True):
    include_usage: bool = False


class ChatRequest(msgspec.Struct, frozen=True):
    """The fields of ``POST /v1/chat/completions`` the gateway honours; others are ignored."""

    model: str
    messages: list[_MessageIn]
    stream: bool = False
    stream_options: _StreamOptions | None = None
    tools: list[_ToolIn] | None = None
    tool_choice: str | _NamedChoice | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int | None = None
    response_format: _ResponseFormat | None = None


class ChatReply(msgspec.Struct, frozen=True):
    """What a Chat answer needs of its request."""

    include_usage: bool = False
    """``stream_options.include_usage``: a last chunk carries the usage."""
    custom: frozenset[str] = frozenset()
    """The request's custom (free-text) tools: their calls are sent whole, not as argument deltas."""


_decoder = msgspec.json.Decoder(ChatRequest)


def decode(body: bytes, path: Mapping[str, str] | None = None) -> Inbound[ChatReply]:
    """A Chat Completions body as the gateway's ``Inbound``."""
    chat = decode_body(_decoder, body)
    custom = frozenset(t.custom.name for t in chat.tools or () if t.type == "custom" and t.custom is not None)
    options = chat.stream_options
    reply = ChatReply(options is not None and options.include_usage, custom)
    return Inbound(chat.model, chat.stream, to_llm_request(chat, Unresolved(chat.model)), reply)


def to_llm_request(chat: ChatRequest, model: ModelRef) -> LLMRequest:
    if chat.n not in (None, 1):
        raise InvalidRequestError("n: only one choice per request is supported", code="unsupported_parameter")
    conversation = Conversation()
    legacy: list[tuple[str, str]] = []  # legacy function calls not yet answered: (id, name)
    for i, message in enumerate(chat.messages):
        role = message.role
        if role in ("system", "developer"):
            conversation.instructions(TextPart(t) for t in _texts(message, i))
        elif role == "user":
            conversation.add("user", _user_parts(message, i))
        elif role == "assistant":
            parts = _assistant_parts(message, i, conversation)
            if message.function_call is not None:
                call_id = f"call_legacy_{i}"
                call = message.function_call
                where = f"messages[{i}].function_call.arguments"
                parts = (*parts, conversation.call(call_id, call.name, call.arguments, where))
                legacy.append((call_id, call.name))
            conversation.add("assistant", parts)
        elif role == "function":
            if not message.name:
                raise InvalidRequestError(f"messages[{i}].name: required on a function message")
            match = next((c for c in reversed(legacy) if c[1] == message.name), None)
            if match is None:
                raise InvalidRequestError(
                    f"messages[{i}]: a function message for {message.name!r} with no assistant "
                    "function_call before it"
                )
            legacy.remove(match)
            conversation.result(match[0], "\n".join(_texts(message, i)), message.name)
        else:
            if not message.tool_call_id:
                raise InvalidRequestError(f"messages[{i}].tool_call_id: required on a tool message")
            conversation.result(message.tool_call_id, "\n".join(_texts(message, i)), message.name or "")
    stop = chat.stop
    generation = GenerationOptions(
        max_tokens=chat.max_completion_tokens if chat.max_completion_tokens is not None else chat.max_tokens,
        temperature=chat.temperature,
        top_p=chat.top_p,
        frequency_penalty=chat.frequency_penalty,
        presence_penalty=chat.presence_penalty,
        seed=chat.seed,
        stop=(stop,) if isinstance(stop, str) else (tuple(stop) if stop else None),
    )
    schema, json_mode = _output(chat.response_format)
    return conversation.request(
        model,
        tools=(_tool(t, i) for i, t in enumerate(chat.tools or ())),
        tool_choice=_tool_choice(chat.tool_choice),
        generation=generation,
        output_schema=schema,
        json_mode=json_mode,
    )


def _texts(message: _MessageIn, i: int) -> list[str]:
    content = message.content
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for j, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise InvalidRequestError(f"messages[{i}].content[{j}]: only text parts are allowed here")
        out.append(part.text)
    return out


def _user_parts(message: _MessageIn, i: int) -> tuple[Part, ...]:
    content = message.content
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),)
    parts: list[Part] = []
    for j, part in enumerate(content):
        if part.type == "text" and part.text is not None:
            parts.append(TextPart(part.text))
        elif part.type == "image_url" and part.image_url is not None:
            parts.append(image_part(part.image_url.url, f"messages[{i}].content[{j}].image_url.url"))
        elif part.type == "input_audio" and part.input_audio is not None:
            parts.append(MediaPart(f"audio/{part.input_audio.format}", part.input_audio.data))
        else:
            raise InvalidRequestError(f"messages[{i}].content[{j}]: unsupported content part {part.type!r}")
    return tuple(parts)


def _assistant_parts(message: _MessageIn, i: int, conversation: Conversation) -> tuple[Part, ...]:
    parts: list[Part] = []
    if message.reasoning_content:
        parts.append(ReasoningPart(message.reasoning_content))
    content = message.content
    if isinstance(content, list):  # text and refusal parts, in order
        for j, piece in enumerate(content):
            text = piece.refusal if piece.type == "refusal" else piece.text if piece.type == "text" else None
            if text is None:
                raise InvalidRequestError(
                    f"messages[{i}].content[{j}]: only text and refusal parts are allowed here"
                )
            if text:
                parts.append(TextPart(text))
    elif content:
        parts.append(TextPart(content))
    if message.refusal and not content:
        parts.append(TextPart(message.refusal))
    for j, call in enumerate(message.tool_calls or ()):
        where = f"messages[{i}].tool_calls[{j}].function.arguments"
        if call.custom is not None:
            # the free text goes in as a JSON string, so the conversation records the call's name
            text = msgspec.json.encode(call.custom.input).decode()
            part = conversation.call(call.id, call.custom.name, text, where)
            parts.append(msgspec.structs.replace(part, provider_metadata=call_metadata()))
        elif call.function is not None:
            parts.append(conversation.call(call.id, call.function.name, call.function.arguments, where))
        else:
            raise InvalidRequestError(f"messages[{i}].tool_calls[{j}]: a function or custom call is required")
    return tuple(parts)


def _tool(tool: _ToolIn, i: int) -> ToolDefinition:
    """A function tool, or a custom tool (its grammar given nested, as Chat takes it)."""
    if tool.custom is not None:
        spec = tool.custom
        grammar: Any = (spec.format or {}).get("grammar")
        if isinstance(grammar, dict) and "definition" in grammar:
            found = cast("dict[str, Any]", grammar)
            return client_tools.custom(
                spec.name, spec.description, grammar=found["definition"], syntax=found.get("syntax", "lark")
            )
        return client_tools.custom(spec.name, spec.description)
    fn = tool.function
    if fn is None:
        raise InvalidRequestError(f"tools[{i}]: a function or custom tool definition is required")
    return function_tool(fn.name, fn.description, fn.parameters, fn.strict)


def _tool_choice(choice: str | _NamedChoice | None) -> ToolChoice | None:
    if isinstance(choice, _NamedChoice):
        named = choice.custom or choice.function
        if named is None:
            raise InvalidRequestError("tool_choice: name a function or a custom tool")
        return ToolChoice.named(named.name)
    return tool_choice(choice)


def _output(fmt: _ResponseFormat | None) -> tuple[OutputSchema | None, bool]:
    """``response_format``: ``json_schema`` -> the output schema, ``json_object`` -> JSON mode."""
    if fmt is None:
        return None, False
    spec = fmt.json_schema
    schema = (
        output_schema(spec.name, spec.schema, spec.description, spec.strict) if spec is not None else None
    )
    return output_format(fmt.type, schema, "response_format")


# -- the answer ------------------------------------------------------------------------------------

_FINISH: dict[str, str] = {
    "stop": "stop",
    "length": "length",
    "tool-calls": "tool_calls",
    "content-filter": "content_filter",
}


def finish_reason(reason: FinishReason) -> str:
    return _FINISH.get(reason, "stop")


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage(value: Usage | None, cost: Cost | None = None) -> dict[str, Any] | None:
    """OpenAI's usage object, plus ``cost`` in USD (as OpenRouter reports it) when it is known."""
    if value is None:
        return None
    prompt = value.input_tokens or 0
    completion_tokens = value.output_tokens or 0
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }
    if value.cache_read_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": value.cache_read_tokens}
    if value.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": value.reasoning_tokens}
    if cost is not None:
        out["cost"] = float(cost.total)
    return out


def tool_call(call: ToolCall | ToolCallPart, index: int | None = None) -> dict[str, Any]:
    if ns(call.provider_metadata, "openai").get("item_type") == CUSTOM_ITEM:
        out: dict[str, Any] = {
            "id": call.id,
            "type": "custom",
            "custom": {"name": call.name, "input": arguments_json(call.input)},
        }
    else:
        out = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_json(call.input)},
        }
    if index is not None:
        out["index"] = index
    return out


def whole(inbound: Inbound[ChatReply], response: LLMResponse, hidden: frozenset[str]) -> bytes:
    return _encode(completion(response, inbound.model, hidden))


def completion(response: LLMResponse, model: str, hidden: Collection[str]) -> dict[str, Any]:
    """A ``chat.completion`` from the final step; calls to ``hidden`` (server) tools left out."""
    calls = [
        p
        for p in response.message.content
        if isinstance(p, ToolCallPart) and not p.provider_executed and p.name not in hidden
    ]
    message: dict[str, Any] = {"role": "assistant", "content": response.text or (None if calls else "")}
    if response.reasoning:
        message["reasoning_content"] = response.reasoning
    if calls:
        message["tool_calls"] = [tool_call(c) for c in calls]
    return {
        "id": new_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason(response.finish_reason),
                "logprobs": None,
            }
        ],
        "usage": usage(response.usage, response.cost),
    }


class ChatStream:
    """One streamed answer as ``chat.completion.chunk`` SSE events, ended by ``data: [DONE]``.
    Client calls stream their arguments as they come; custom tools' calls come whole."""

    __slots__ = ("_created", "_hidden", "_id", "_model", "_reply", "_streaming", "_tool_index")

    def __init__(self, inbound: Inbound[ChatReply], hidden: frozenset[str]) -> None:
        self._id, self._created, self._model = new_id(), int(time.time()), inbound.model
        self._reply, self._hidden = inbound.reply, hidden
        self._tool_index = 0
        # calls whose arguments stream as they come: id -> [index, whether any fragment was sent]
        self._streaming: dict[str, list[Any]] = {}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        body: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [choice],
        }
        return b"data: " + _encode(body) + b"\n\n"

    def _arguments(self, index: int, text: str) -> bytes:
        return self._chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

    def opening(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        if isinstance(event, TextDelta):
            out.append(self._chunk({"content": event.text}))
        elif isinstance(event, ReasoningDelta):
            out.append(self._chunk({"reasoning_content": event.text}))
        elif isinstance(event, ToolInputStart):
            name = event.name
            if not event.provider_executed and name not in self._hidden and name not in self._reply.custom:
                index = self._tool_index
                self._streaming[event.id] = [index, False]
                opened = {"id": event.id, "type": "function", "function": {"name": name, "arguments": ""}}
                out.append(self._chunk({"tool_calls": [{"index": index, **opened}]}))
                self._tool_index += 1
        elif isinstance(event, ToolInputDelta):
            call = self._streaming.get(event.id)
            if call is not None:
                call[1] = True
                out.append(self._arguments(call[0], event.text))  # the upstream's bytes, as they came
        elif isinstance(event, ToolCall) and not event.provider_executed:
            call = self._streaming.pop(event.id, None)
            if call is not None:
                if not call[1]:  # arguments given whole at the end, not streamed
                    out.append(self._arguments(call[0], arguments_json(event.input)))
            elif event.name in self._hidden:
                out.append(sse_comment(event))
            else:
                out.append(self._chunk({"tool_calls": [tool_call(event, self._tool_index)]}))
                self._tool_index += 1
        elif isinstance(event, ToolResult) and event.name in self._hidden:
            out.append(sse_comment(event))

    def failed(self, failure: Failure) -> bytes:
        return b"data: " + _encode(openai_error(failure)) + b"\n\n"

    def end(self, finish: Finish | None, cost: Cost | None) -> bytes:
        reason = finish_reason(finish.reason) if finish is not None else "stop"
        tail = [self._chunk({}, reason)]
        if self._reply.include_usage:
            body: dict[str, Any] = {
                "id": self._id,
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": self._model,
                "choices": [],
                "usage": usage(finish.usage if finish is not None else None, cost),
            }
            tail.append(b"data: " + _encode(body) + b"\n\n")
        tail.append(b"data: [DONE]\n\n")
        return b"".join(tail)


DIALECT: Dialect[ChatReply] = Dialect(
    name="openai-chat",
    paths=("/v1/chat/completions",),
    decode=decode,
    whole=whole,
    stream=ChatStream,
    error=openai_error_json,
)
"""OpenAI Chat Completions, as the gateway serves it."""
