"""``openai_responses``, the wire shapes: sections 1-2 of the six (quirks, constants
and request body Structs; stream event Structs)."""

from __future__ import annotations

from typing import Any

import msgspec

NAME = "openai-responses"


# 1. quirks, constants and request body Structs ----------------------------------------------------

OPENAI = "openai"  # the provider_metadata namespace


class ResponsesQuirks(msgspec.Struct, frozen=True):
    """Declared differences between Responses servers (xAI, OpenRouter, Azure), one documented flag
    each."""

    hosted_custom_tools: bool = False
    """``custom_tool_call`` (and ``x_search_call``) items are the server's own tools, already run
    (xAI's x_search and friends), not freeform tools handed to the client (OpenAI)."""
    hosted_kinds: tuple[str, ...] = ()
    """The server's own hosted tool kinds beyond OpenAI's (xAI ``x_search``), each sent as
    ``{"type": kind, **options}``."""
    hosted_remove: tuple[str, ...] = ()
    """Kinds of OpenAI's ``HOSTED_TOOLS`` this server does not run (xAI: ``shell``): refused like
    any kind a route lacks, so a kind OpenAI gains later is not offered here by default."""
    billed_items: tuple[tuple[str, str], ...] = (("file_search_call", "file_search"),)
    """Hosted output item types the server bills per call -> the ``Usage.tool_calls`` kind each
    counts as (OpenAI: file search, $2.50 / 1k calls; its code interpreter is billed per container,
    not per call). A ``web_search_call`` is a web search request, counted by ``web_search_every_call``."""
    web_search_every_call: bool = False
    """Every ``web_search_call`` item is a billed search (xAI); OpenAI bills only ``action.type ==
    "search"`` (its ``open_page`` and ``find_in_page`` actions incur no tool call cost)."""


NO_QUIRKS = ResponsesQuirks()


class InputText(msgspec.Struct, tag="input_text", tag_field="type"):
    text: str


class InputImage(msgspec.Struct, kw_only=True, omit_defaults=True, tag="input_image", tag_field="type"):
    image_url: str | None = None
    file_id: str | None = None
    detail: str | None = None


class InputFile(msgspec.Struct, kw_only=True, omit_defaults=True, tag="input_file", tag_field="type"):
    filename: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    file_id: str | None = None


class OutputText(msgspec.Struct, tag="output_text", tag_field="type"):
    text: str


UserContent = InputText | InputImage | InputFile


class MessageItem(msgspec.Struct, kw_only=True, omit_defaults=True):
    role: str
    content: str | list[UserContent] | list[OutputText]
    phase: str | None = None


class SummaryText(msgspec.Struct, tag="summary_text", tag_field="type"):
    text: str


class ReasoningItem(msgspec.Struct, kw_only=True, omit_defaults=True, tag="reasoning", tag_field="type"):
    id: str
    summary: list[SummaryText]
    encrypted_content: str | None = None


class FunctionCallItem(msgspec.Struct, kw_only=True, tag="function_call", tag_field="type"):
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputItem(msgspec.Struct, kw_only=True, tag="function_call_output", tag_field="type"):
    call_id: str
    output: str | list[UserContent]


class FunctionTool(msgspec.Struct, kw_only=True, omit_defaults=True, tag="function", tag_field="type"):
    name: str
    description: str | None = None
    parameters: dict[str, Any]
    strict: bool  # always sent: the server's default is not relied on (see ``function_strict``)


InputItem = MessageItem | ReasoningItem | FunctionCallItem | FunctionCallOutputItem | dict[str, Any]


class ResponsesBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    model: str
    instructions: str | None = None
    input: list[InputItem]
    tools: list[FunctionTool | dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    store: bool | None = None
    include: list[str] | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    service_tier: str | None = None
    prompt_cache_key: str | None = None
    stream: bool  # no default: always sent


# 2. stream event Structs --------------------------------------------------------------------------

_NO_RAW = msgspec.Raw()


class Event(msgspec.Struct, gc=False):
    """Every stream event, flat: small fields decoded eagerly, nested objects kept raw and decoded
    by the handler that needs them (the hot path, ``output_text.delta``, never touches them)."""

    type: str = ""
    item_id: str | None = None
    output_index: int = -1
    content_index: int = 0
    summary_index: int = 0
    delta: str | None = None
    item: msgspec.Raw = _NO_RAW
    response: msgspec.Raw = _NO_RAW
    annotation: msgspec.Raw = _NO_RAW
    error: msgspec.Raw = _NO_RAW
    code: str | None = None
    message: str | None = None
    status: int | None = None


class EventType(msgspec.Struct, gc=False):
    type: str = ""


class Annotation(msgspec.Struct, gc=False):
    type: str = ""
    url: str | None = None
    title: str | None = None
    start_index: int | None = None
    end_index: int | None = None
    filename: str | None = None
    file_id: str | None = None
    index: int | None = None


class _Content(msgspec.Struct, gc=False):
    type: str = ""
    text: str = ""
    refusal: str | None = None
    annotations: list[Annotation] | None = None


class PartAdded(msgspec.Struct, gc=False):
    """``response.content_part.added``, decoded again for its part type (``Event`` stays small:
    every field it has costs each hot-path decode)."""

    part: _Content | None = None


class _Summary(msgspec.Struct, gc=False):
    text: str = ""


class OutputItem(msgspec.Struct, gc=False):
    type: str = ""
    id: str = ""
    status: str | None = None
    phase: str | None = None
    content: list[_Content] | None = None
    summary: list[_Summary] | None = None
    encrypted_content: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, Any] | None = None  # an object on tool_search_call
    input: str | None = None  # custom_tool_call
    environment: dict[str, Any] | None = None  # shell_call: set when it ran in the server's container
    execution: str | None = None  # tool_search_call: "client" or "server"
    server_label: str | None = None  # mcp_approval_request


class _Details(msgspec.Struct, gc=False):
    reason: str | None = None


class ResponseObject(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    service_tier: str | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    incomplete_details: _Details | None = None


class WholeResponse(msgspec.Struct, gc=False):
    """A non-streamed Response: its output items, each decoded by the item handlers."""

    output: list[msgspec.Raw] | None = None
