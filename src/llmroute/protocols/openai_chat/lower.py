"""``openai_chat``, request -> body: section 4 of the six (``build_body`` and its
lowering helpers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...schema.content import MediaPart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ...schema.errors import InvalidRequestError
from ...schema.request import LLMRequest, ModelRef
from ...schema.tools import HostedTool, ToolDefinition
from .._shared import content_parts, data_url, json_arguments, lower_hosted, result_text, with_options
from ..openai_chat_custom import CustomCallOut, custom_names, is_custom_call, lower_custom, lower_custom_call
from .reasoning import reasoning_details_out
from .wire import (
    DEFAULT_QUIRKS,
    NAME,
    AssistantMessage,
    ChatBody,
    ChatQuirks,
    Function,
    FunctionDef,
    HostedToolLowering,
    StreamOptions,
    SystemMessage,
    ToolCallOut,
    ToolDef,
    ToolMessage,
    UserMessage,
)

# 4. build_body ------------------------------------------------------------------------------------


def _user_content(parts: tuple[Any, ...]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, MediaPart):
            content.append(_lower_media(part))
        else:
            raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")
    return content


def _lower_media(part: MediaPart) -> dict[str, Any]:
    if part.mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.mime_type.startswith("audio/") and not part.is_url:
        return {
            "type": "input_audio",
            "input_audio": {"data": part.base64(), "format": part.mime_type.split("/")[1]},
        }
    if part.is_url:
        raise InvalidRequestError(f"{NAME}: {part.mime_type} is only accepted inline, not by URL")
    return {"type": "file", "file": {"filename": part.filename or "file", "file_data": data_url(part)}}


def _lower_messages(request: LLMRequest, quirks: ChatQuirks) -> list[Any]:
    messages: list[Any] = []
    if request.system:
        messages.append(SystemMessage(content="\n\n".join(p.text for p in request.system)))
    custom = custom_names(request)
    for message in request.messages:
        messages.extend(_lower_message(message, quirks, custom))
    return messages


def _lower_message(message: Message, quirks: ChatQuirks, custom: frozenset[str]) -> list[Any]:
    role = message.role
    if role == "system":
        return [
            SystemMessage(content="\n\n".join(p.text for p in message.content if isinstance(p, TextPart)))
        ]
    if role == "user":
        return [UserMessage(content=_user_content(message.content))]
    if role == "assistant":
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
        calls = [
            _lower_call(p, custom)
            for p in message.content
            if isinstance(p, ToolCallPart) and not p.provider_executed
        ]
        reasoning = "".join(p.text for p in message.content if isinstance(p, ReasoningPart))
        return [
            AssistantMessage(
                content=text or None,
                tool_calls=calls or None,
                reasoning_content=(reasoning or None) if quirks.send_reasoning else None,
                reasoning_details=reasoning_details_out(message) if quirks.send_reasoning_details else None,
            )
        ]
    out: list[Any] = []
    media: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if part.provider_executed:
                continue
            out.append(ToolMessage(tool_call_id=part.id, content=result_text(part.result)))
            parts = content_parts(part.result)
            if parts:
                media.extend(_lower_media(p) for p in parts if isinstance(p, MediaPart))
        elif isinstance(part, TextPart):
            out.append(UserMessage(content=part.text))
    if media:
        # Chat tool messages carry text only; images a tool returned follow as a user message.
        out.append(UserMessage(content=media))
    return out


def _lower_call(part: ToolCallPart, custom: frozenset[str]) -> ToolCallOut | CustomCallOut:
    if is_custom_call(part, custom):
        return lower_custom_call(part)
    return ToolCallOut(id=part.id, function=Function(name=part.name, arguments=json_arguments(part.input)))


def _lower_tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode == "tool":
        if choice.name in custom_names(request):
            return {"type": "custom", "custom": {"name": choice.name}}
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def _lower_tools(request: LLMRequest, quirks: ChatQuirks) -> list[ToolDef | dict[str, Any]] | None:
    tools: list[ToolDef | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_lower_hosted(tool, quirks))
        elif tool.kind == "custom":
            tools.append(lower_custom(tool))
        else:
            tools.append(_lower_tool(tool))
    return tools or None


def _lower_tool(tool: ToolDefinition) -> ToolDef:
    return ToolDef(
        function=FunctionDef(
            name=tool.name,
            description=tool.description or None,
            parameters=tool.input_schema,
            strict=tool.strict,
        )
    )


def _lower_hosted(tool: HostedTool, quirks: ChatQuirks) -> dict[str, Any]:
    return lower_hosted(quirks.hosted_tools or HOSTED_TOOLS, tool, NAME)


def _response_format(request: LLMRequest) -> dict[str, Any] | None:
    out = request.output_schema
    if out is None:
        return {"type": "json_object"} if request.json_mode else None
    spec: dict[str, Any] = {"name": out.name, "schema": out.schema, "strict": out.strict}
    spec.update({"description": out.description} if out.description else {})
    return {"type": "json_schema", "json_schema": spec}


def make_build_body(quirks: ChatQuirks) -> Callable[[LLMRequest, ModelRef], ChatBody | dict[str, Any]]:
    def build_body(request: LLMRequest, model: ModelRef) -> ChatBody | dict[str, Any]:
        g = request.generation
        assert g is not None  # resolved by prepare()
        max_tokens = g.max_tokens
        stream = g.stream is not False
        body = ChatBody(
            model=model.id,
            messages=_lower_messages(request, quirks),
            tools=_lower_tools(request, quirks),
            tool_choice=_lower_tool_choice(request),
            stream=stream,
            stream_options=StreamOptions(True) if quirks.include_usage and stream else None,
            max_tokens=max_tokens if quirks.max_tokens_field == "max_tokens" else None,
            max_completion_tokens=max_tokens if quirks.max_tokens_field == "max_completion_tokens" else None,
            temperature=g.temperature,
            top_p=g.top_p,
            top_k=g.top_k,  # ``chat_support`` drops it (warned) where the server has none
            frequency_penalty=g.frequency_penalty,
            presence_penalty=g.presence_penalty,
            seed=g.seed,
            stop=list(g.stop) if g.stop else None,
            response_format=_response_format(request),
        )
        return with_options(body, request.options_for(model.provider))

    return build_body


build_body = make_build_body(DEFAULT_QUIRKS)


# Chat Completions has no hosted tools of its own: servers that have some (OpenRouter, GLM) declare
# their table as ``ChatQuirks.hosted_tools``.
HOSTED_TOOLS: dict[str, HostedToolLowering] = {}
# ``ToolDefinition.kind`` values Chat declares: functions, and custom tools (free-text input)
TOOL_KINDS = frozenset({"function", "custom"})
