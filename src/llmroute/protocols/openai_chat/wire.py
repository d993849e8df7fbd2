"""``openai_chat``, the wire shapes: sections 1-2 of the six (quirks, constants
and request body Structs; stream event Structs)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from ...schema.tools import HostedTool
from ..openai_chat_custom import CustomCallOut

NAME = "openai-chat"


# 1. quirks, constants and request body Structs ----------------------------------------------------

HostedToolLowering = Callable[[HostedTool], dict[str, Any]]  # one entry of a hosted tools table


class ChatQuirks(msgspec.Struct, frozen=True):
    """Declared differences between OpenAI-compatible servers, one documented flag each.

    Response-side extensions need no flag: fields only some servers send are parsed when present
    (``reasoning_details``, annotations, Groq ``executed_tools``, GLM's top-level ``web_search``).
    """

    tool_call_key: Literal["index", "id"] = "index"
    """How streamed tool-call fragments are matched: by ``index`` (OpenAI), or by ``id`` for
    servers that omit ``index`` or reuse index 0 for every call. A repeated id in every fragment is
    handled either way."""
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning")
    """Which delta fields carry reasoning text, in priority order."""
    include_usage: bool = True
    """Send ``stream_options.include_usage`` (a streamed answer then ends with its usage)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The body field ``max_tokens`` goes in: ``max_completion_tokens`` for OpenAI reasoning
    models."""
    send_reasoning: bool = False
    """Echo reasoning back as ``reasoning_content`` on assistant messages (servers that require
    it)."""
    supports_top_k: bool = False
    """Send ``top_k``; without it the option is dropped with a warning."""
    empty_choices_ok: bool = True
    """Chunks with no choices (Azure's prompt-filter first chunk, the usage trailer) are normal,
    not an error."""
    hosted_tools: Mapping[str, HostedToolLowering] | None = None
    """This server's ``HOSTED_TOOLS`` table, kind -> lowering to its ``tools`` entry (OpenRouter
    ``openrouter:web_search``, GLM ``web_search``); without it hosted tools are refused."""
    send_reasoning_details: bool = False
    """Echo OpenRouter ``reasoning_details`` (signatures, encrypted reasoning) back on assistant
    messages."""
    completion_has_reasoning: bool | None = None
    """Whether ``completion_tokens`` already counts ``reasoning_tokens`` (OpenAI: yes; xAI: no, its
    ``total_tokens`` is prompt + completion + reasoning); ``None`` decides per response from the
    server's own ``total_tokens``. Either way ``Usage.output_tokens`` includes reasoning."""


class Function(msgspec.Struct, kw_only=True):
    name: str
    arguments: str


class ToolCallOut(msgspec.Struct, kw_only=True):
    id: str
    type: str = "function"
    function: Function


class SystemMessage(msgspec.Struct, kw_only=True, tag="system", tag_field="role"):
    content: str


class UserMessage(msgspec.Struct, kw_only=True, tag="user", tag_field="role"):
    content: str | list[dict[str, Any]]


class AssistantMessage(msgspec.Struct, kw_only=True, omit_defaults=True, tag="assistant", tag_field="role"):
    content: str | None  # no default: null must be sent when there is only a tool call
    tool_calls: list[ToolCallOut | CustomCallOut] | None = None
    reasoning_content: str | None = None
    reasoning_details: list[dict[str, Any]] | None = None


class ToolMessage(msgspec.Struct, kw_only=True, tag="tool", tag_field="role"):
    tool_call_id: str
    content: str


class FunctionDef(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool | None = None


class ToolDef(msgspec.Struct, kw_only=True):
    type: str = "function"
    function: FunctionDef


class StreamOptions(msgspec.Struct):
    include_usage: bool


DEFAULT_QUIRKS = ChatQuirks()
# OpenAI reasoning models (and Azure deployments named after them) reject ``max_tokens`` on Chat
# Completions and want ``max_completion_tokens``.
REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex)")
REASONING_QUIRKS = ChatQuirks(max_tokens_field="max_completion_tokens")


class ChatBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    messages: list[SystemMessage | UserMessage | AssistantMessage | ToolMessage]
    tools: list[ToolDef | dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    stream: bool
    stream_options: StreamOptions | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class FnDelta(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class CustomDelta(msgspec.Struct):
    name: str | None = None
    input: str | None = None  # free text, in pieces like function arguments


class ToolDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: FnDelta | None = None
    type: str | None = None  # "custom" on a custom tool's first fragment
    custom: CustomDelta | None = None


class UrlCitation(msgspec.Struct):
    url: str | None = None
    title: str | None = None
    content: str | None = None
    start_index: int | None = None
    end_index: int | None = None


class Annotation(msgspec.Struct):
    type: str = ""
    url_citation: UrlCitation | None = None


class ExecutedTool(msgspec.Struct):
    """A tool Groq's compound models ran server-side: first without ``output``, then with it."""

    index: int = 0
    type: str = ""
    arguments: str | None = None
    output: str | None = None
    search_results: dict[str, Any] | None = None


class _ImageUrl(msgspec.Struct):
    url: str = ""


class ImageOut(msgspec.Struct):
    """An image the model produced (OpenRouter, Vercel AI Gateway: ``modalities: ["image"]``)."""

    type: str = ""
    image_url: _ImageUrl | None = None


class Audio(msgspec.Struct):
    """Spoken output (``modalities: ["text", "audio"]``): base64 ``data`` (streamed in pieces, each
    encoded on its own), the ``transcript`` of what is said, and an ``id`` later turns may cite."""

    id: str | None = None
    data: str | None = None
    transcript: str | None = None
    expires_at: int | None = None


class ThinkingText(msgspec.Struct):
    type: str = ""
    text: str | None = None


class ContentChunk(msgspec.Struct):
    """Mistral's reasoning models (``magistral``) send ``content`` as a list of chunks:
    ``{"type": "thinking", "thinking": [{"type": "text", "text": ...}]}`` and
    ``{"type": "text", "text": ...}``; other chunk types (``reference``, ``image_url``) carry no text."""

    type: str = ""
    text: str | None = None
    thinking: list[ThinkingText] | str | None = None


class Delta(msgspec.Struct):
    content: str | list[ContentChunk] | None = None  # a list: Mistral (see ContentChunk)
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolDelta] | None = None
    refusal: str | None = None
    annotations: list[Annotation] | None = None
    reasoning_details: list[Any] | None = None  # OpenRouter; kept as sent so it can round-trip
    executed_tools: list[ExecutedTool] | None = None  # Groq compound
    images: list[ImageOut] | None = None
    audio: Audio | None = None


class Choice(msgspec.Struct):
    index: int = 0
    delta: Delta | None = None
    finish_reason: str | None = None
    annotations: list[Annotation] | None = None


class Chunk(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    choices: list[Choice] | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    x_groq: dict[str, Any] | None = None
    web_search: Any = None  # GLM: search hits next to choices (any shape; validated by its handler)
    service_tier: str | None = None  # OpenAI: the tier that served the call (prices differ)


class _WholeChoice(msgspec.Struct):
    index: int = 0
    message: Delta | None = None  # a message has the fields of a delta (and ``role``, ignored)
    finish_reason: str | None = None
    annotations: list[Annotation] | None = None


class Completion(Chunk):
    """A non-streamed ``chat.completion``: a chunk's fields, with whole messages in ``choices``."""

    choices: list[_WholeChoice] | None = None  # pyright: ignore[reportIncompatibleVariableOverride]
