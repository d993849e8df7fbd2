"""``gemini``, the wire shapes: sections 1-2 of the six (quirks, constants
and request body Structs; stream event Structs)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...schema.errors import InvalidProviderOutputError

NAME = "gemini"


# 1. quirks, constants and request body Structs ----------------------------------------------------


class Blob(msgspec.Struct, rename="camel"):
    mime_type: str
    data: str


class FileData(msgspec.Struct, rename="camel"):
    mime_type: str
    file_uri: str


class FunctionCallOut(msgspec.Struct, omit_defaults=True):
    name: str
    args: Any
    id: str | None = None


class FunctionResponseOut(msgspec.Struct, omit_defaults=True):
    name: str
    response: dict[str, Any]
    id: str | None = None


class PartOut(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    text: str | None = None
    thought: bool | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCallOut | None = None
    function_response: FunctionResponseOut | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    tool_call: dict[str, Any] | None = None
    tool_response: dict[str, Any] | None = None
    thought_signature: str | None = None


class ContentOut(msgspec.Struct):
    role: str
    parts: list[PartOut]


class SystemInstruction(msgspec.Struct):
    parts: list[PartOut]


class FunctionDeclaration(msgspec.Struct, omit_defaults=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolOut(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    function_declarations: list[FunctionDeclaration] | None = None
    google_search: dict[str, Any] | None = None
    url_context: dict[str, Any] | None = None
    code_execution: dict[str, Any] | None = None
    file_search: dict[str, Any] | None = None


class FunctionCallingConfig(msgspec.Struct, omit_defaults=True, rename="camel"):
    mode: str | None = None
    allowed_function_names: list[str] | None = None
    stream_function_call_arguments: bool | None = None


class ToolConfig(msgspec.Struct, rename="camel"):
    function_calling_config: FunctionCallingConfig


class GenerationConfig(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    response_json_schema: dict[str, Any] | None = None
    response_modalities: list[str] | None = None
    media_resolution: str | None = None
    thinking_config: dict[str, Any] | None = None


class GeminiBody(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    contents: list[ContentOut]
    system_instruction: SystemInstruction | None = None
    tools: list[ToolOut] | None = None
    tool_config: ToolConfig | None = None
    generation_config: GenerationConfig | None = None
    safety_settings: list[dict[str, Any]] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class _PartialArg(msgspec.Struct, rename="camel"):
    """One ``partialArgs`` entry: a value (a protobuf ``Value``: one of the fields) at a JSON path."""

    json_path: str
    string_value: str | None = None
    number_value: int | float | None = None
    bool_value: bool | None = None
    null_value: Any = msgspec.UNSET
    struct_value: dict[str, Any] | None = None
    list_value: list[Any] | None = None
    will_continue: bool = False

    def value(self) -> Any:
        for given in (self.string_value, self.number_value, self.bool_value, self.struct_value):
            if given is not None:
                return given
        if self.list_value is not None:
            return self.list_value
        if self.null_value is not msgspec.UNSET:
            return None
        raise InvalidProviderOutputError(f"{NAME}: partialArgs entry at {self.json_path!r} has no value")


class _FunctionCall(msgspec.Struct, rename="camel"):
    """A whole call, or with ``streamFunctionCallArguments`` a piece of one: ``name`` +
    ``will_continue`` opens it, ``partial_args`` add to it, a piece without ``will_continue``
    closes it."""

    name: str = ""
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: list[_PartialArg] | None = None
    will_continue: bool = False


class InlineData(msgspec.Struct, rename="camel"):
    """Media the model produced (image output): base64 ``data``, its type when Gemini names it."""

    data: str = ""
    mime_type: str | None = None


class PartIn(msgspec.Struct, rename="camel"):
    text: str | None = None
    thought: bool = False
    thought_signature: str | None = None
    function_call: _FunctionCall | None = None
    inline_data: InlineData | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    # Gemini 3 server-side tools beside function calling (``toolConfig.includeServerSideToolInvocations``):
    # ``{"id", "toolType", "args"}`` and ``{"id", "toolType", "response"}``, echoed back as sent
    tool_call: dict[str, Any] | None = None
    tool_response: dict[str, Any] | None = None


class _Content(msgspec.Struct):
    parts: list[PartIn] | None = None
    role: str | None = None


class _Candidate(msgspec.Struct, rename="camel"):
    content: _Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: int = 0
    grounding_metadata: GroundingMetadata | None = None
    url_context_metadata: UrlContext | None = None


class _PromptFeedback(msgspec.Struct, rename="camel"):
    block_reason: str | None = None
    block_reason_message: str | None = None


class Chunk(msgspec.Struct, rename="camel"):
    candidates: list[_Candidate] | None = None
    usage_metadata: msgspec.Raw = msgspec.Raw()  # decoded once, from the last chunk that had it
    prompt_feedback: _PromptFeedback | None = None
    model_version: str | None = None
    response_id: str | None = None
    error: dict[str, Any] | None = None


# grounding (read into hosted calls and citations by ``grounding``)


class Source(msgspec.Struct, rename="camel", omit_defaults=True):
    """``web``, ``retrievedContext`` (file search / RAG) and ``maps`` grounding chunks alike."""

    uri: str | None = None
    title: str | None = None
    domain: str | None = None
    text: str | None = None
    file_search_store: str | None = None


class GroundingChunk(msgspec.Struct, rename="camel", omit_defaults=True):
    web: Source | None = None
    retrieved_context: Source | None = None
    maps: Source | None = None


class Segment(msgspec.Struct, rename="camel"):
    part_index: int | None = None
    start_index: int | None = None
    end_index: int | None = None
    text: str | None = None


class Support(msgspec.Struct, rename="camel"):
    segment: Segment | None = None
    grounding_chunk_indices: list[int] | None = None
    confidence_scores: list[float] | None = None


class GroundingMetadata(msgspec.Struct, rename="camel"):
    web_search_queries: list[str] | None = None
    grounding_chunks: list[GroundingChunk] | None = None
    grounding_supports: list[Support] | None = None
    search_entry_point: dict[str, Any] | None = None
    retrieval_metadata: dict[str, Any] | None = None


class UrlMetadata(msgspec.Struct, rename="camel"):
    retrieved_url: str | None = None
    url_retrieval_status: str | None = None


class UrlContext(msgspec.Struct, rename="camel"):
    url_metadata: list[UrlMetadata] | None = None
