"""Constructors for requests and messages: the one way to build them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .schema.content import ApprovalResponsePart, MediaPart, Message, Part, TextPart, ToolResultPart
from .schema.errors import InvalidRequestError
from .schema.events import ApprovalRequest
from .schema.options import CachePolicy, GenerationOptions, HttpOverlay
from .schema.request import LLMRequest
from .schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec

__all__ = ["approval", "assistant", "image", "request", "system", "tool_message", "user"]

PartLike = str | Part


def _parts(content: PartLike | Iterable[PartLike]) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (TextPart(content),)
    if isinstance(content, TextPart | MediaPart) or hasattr(content, "__struct_fields__"):
        return (content,)  # type: ignore[return-value]
    return tuple(TextPart(p) if isinstance(p, str) else p for p in content)  # type: ignore[union-attr]


def user(*content: PartLike) -> Message:
    return Message("user", _parts(content))


def assistant(*content: PartLike) -> Message:
    return Message("assistant", _parts(content))


def system(*content: str) -> Message:
    return Message("system", tuple(TextPart(c) for c in content))


def tool_message(*results: ToolResultPart) -> Message:
    return Message("tool", results)


def approval(request: ApprovalRequest | str, approve: bool, reason: str | None = None) -> Message:
    """The user message answering an approval request (``LLMResponse.approval_requests``): send it
    after the response's messages."""
    request_id = request if isinstance(request, str) else request.id
    return Message("user", (ApprovalResponsePart(request_id, approve, reason),))


def image(data: bytes | str, mime_type: str = "image/png") -> MediaPart:
    return MediaPart(mime_type, data)


def _tool_spec(tool: Any) -> ToolSpec:
    if isinstance(tool, ToolDefinition | HostedTool):
        return tool
    definition = getattr(tool, "definition", None)
    if isinstance(definition, ToolDefinition):
        return definition
    raise InvalidRequestError(f"not a tool: {tool!r} (use llmroute.tool, ToolDefinition or a hosted tool)")


def request(
    model: Any,
    *,
    system: str | Sequence[str] | None = None,
    prompt: PartLike | Sequence[PartLike] | None = None,
    messages: Iterable[Message] = (),
    tools: Iterable[Any] = (),
    tool_choice: ToolChoice | str | None = None,
    generation: GenerationOptions | None = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    http: HttpOverlay | None = None,
    cache: CachePolicy | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> LLMRequest:
    """Build an ``LLMRequest``. ``prompt`` appends a user message after ``messages``."""
    system_parts: tuple[TextPart, ...] = ()
    if isinstance(system, str):
        system_parts = (TextPart(system),)
    elif system is not None:
        system_parts = tuple(TextPart(s) for s in system)
    history = list(messages)
    if prompt is not None:
        history.append(Message("user", _parts(prompt)))  # type: ignore[arg-type]
    return LLMRequest(
        model=model,
        system=system_parts,
        messages=tuple(history),
        tools=tuple(_tool_spec(t) for t in tools),
        tool_choice=ToolChoice.parse(tool_choice),
        generation=generation,
        provider_options={k: dict(v) for k, v in provider_options.items()} if provider_options else None,
        http=http,
        cache=cache,
        metadata=dict(metadata) if metadata else None,
    )
