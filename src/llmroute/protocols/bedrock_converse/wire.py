"""``bedrock_converse``, the wire shapes: sections 1-2 of the six (quirks, constants
and request body Structs; stream event Structs)."""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

NAME = "bedrock-converse"


# 1. quirks, constants and request body Structs ----------------------------------------------------

ACCEPT = "application/vnd.amazon.eventstream"
MAX_CACHE_POINTS = 4
NAMESPACE = "bedrock"  # provider options namespace

IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
VIDEO_FORMATS = {
    "video/mp4": "mp4",
    "video/quicktime": "mov",
    "video/x-matroska": "mkv",
    "video/webm": "webm",
    "video/x-flv": "flv",
    "video/mpeg": "mpeg",
    "video/x-ms-wmv": "wmv",
    "video/3gpp": "three_gp",
}
DOC_NAME_BAD = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
# Converse's own top-level fields that provider options may set; anything else in the "bedrock"
# namespace is a model-specific field and goes into additionalModelRequestFields.
TOP_LEVEL_OPTIONS = frozenset(
    {
        "guardrailConfig",
        "performanceConfig",
        "promptVariables",
        "requestMetadata",
        "additionalModelResponseFieldPaths",
    }
)
CODE_INTERPRETER = "nova_code_interpreter"


class S3Location(msgspec.Struct):
    uri: str


class Source(msgspec.Struct, omit_defaults=True):
    bytes: str | None = None  # base64
    s3Location: S3Location | None = None


class Image(msgspec.Struct):
    format: str
    source: Source


class Document(msgspec.Struct, omit_defaults=True):
    format: str
    name: str
    source: Source
    citations: dict[str, Any] | None = None


class Video(msgspec.Struct):
    format: str
    source: Source


class ToolUse(msgspec.Struct, omit_defaults=True):
    toolUseId: str
    name: str
    input: Any
    type: str | None = None  # "server_tool_use" for provider-executed tools


class ToolResultBlock(msgspec.Struct, omit_defaults=True):
    toolUseId: str
    content: list[Block]
    status: str  # "success" | "error", always sent
    type: str | None = None  # e.g. "nova_code_interpreter_result" for provider-executed results


class ReasoningText(msgspec.Struct, omit_defaults=True):
    text: str
    signature: str | None = None


class Reasoning(msgspec.Struct, omit_defaults=True):
    reasoningText: ReasoningText | None = None
    redactedContent: str | None = None


class CachePoint(msgspec.Struct, omit_defaults=True):
    type: str
    ttl: str | None = None  # "5m" | "1h"; Bedrock's default (5m) when omitted


class Block(msgspec.Struct, omit_defaults=True):
    """One content block: exactly one field is set."""

    text: str | None = None
    image: Image | None = None
    document: Document | None = None
    video: Video | None = None
    json: Any | UnsetType = UNSET
    toolUse: ToolUse | None = None
    toolResult: ToolResultBlock | None = None
    reasoningContent: Reasoning | None = None
    cachePoint: CachePoint | None = None


class Message(msgspec.Struct):
    role: str
    content: list[Block]


class InferenceConfig(msgspec.Struct, omit_defaults=True):
    maxTokens: int | None = None
    temperature: float | None = None
    topP: float | None = None
    stopSequences: list[str] | None = None


class ToolSpec(msgspec.Struct, omit_defaults=True):
    name: str
    inputSchema: dict[str, Any]
    description: str | None = None
    strict: bool | None = None


class SystemTool(msgspec.Struct):
    name: str


class Tool(msgspec.Struct, omit_defaults=True):
    toolSpec: ToolSpec | None = None
    systemTool: SystemTool | None = None
    cachePoint: CachePoint | None = None


class ToolConfig(msgspec.Struct, omit_defaults=True):
    tools: list[Tool]
    toolChoice: dict[str, Any] | None = None


class ConverseBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    messages: list[Message]
    system: list[Block] | None = None
    inferenceConfig: InferenceConfig | None = None
    toolConfig: ToolConfig | None = None
    additionalModelRequestFields: dict[str, Any] | None = None
    outputConfig: dict[str, Any] | None = None


# 2. stream event Structs --------------------------------------------------------------------------


class _ToolUseStart(msgspec.Struct):
    toolUseId: str
    name: str
    type: str | None = None


class _ToolResultStart(msgspec.Struct):
    toolUseId: str
    status: str | None = None
    type: str | None = None


class Start(msgspec.Struct):
    toolUse: _ToolUseStart | None = None
    toolResult: _ToolResultStart | None = None


class BlockStart(msgspec.Struct):
    contentBlockIndex: int = 0
    start: Start | None = None


class ReasoningDeltaIn(msgspec.Struct):
    text: str | None = None
    signature: str | None = None
    redactedContent: str | None = None


class _ToolUseDelta(msgspec.Struct):
    input: str = ""


class CitationDelta(msgspec.Struct):
    title: str | None = None
    source: str | None = None
    sourceContent: list[dict[str, Any]] | None = None
    location: dict[str, Any] | None = None


class Delta(msgspec.Struct):
    text: str | None = None
    reasoningContent: ReasoningDeltaIn | None = None
    toolUse: _ToolUseDelta | None = None
    toolResult: list[dict[str, Any]] | None = None
    citation: CitationDelta | None = None


class BlockDelta(msgspec.Struct):
    contentBlockIndex: int = 0
    delta: Delta | None = None


class BlockStop(msgspec.Struct):
    contentBlockIndex: int = 0


class MessageStop(msgspec.Struct):
    stopReason: str | None = None
    additionalModelResponseFields: Any = None


class Metadata(msgspec.Struct):
    usage: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None


class _ToolUseBlock(_ToolUseStart):
    input: Any = None


class _ToolResultBlock(_ToolResultStart):
    content: list[dict[str, Any]] | None = None


class _ReasoningBlock(msgspec.Struct):
    reasoningText: ReasoningDeltaIn | None = None
    redactedContent: str | None = None


class _CitationsBlock(msgspec.Struct):
    content: list[dict[str, Any]] | None = None
    citations: list[CitationDelta] | None = None


class WholeBlock(msgspec.Struct):
    text: str | None = None
    reasoningContent: _ReasoningBlock | None = None
    toolUse: _ToolUseBlock | None = None
    toolResult: _ToolResultBlock | None = None
    citationsContent: _CitationsBlock | None = None


class _WholeMessage(msgspec.Struct):
    content: list[WholeBlock] | None = None


class _Output(msgspec.Struct):
    message: _WholeMessage | None = None


class ConverseResponse(msgspec.Struct):
    """A non-streamed ``/converse`` response."""

    output: _Output | None = None
    stopReason: str | None = None
    usage: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    additionalModelResponseFields: Any = None
