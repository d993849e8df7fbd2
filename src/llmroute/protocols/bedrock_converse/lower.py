"""``bedrock_converse``, request -> body: section 4 of the six (``build_body`` and its
lowering helpers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...route.support import ALWAYS_CONSTRAINED, Support, breakpoint_cache, no_field
from ...schema.content import MediaPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ...schema.errors import InvalidRequestError
from ...schema.request import LLMRequest, ModelRef
from ...schema.tools import HostedTool, ToolDefinition
from .._output_tool import native_schema, with_output_tool
from .._shared import (
    breakpoint_ttl,
    cache_targets,
    content_parts,
    lower_hosted,
    lower_tools,
    ns,
    with_options,
)
from .wire import (
    CODE_INTERPRETER,
    DOC_NAME_BAD,
    DOCUMENT_FORMATS,
    IMAGE_FORMATS,
    MAX_CACHE_POINTS,
    NAME,
    NAMESPACE,
    TOP_LEVEL_OPTIONS,
    VIDEO_FORMATS,
    Block,
    CachePoint,
    ConverseBody,
    Document,
    Image,
    InferenceConfig,
    Message,
    Reasoning,
    ReasoningText,
    S3Location,
    Source,
    SystemTool,
    Tool,
    ToolConfig,
    ToolResultBlock,
    ToolSpec,
    ToolUse,
    Video,
)

# 4. build_body ------------------------------------------------------------------------------------


def _source(part: MediaPart, what: str) -> Source:
    data = part.data
    if isinstance(data, str) and data.startswith("s3://"):
        return Source(s3Location=S3Location(data))
    if part.is_url:
        raise InvalidRequestError(f"{NAME}: {what} must be inline bytes or an s3:// URI, not a URL")
    return Source(bytes=part.base64())


def _document_name(part: MediaPart, index: int) -> str:
    name = part.filename.rsplit(".", 1)[0] if part.filename else ""
    name = " ".join(DOC_NAME_BAD.sub("-", name).split())
    return name or f"document-{index}"


def _lower_media(part: MediaPart, index: int) -> Block:
    mime = part.mime_type.lower()
    if mime in IMAGE_FORMATS:
        return Block(image=Image(IMAGE_FORMATS[mime], _source(part, "an image")))
    if mime in DOCUMENT_FORMATS:
        citations = {"enabled": True} if ns(part.provider_metadata, NAMESPACE).get("citations") else None
        return Block(
            document=Document(
                DOCUMENT_FORMATS[mime], _document_name(part, index), _source(part, "a document"), citations
            )
        )
    if mime in VIDEO_FORMATS:
        return Block(video=Video(VIDEO_FORMATS[mime], _source(part, "a video")))
    raise InvalidRequestError(f"{NAME} does not accept {part.mime_type} content")


def _lower_reasoning(part: ReasoningPart) -> Block | None:
    if part.encrypted:
        return Block(reasoningContent=Reasoning(redactedContent=part.encrypted))
    signature: str | None = part.signature or ns(part.provider_metadata, NAMESPACE).get("signature")
    if not part.text and not signature:
        return None
    return Block(reasoningContent=Reasoning(reasoningText=ReasoningText(part.text, signature)))


def _result_content(result: Any) -> list[Block]:
    if isinstance(result, str):
        return [Block(text=result)]
    parts = content_parts(result)
    if parts is not None:
        return [
            Block(text=p.text) if isinstance(p, TextPart) else _lower_media(p, i) for i, p in enumerate(parts)
        ]
    if isinstance(result, dict | list):
        return [Block(json=result)]  # pyright: ignore[reportUnknownArgumentType]
    return [Block(text=msgspec.json.encode(result).decode())]


def _lower_tool_result(part: ToolResultPart) -> Block:
    kind: str | None = ns(part.provider_metadata, NAMESPACE).get("type") if part.provider_executed else None
    status = "error" if part.is_error else "success"
    return Block(toolResult=ToolResultBlock(part.id, _result_content(part.result), status, kind))


def _lower_part(part: Part, index: int) -> Block | None:
    if isinstance(part, TextPart):
        return Block(text=part.text) if part.text else None
    if isinstance(part, MediaPart):
        return _lower_media(part, index)
    if isinstance(part, ReasoningPart):
        return _lower_reasoning(part)
    if isinstance(part, ToolCallPart):
        return Block(
            toolUse=ToolUse(
                part.id, part.name, part.input, "server_tool_use" if part.provider_executed else None
            )
        )
    if isinstance(part, ToolResultPart):
        return _lower_tool_result(part)
    raise InvalidRequestError(f"{NAME}: {type(part).__name__} is not supported on this protocol")


def _lower_messages(request: LLMRequest) -> tuple[list[Block] | None, list[Message]]:
    """The system blocks and the messages. Converse roles alternate user/assistant: tool results and
    mid-conversation system text are user content, and consecutive same-role messages are merged."""
    system = [Block(text=p.text) for p in request.system if p.text] or None
    out: list[Message] = []
    for message in request.messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[Block] = []
        for index, part in enumerate(message.content):
            if role == "user" and isinstance(part, ReasoningPart | ToolCallPart):
                raise InvalidRequestError(
                    f"{NAME}: a {message.role} message cannot hold a {type(part).__name__}"
                )
            if role == "assistant" and isinstance(part, MediaPart):
                continue  # media another provider's model produced: Converse assistant turns hold none
            block = _lower_part(part, index)
            if block is not None:
                blocks.append(block)
        if not blocks:
            continue
        if out and out[-1].role == role:
            out[-1].content.extend(blocks)
        else:
            out.append(Message(role, blocks))
    return system, out


def _lower_tools(request: LLMRequest) -> list[Tool]:
    return lower_tools(request.tools, _lower_tool, _lower_hosted)


def _lower_tool(tool: ToolDefinition) -> Tool:
    return Tool(
        toolSpec=ToolSpec(tool.name, {"json": tool.input_schema}, tool.description or None, tool.strict)
    )


def _uses_tools(messages: list[Message]) -> bool:
    return any(b.toolUse is not None or b.toolResult is not None for m in messages for b in m.content)


def _lower_tool_choice(request: LLMRequest) -> dict[str, Any] | None:
    """Converse's ``toolChoice``; none for ``"none"``, which Converse lacks (see ``_tool_config``)."""
    choice = request.tool_choice
    if choice is None or choice.mode == "none":
        return None
    if choice.mode == "tool":
        return {"tool": {"name": choice.name}}
    return {"any": {}} if choice.mode == "required" else {"auto": {}}


def _tool_config(request: LLMRequest, messages: list[Message]) -> ToolConfig | None:
    tools = _lower_tools(request)
    if not tools:
        return None
    choice = request.tool_choice
    if choice is not None and choice.mode == "none" and not _uses_tools(messages):
        return None  # omitted: but a history with tool blocks requires toolConfig, so tools stay
    return ToolConfig(tools, _lower_tool_choice(request))


def _apply_cache(
    request: LLMRequest,
    system: list[Block] | None,
    tool_config: ToolConfig | None,
    messages: list[Message],
) -> None:
    """Positional ``cachePoint`` blocks: tools -> system -> the last N messages, at most four."""
    policy = request.cache
    if policy is None:
        return
    tools = tool_config.tools if tool_config is not None else None
    point = CachePoint("default", breakpoint_ttl(policy))
    targets = cache_targets(policy, tools=bool(tools), system=bool(system), messages=len(messages))
    for target in targets[:MAX_CACHE_POINTS]:
        if target == "tools" and tools:
            tools.append(Tool(cachePoint=point))
        elif target == "system" and system:
            system.append(Block(cachePoint=point))
        elif isinstance(target, int):
            messages[target].content.append(Block(cachePoint=point))


def _additional_fields(request: LLMRequest, options: dict[str, Any]) -> dict[str, Any] | None:
    fields: dict[str, Any] = {}
    g = request.generation
    if g is not None and g.top_k is not None:
        fields["top_k"] = g.top_k
    explicit = options.get("additionalModelRequestFields") or options.get("additional_model_request_fields")
    if isinstance(explicit, dict):
        fields.update(explicit)  # type: ignore[arg-type]
    for key, value in options.items():
        if key in TOP_LEVEL_OPTIONS or key in (
            "additionalModelRequestFields",
            "additional_model_request_fields",
        ):
            continue
        fields[key] = value  # "thinking", "reasoningConfig", "anthropic_beta", ...
    return fields or None


_json = msgspec.json.Encoder()


def _output_config(request: LLMRequest, model_id: str) -> dict[str, Any] | None:
    """``outputConfig.textFormat`` for a model with structured outputs (the schema is a JSON string)."""
    native = native_schema(request, model_id)
    if native is None:
        return None
    spec: dict[str, Any] = {"name": native.name, "schema": _json.encode(native.schema).decode()}
    if native.description:
        spec["description"] = native.description
    return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": spec}}}


def _thinks(fields: dict[str, Any] | None) -> bool:
    """Extended thinking is on (Claude ``thinking``, Nova ``reasoningConfig``)."""
    for key in ("thinking", "reasoningConfig"):
        value = (fields or {}).get(key)
        if isinstance(value, dict) and value.get("type", "enabled") != "disabled":  # pyright: ignore[reportUnknownMemberType]
            return True
    return False


def build_body(request: LLMRequest, model: ModelRef) -> ConverseBody | dict[str, Any]:
    g = request.generation
    options = request.options_for(NAMESPACE)
    request = with_output_tool(
        request, model.id, NAME, thinking=_thinks(_additional_fields(request, options))
    )
    system, messages = _lower_messages(request)
    tool_config = _tool_config(request, messages)
    _apply_cache(request, system, tool_config, messages)
    inference = None
    if g is not None:
        inference = InferenceConfig(
            maxTokens=g.max_tokens,
            temperature=g.temperature,
            topP=g.top_p,
            stopSequences=list(g.stop) if g.stop else None,
        )
        if inference == InferenceConfig():
            inference = None
    body = ConverseBody(
        messages=messages,
        system=system,
        inferenceConfig=inference,
        toolConfig=tool_config,
        additionalModelRequestFields=_additional_fields(request, options),
        outputConfig=_output_config(request, model.id),
    )
    return with_options(body, {k: v for k, v in options.items() if k in TOP_LEVEL_OPTIONS})


# -- hosted tools: one lowering each, offered through HOSTED_TOOLS


def _lower_hosted(tool: HostedTool) -> Tool:
    return lower_hosted(HOSTED_TOOLS, tool, NAME)


def _lower_code_execution(tool: HostedTool) -> Tool:
    """A system tool (Nova's code interpreter unless ``name`` names another)."""
    return Tool(systemTool=SystemTool(str(tool.options.get("name", CODE_INTERPRETER))))


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {"code_execution": _lower_code_execution}

# what Converse leaves out (see ``route.support``)
SUPPORT = Support(
    {
        **no_field("Bedrock Converse", "seed", "frequency_penalty", "presence_penalty"),
        "output_schema.strict": ALWAYS_CONSTRAINED,
        **breakpoint_cache("Bedrock Converse"),
    }
)
