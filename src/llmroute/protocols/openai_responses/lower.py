"""``openai_responses``, request -> body: section 4 of the six (``build_body`` and its
lowering helpers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...schema.content import (
    ApprovalRequestPart,
    ApprovalResponsePart,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ...schema.errors import InvalidRequestError
from ...schema.request import LLMRequest, ModelRef
from ...schema.tools import HostedTool, ToolDefinition
from .. import openai_responses_items as calls
from .._shared import content_parts, data_url, json_arguments, lower_hosted, ns, with_options
from ..openai_chat_custom import custom_names
from .wire import (
    NAME,
    NO_QUIRKS,
    OPENAI,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionTool,
    InputFile,
    InputImage,
    InputItem,
    InputText,
    MessageItem,
    OutputText,
    ReasoningItem,
    ResponsesBody,
    ResponsesQuirks,
    SummaryText,
    UserContent,
)

# 4. build_body ------------------------------------------------------------------------------------


def _text(parts: tuple[Any, ...]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, TextPart))


def _lower_media(part: MediaPart) -> InputImage | InputFile:
    if part.mime_type.startswith("image/"):
        return InputImage(image_url=data_url(part))
    if part.is_url:
        return InputFile(file_url=part.data)  # type: ignore[arg-type]
    return InputFile(filename=part.filename or "file", file_data=data_url(part))


def _user_content(part: Any) -> UserContent:
    if isinstance(part, TextPart):
        return InputText(part.text)
    if isinstance(part, MediaPart):
        return _lower_media(part)
    raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")


def _lower_tool_result(part: ToolResultPart) -> str | list[UserContent]:
    result = part.result
    if isinstance(result, str):
        return result
    parts = content_parts(result)
    if parts is not None:
        return [_user_content(p) for p in parts]
    return msgspec.json.encode(result).decode()


def _lower_messages(request: LLMRequest, keep_unencrypted_reasoning: bool) -> list[InputItem]:
    items: list[InputItem] = []
    custom = custom_names(request)
    # call id -> the output item type of a client built-in call, so its result answers in kind
    answers = {
        p.id: calls.CLIENT_OUTPUT[kind]
        for m in request.messages
        if m.role == "assistant"
        for p in m.content
        if isinstance(p, ToolCallPart) and (kind := calls.client_kind(p, custom)) is not None
    }
    for message in request.messages:
        if message.role == "system":
            items.append(MessageItem(role="system", content=_text(message.content)))
        elif message.role == "assistant":
            _lower_assistant(message, items, keep_unencrypted_reasoning, custom)
        else:
            _lower_user(message, items, answers)
    return items


def _lower_user(message: Message, items: list[InputItem], answers: dict[str, str]) -> None:
    """User and tool messages: content parts become one user message; tool results become
    ``function_call_output`` items, in order."""
    content: list[UserContent] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            if content:
                items.append(MessageItem(role="user", content=content))
                content = []
            if part.id in answers:
                items.append(calls.builtin_output(answers[part.id], part))
            elif not part.provider_executed:
                items.append(FunctionCallOutputItem(call_id=part.id, output=_lower_tool_result(part)))
        elif isinstance(part, TextPart | MediaPart):
            content.append(_user_content(part))
        elif isinstance(part, ApprovalResponsePart):
            if content:
                items.append(MessageItem(role="user", content=content))
                content = []
            items.append(calls.approval_response_item(part))
        else:
            raise InvalidRequestError(f"{NAME}: a {message.role} message cannot hold a {type(part).__name__}")
    if content:
        items.append(MessageItem(role="user", content=content))


def _lower_assistant(
    message: Message, items: list[InputItem], keep_unencrypted_reasoning: bool, custom: frozenset[str]
) -> None:
    last_text_item: str | None = None  # item id of the message item at the end of ``items``
    last_reasoning: str | None = None
    hosted: dict[str, dict[str, Any]] = {}
    for part in message.content:
        if isinstance(part, TextPart):
            meta = ns(part.provider_metadata, OPENAI)
            item_id = meta.get("item_id")
            tail = items[-1] if items else None
            if item_id is not None and item_id == last_text_item and isinstance(tail, MessageItem):
                tail.content.append(OutputText(part.text))  # type: ignore[union-attr, arg-type]
            else:
                items.append(
                    MessageItem(role="assistant", content=[OutputText(part.text)], phase=meta.get("phase"))
                )
            last_text_item, last_reasoning = item_id, None
            continue
        last_text_item = None
        if isinstance(part, ReasoningPart):
            item_id = ns(part.provider_metadata, OPENAI).get("item_id")
            if not isinstance(item_id, str):
                continue  # reasoning from another provider cannot be sent to this one
            tail = items[-1] if items else None
            if item_id == last_reasoning and isinstance(tail, ReasoningItem):
                if part.text:
                    tail.summary.append(SummaryText(part.text))
                tail.encrypted_content = tail.encrypted_content or part.encrypted
            else:
                items.append(
                    ReasoningItem(
                        id=item_id,
                        summary=[SummaryText(part.text)] if part.text else [],
                        encrypted_content=part.encrypted,
                    )
                )
            last_reasoning = item_id
            continue
        last_reasoning = None
        if isinstance(part, ToolCallPart):
            item = calls.call_item(part, hosted, custom)
            if item is not None:
                items.append(item)
            elif not part.provider_executed:
                items.append(
                    FunctionCallItem(call_id=part.id, name=part.name, arguments=json_arguments(part.input))
                )
        elif isinstance(part, ApprovalRequestPart):
            items.append(calls.approval_request_item(part))
        elif isinstance(part, ToolResultPart) and part.provider_executed:
            item = calls.hosted_result(hosted.get(part.id), part)
            if item is not None:  # a server-run call's output item
                items.append(item)
    if not keep_unencrypted_reasoning:
        # Without ``store``, a reasoning item the server cannot decrypt is a dangling reference.
        items[:] = [i for i in items if not (isinstance(i, ReasoningItem) and i.encrypted_content is None)]


def _lower_tools(request: LLMRequest, quirks: ResponsesQuirks) -> list[FunctionTool | dict[str, Any]] | None:
    tools: list[FunctionTool | dict[str, Any]] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            tools.append(_lower_hosted(tool, quirks))
        elif tool.kind == "function":
            tools.append(_lower_tool(tool))
        else:
            tools.append(calls.lower_builtin_tool(tool))
    return tools or None


def _lower_tool(tool: ToolDefinition) -> FunctionTool:
    return FunctionTool(
        name=tool.name,
        description=tool.description or None,
        parameters=tool.input_schema,
        strict=calls.function_strict(tool),
    )


def _lower_hosted(tool: HostedTool, quirks: ResponsesQuirks) -> dict[str, Any]:
    if tool.kind in quirks.hosted_kinds:  # the server's own (xAI ``x_search``): options as given
        return calls.lower_as_named(tool)
    table = HOSTED_TOOLS
    if quirks.hosted_remove:
        table = {kind: lower for kind, lower in table.items() if kind not in quirks.hosted_remove}
    return lower_hosted(table, tool, NAME)


def _lower_tool_choice(request: LLMRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if choice.mode != "tool":
        return choice.mode
    forced = next((w for t in request.tools if (w := calls.forced_tool(t, choice.name))), None)
    return forced or {"type": "function", "name": choice.name}


def build_body(
    request: LLMRequest, model: ModelRef, quirks: ResponsesQuirks = NO_QUIRKS
) -> ResponsesBody | dict[str, Any]:
    g = request.generation
    assert g is not None  # resolved by prepare()
    opts = dict(request.options_for(model.provider))
    reasoning: dict[str, Any] = dict(opts.pop("reasoning", None) or {})
    effort, summary = opts.pop("reasoning_effort", None), opts.pop("reasoning_summary", None)
    if effort is not None:
        reasoning["effort"] = effort
    if summary is not None:
        reasoning["summary"] = summary
    text: dict[str, Any] = dict(opts.pop("text", None) or {})
    verbosity = opts.pop("verbosity", None)
    if verbosity is not None:
        text["verbosity"] = verbosity
    fmt = calls.text_format(request)
    if fmt is not None:
        text["format"] = fmt
    store = opts.pop("store", None)
    include: list[str] = list(opts.pop("include", None) or [])
    calls.auto_include(request, include, store, reasoning)
    max_tokens = opts.pop("max_output_tokens", None)
    body = ResponsesBody(
        model=model.id,
        instructions="\n\n".join(p.text for p in request.system) if request.system else None,
        input=_lower_messages(request, keep_unencrypted_reasoning=store is not False),
        tools=_lower_tools(request, quirks),
        tool_choice=_lower_tool_choice(request),
        store=store,
        include=include or None,
        reasoning=reasoning or None,
        text=text or None,
        max_output_tokens=max_tokens if max_tokens is not None else g.max_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        service_tier=opts.pop("service_tier", None),
        prompt_cache_key=opts.pop("prompt_cache_key", None),
        stream=g.stream is not False,
    )
    return with_options(body, opts)


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {
    "web_search": calls.lower_web_search,
    "code_execution": calls.lower_code_execution,
    "shell": calls.lower_shell,  # run in OpenAI's container; the caller-run shell is a client tool
    "file_search": calls.lower_as_named,
    "image_generation": calls.lower_as_named,
    "mcp": calls.lower_as_named,
}
