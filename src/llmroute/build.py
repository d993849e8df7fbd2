"""Constructors for requests and messages: the one way to build them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .schema.content import (
    ApprovalResponsePart,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .schema.errors import InvalidRequestError
from .schema.events import ApprovalRequest
from .schema.options import CachePolicy, GenerationOptions, HttpOverlay
from .schema.request import LLMRequest, ModelRef, OutputSchema
from .schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec
from .schema.validate import validate_request

if TYPE_CHECKING:
    from .tools.tool import Tool

__all__ = ["approval", "assistant", "request", "system", "tool_message", "user"]

PartLike = str | Part


_PART_TYPES = (TextPart, MediaPart, ReasoningPart, ToolCallPart, ToolResultPart)


def _parts(content: object, param: str) -> tuple[Part, ...]:
    """Text, a part, or a sequence of them; anything else is an ``InvalidRequestError``."""
    if isinstance(content, str):
        return (TextPart(content),)
    if isinstance(content, _PART_TYPES):
        return (content,)
    if isinstance(content, list | tuple):
        items = cast(Sequence[object], content)
        parts: list[Part] = []
        for item in items:
            if isinstance(item, str):
                parts.append(TextPart(item))
            elif isinstance(item, _PART_TYPES):
                parts.append(item)
            else:
                raise _wrong(param, "text or content parts", item)
        return tuple(parts)
    raise _wrong(param, "text or content parts", content)


def _blank(parts: Sequence[Part]) -> bool:
    """No parts, or only text that is empty or whitespace: nothing for the model to answer."""
    return all(isinstance(p, TextPart) and not p.text.strip() for p in parts)


def _wrong(param: str, expected: str, value: object) -> InvalidRequestError:
    return InvalidRequestError(f"{param}: expected {expected}, got {type(value).__name__}", param=param)


def user(*content: PartLike) -> Message:
    return Message("user", _parts(content, "content"))


def assistant(*content: PartLike) -> Message:
    return Message("assistant", _parts(content, "content"))


def system(*content: str) -> Message:
    return Message("system", _system_parts(content))


def _system_parts(content: object) -> tuple[TextPart, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextPart(content),)
    if isinstance(content, list | tuple):
        items = cast(Sequence[object], content)
        out: list[TextPart] = []
        for item in items:
            if not isinstance(item, str):
                raise _wrong("system", "a str or a sequence of str", item)
            out.append(TextPart(item))
        return tuple(out)
    raise _wrong("system", "a str or a sequence of str", content)


def tool_message(*results: ToolResultPart) -> Message:
    return Message("tool", results)


def approval(request: ApprovalRequest | str, approve: bool, reason: str | None = None) -> Message:
    """The user message answering an approval request (``LLMResponse.approval_requests``): send it
    after the response's messages."""
    request_id = request if isinstance(request, str) else request.id
    return Message("user", (ApprovalResponsePart(request_id, approve, reason),))


def _tool_spec(tool: object, param: str) -> ToolSpec:
    if isinstance(tool, ToolDefinition | HostedTool):
        return tool
    definition = getattr(tool, "definition", None)
    if isinstance(definition, ToolDefinition):
        return definition
    raise InvalidRequestError(
        f"{param}: not a tool: {type(tool).__name__} (use llmroute.tool, ToolDefinition or a hosted tool)",
        param=param,
    )


def _runnable(tool: object) -> bool:
    """An ``llmroute.tool`` with a handler (not imported here: ``llmroute.tools`` loads lazily)."""
    return isinstance(getattr(tool, "definition", None), ToolDefinition) and callable(
        getattr(tool, "handler", None)
    )


def _sequence(value: object, param: str, expected: str) -> list[object]:
    # A str or a dict is iterable, but never what these arguments mean.
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise _wrong(param, expected, cast(object, value))
    return list(cast(Iterable[object], value))


def request(
    model: ModelRef,
    *,
    system: str | Sequence[str] | None = None,
    prompt: PartLike | Sequence[PartLike] | None = None,
    messages: Iterable[Message] = (),
    tools: Iterable[Tool | ToolDefinition | HostedTool] = (),
    tool_choice: ToolChoice | str | None = None,
    generation: GenerationOptions | None = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    http: HttpOverlay | None = None,
    cache: CachePolicy | None = None,
    metadata: Mapping[str, Any] | None = None,
    output_schema: OutputSchema | None = None,
    json_mode: bool = False,
    session: str | None = None,
) -> LLMRequest:
    """Build an ``LLMRequest``. ``prompt`` appends a user message after ``messages``.
    ``output_schema``: the answer's text is JSON matching it; ``json_mode``: the answer is one JSON
    object (no schema); ``session``: the conversation this call belongs to (``LLMRequest.session``:
    a ``Router`` with affinity keeps it on one target). Wrong arguments raise ``InvalidRequestError`` naming the argument
    (``.param``) before anything is sent."""
    choice = cast(object, tool_choice)
    if choice is not None and not isinstance(choice, ToolChoice | str):
        raise _wrong("tool_choice", "'auto', 'none', 'required' or a tool name", choice)
    history = _sequence(messages, "messages", "a sequence of Message")
    if prompt is not None:
        parts = _parts(prompt, "prompt")
        if _blank(parts):
            raise InvalidRequestError("prompt: is empty or only whitespace", param="prompt")
        history.append(Message("user", parts))
    specs = _sequence(tools, "tools", "a sequence of tools")
    built = LLMRequest(
        model=model,
        system=_system_parts(system),
        messages=tuple(history),  # type: ignore[arg-type]  # checked by validate_request below
        tools=tuple(_tool_spec(t, f"tools[{i}]") for i, t in enumerate(specs)),
        tool_choice=ToolChoice.parse(tool_choice),
        generation=generation,
        provider_options={k: dict(v) for k, v in provider_options.items()} if provider_options else None,
        http=http,
        cache=cache,
        metadata=dict(metadata) if metadata else None,
        output_schema=output_schema,
        json_mode=json_mode,
        # a tool with a handler is run by generate()/stream() without ``tools=`` (issue #42: it was
        # sent, its calls never answered)
        tool_handlers=tuple(t for t in specs if _runnable(t)),
        session=session,
    )
    validate_request(built, tools_final=False)
    return built
