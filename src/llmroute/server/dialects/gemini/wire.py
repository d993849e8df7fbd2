"""Gemini's ``generateContent`` / ``streamGenerateContent`` / ``countTokens`` bodies as the gateway
reads them (REST, camelCase, as ``google-genai`` and gemini-cli send them): every documented field,
typed where the gateway lowers it, raw where it is only carried to a Gemini upstream. Each field is
the Gemini API's own (ai.google.dev/api/generate-content)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Content",
    "CountTokensRequest",
    "FunctionCall",
    "FunctionResponse",
    "GenerateRequest",
    "GenerationConfig",
    "Part",
    "ToolIn",
]


class _Camel(msgspec.Struct, frozen=True, rename="camel"):
    pass


class Blob(_Camel, frozen=True):
    mime_type: str
    data: str


class FileData(_Camel, frozen=True):
    file_uri: str
    mime_type: str | None = None


class FunctionCall(_Camel, frozen=True):
    name: str
    args: dict[str, Any] | None = None
    id: str | None = None


class FunctionResponse(_Camel, frozen=True):
    name: str
    response: dict[str, Any] | None = None
    id: str | None = None
    parts: list[Any] | None = None  # multimodal function responses (inlineData parts)
    will_continue: bool | None = None
    scheduling: str | None = None


class Part(_Camel, frozen=True):
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    video_metadata: dict[str, Any] | None = None
    media_resolution: Any = None
    part_metadata: dict[str, Any] | None = None


class Content(_Camel, frozen=True):
    parts: list[Part] = msgspec.field(default_factory=list[Part])
    role: Literal["user", "model", "function", "system"] | None = None


class FunctionDeclaration(_Camel, frozen=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None  # Gemini's OpenAPI-subset Schema (type names upper case)
    parameters_json_schema: Any = None  # plain JSON Schema
    response: dict[str, Any] | None = None
    response_json_schema: Any = None
    behavior: str | None = None


class ToolIn(_Camel, frozen=True):
    """One ``tools`` entry: function declarations, or one of Gemini's built-in tools."""

    function_declarations: list[FunctionDeclaration] | None = None
    google_search: dict[str, Any] | None = None
    google_search_retrieval: dict[str, Any] | None = None
    code_execution: dict[str, Any] | None = None
    url_context: dict[str, Any] | None = None
    file_search: dict[str, Any] | None = None
    google_maps: dict[str, Any] | None = None
    computer_use: dict[str, Any] | None = None
    enterprise_web_search: dict[str, Any] | None = None
    retrieval: dict[str, Any] | None = None
    mcp_servers: list[Any] | None = None


class FunctionCallingConfig(_Camel, frozen=True):
    mode: Literal["AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"] | None = None
    allowed_function_names: list[str] | None = None
    stream_function_call_arguments: bool | None = None


class ToolConfig(_Camel, frozen=True):
    function_calling_config: FunctionCallingConfig | None = None
    retrieval_config: dict[str, Any] | None = None
    include_server_side_tool_invocations: bool | None = None


class ThinkingConfig(_Camel, frozen=True):
    include_thoughts: bool | None = None
    thinking_budget: int | None = None
    thinking_level: str | None = None


class GenerationConfig(_Camel, frozen=True):
    temperature: float | None = None
    top_p: float | None = None
    top_k: float | None = None
    candidate_count: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    response_json_schema: Any = None
    thinking_config: ThinkingConfig | None = None
    response_modalities: list[str] | None = None
    media_resolution: str | None = None
    speech_config: Any = None
    image_config: Any = None
    response_logprobs: bool | None = None
    logprobs: int | None = None
    enable_enhanced_civic_answers: bool | None = None
    audio_timestamp: bool | None = None
    routing_config: Any = None
    model_selection_config: Any = None


class GenerateRequest(_Camel, frozen=True):
    """``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``."""

    contents: list[Content] = msgspec.field(default_factory=list[Content])
    system_instruction: Content | None = None
    tools: list[ToolIn] | None = None
    tool_config: ToolConfig | None = None
    generation_config: GenerationConfig | None = None
    safety_settings: list[Any] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None
    model: str | None = None  # ``models/{model}`` in a countTokens' ``generateContentRequest``
    service_tier: str | None = None
    store: bool | None = None


class CountTokensRequest(_Camel, frozen=True):
    """``POST /v1beta/models/{model}:countTokens``: ``contents``, or a whole ``generateContentRequest``."""

    contents: list[Content] | None = None
    generate_content_request: GenerateRequest | None = None
