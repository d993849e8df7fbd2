"""``gemini``, request -> body: section 4 of the six (``build_body`` and its
lowering helpers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ...route.support import ALWAYS_CONSTRAINED, Support, hosted_parts
from ...schema.content import (
    ApprovalRequestPart,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from ...schema.errors import InvalidRequestError
from ...schema.request import LLMRequest, ModelRef
from ...schema.tools import HostedTool, ToolDefinition
from .._output_tool import described_schema
from .._shared import lower_hosted, ns, result_text, with_options
from ..gemini_schema import sanitize_schema
from .grounding import NS
from .wire import (
    NAME,
    Blob,
    ContentOut,
    FileData,
    FunctionCallingConfig,
    FunctionCallOut,
    FunctionDeclaration,
    FunctionResponseOut,
    GeminiBody,
    GenerationConfig,
    PartOut,
    SystemInstruction,
    ToolConfig,
    ToolOut,
)

# 4. build_body ------------------------------------------------------------------------------------


def _text_out(part: TextPart) -> PartOut:
    return PartOut(text=part.text, thought_signature=_signature_of(part.provider_metadata))


def _signature_of(metadata: dict[str, Any] | None) -> str | None:
    sig = ns(metadata, NS).get("thoughtSignature")
    return sig if isinstance(sig, str) else None


def _lower_media(part: MediaPart) -> PartOut:
    if part.is_url:
        return PartOut(file_data=FileData(part.mime_type, part.data))  # type: ignore[arg-type]
    # media the model produced carries its thought signature back (Gemini 3 image output)
    sig = _signature_of(part.provider_metadata)
    return PartOut(inline_data=Blob(part.mime_type, part.base64()), thought_signature=sig)


def _user_parts(parts: tuple[Any, ...]) -> list[PartOut]:
    out: list[PartOut] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(PartOut(text=part.text))
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
        else:
            raise InvalidRequestError(f"{NAME}: a user message cannot hold a {type(part).__name__}")
    return out


def _model_parts(parts: tuple[Any, ...]) -> list[PartOut]:
    out: list[PartOut] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(_text_out(part))
        elif isinstance(part, ReasoningPart):
            # Only Gemini's own reasoning carries a signature Gemini can verify.
            sig = _signature_of(part.provider_metadata)
            if part.text or sig:
                out.append(PartOut(text=part.text, thought=True, thought_signature=sig))
        elif isinstance(part, ToolCallPart):
            if part.provider_executed:
                sig = _signature_of(part.provider_metadata)
                server_call = ns(part.provider_metadata, NS).get("toolCall")
                if isinstance(server_call, dict):  # a Gemini 3 server-side call, echoed as it came
                    out.append(PartOut(tool_call=server_call, thought_signature=sig))  # pyright: ignore[reportUnknownArgumentType]
                elif part.name == "code_execution" and isinstance(part.input, dict):
                    out.append(PartOut(executable_code=part.input, thought_signature=sig))  # type: ignore[arg-type]
                continue  # grounding / url context calls are not replayable
            args: Any = part.input
            if not isinstance(args, dict):
                args = {"input": args}  # functionCall.args must be an object
            out.append(
                PartOut(
                    function_call=FunctionCallOut(part.name, args, part.id),
                    thought_signature=_signature_of(part.provider_metadata),
                )
            )
        elif isinstance(part, ToolResultPart):
            if not part.provider_executed:
                continue
            sig = _signature_of(part.provider_metadata)
            server_response = ns(part.provider_metadata, NS).get("toolResponse")
            if isinstance(server_response, dict):
                out.append(PartOut(tool_response=server_response, thought_signature=sig))  # pyright: ignore[reportUnknownArgumentType]
            elif part.name == "code_execution" and isinstance(part.result, dict):
                out.append(PartOut(code_execution_result=part.result, thought_signature=sig))  # type: ignore[arg-type]
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
    return out


def _tool_parts(parts: tuple[Any, ...]) -> list[PartOut]:
    out: list[PartOut] = []
    media: list[PartOut] = []
    for part in parts:
        if isinstance(part, ToolResultPart):
            if part.provider_executed:
                continue
            key = "error" if part.is_error else "content"
            response = {"name": part.name, key: result_text(part.result)}
            out.append(PartOut(function_response=FunctionResponseOut(part.name, response, part.id)))
            if isinstance(part.result, tuple | list):
                media.extend(_lower_media(p) for p in part.result if isinstance(p, MediaPart))  # type: ignore[union-attr]
        elif isinstance(part, TextPart):
            out.append(PartOut(text=part.text))
        elif isinstance(part, MediaPart):
            out.append(_lower_media(part))
    return out + media  # images a tool returned follow its functionResponse in the same user turn


def _lower_messages(request: LLMRequest) -> tuple[list[ContentOut], list[PartOut]]:
    system = [PartOut(text=p.text) for p in request.system]
    contents: list[ContentOut] = []
    for message in request.messages:
        if message.role == "system":
            system.extend(PartOut(text=p.text) for p in message.content if isinstance(p, TextPart))
            continue
        parts = _lower_message(message)
        if not parts:
            continue
        role = "model" if message.role == "assistant" else "user"
        if contents and contents[-1].role == role and message.role == "tool":
            contents[-1].parts.extend(parts)  # results of one turn's calls share a user turn
        else:
            contents.append(ContentOut(role, parts))
    if "gemini-3" in request.model.id:
        _sign_current_turn(contents)
    return contents, system


# Gemini 3 refuses a function call of the current turn without its thought signature; a call another
# model made (a router's other target, a client of another API) has none, and Gemini's documented
# stand-in for "this trace comes from elsewhere" is this value.
SKIP_SIGNATURE = "skip_thought_signature_validator"


def _sign_current_turn(contents: list[ContentOut]) -> None:
    """The first function call of each model step since the last user message without a signature
    gets ``SKIP_SIGNATURE`` (function responses do not start a turn)."""
    start = 0
    for i, content in enumerate(contents):
        if content.role == "user" and any(p.function_response is None for p in content.parts):
            start = i + 1
    for content in contents[start:]:
        if content.role != "model":
            continue
        first = next((p for p in content.parts if p.function_call is not None), None)
        if first is not None and first.thought_signature is None:
            first.thought_signature = SKIP_SIGNATURE


def _lower_message(message: Message) -> list[PartOut]:
    if message.role == "user":
        return _user_parts(message.content)
    if message.role == "assistant":
        return _model_parts(message.content)
    return _tool_parts(message.content)


_HOSTED_GENERIC = ("max_uses", "allowed_domains", "user_location", "search_context_size")


def _lower_web_search(tool: HostedTool) -> ToolOut:
    options = dict(tool.options)
    unsupported = sorted(k for k in _HOSTED_GENERIC if k in options)
    if unsupported:
        raise InvalidRequestError(f"{NAME} googleSearch has no {', '.join(unsupported)} option")
    blocked = options.pop("blocked_domains", None)
    if blocked:
        options["excludeDomains"] = blocked
    return ToolOut(google_search=options)


def _lower_url_context(tool: HostedTool) -> ToolOut:
    return ToolOut(url_context=dict(tool.options))


def _lower_code_execution(tool: HostedTool) -> ToolOut:
    return ToolOut(code_execution=dict(tool.options))


def _lower_file_search(tool: HostedTool) -> ToolOut:
    options = dict(tool.options)
    stores = options.pop("vector_store_ids", None)
    if stores:
        options["fileSearchStoreNames"] = stores
    return ToolOut(file_search=options)


def _lower_hosted(tool: HostedTool) -> ToolOut:
    return lower_hosted(HOSTED_TOOLS, tool, NAME)


def _lower_tools(request: LLMRequest) -> list[ToolOut] | None:
    functions: list[FunctionDeclaration] = []
    hosted: list[ToolOut] = []
    for tool in request.tools:
        if isinstance(tool, HostedTool):
            hosted.append(_lower_hosted(tool))
        else:
            functions.append(_lower_tool(tool))
    tools = [ToolOut(function_declarations=functions)] if functions else []
    return (tools + hosted) or None


def _lower_tool(tool: ToolDefinition) -> FunctionDeclaration:
    return FunctionDeclaration(
        name=tool.name,
        description=tool.description or None,
        parameters=sanitize_schema(tool.input_schema),
    )


def _lower_tool_choice(request: LLMRequest, stream_arguments: bool | None) -> ToolConfig | None:
    """``tool_choice`` as a function-calling mode, plus ``streamFunctionCallArguments`` (Gemini 3:
    arguments arrive as ``partialArgs`` pieces) when asked for."""
    choice = request.tool_choice
    if choice is None:
        config = FunctionCallingConfig()
    elif choice.mode == "tool":
        if choice.name is None:
            raise InvalidRequestError(f"{NAME}: a named tool choice needs a tool name")
        config = FunctionCallingConfig("ANY", [choice.name])
    else:
        config = FunctionCallingConfig({"auto": "AUTO", "none": "NONE", "required": "ANY"}[choice.mode])
    if stream_arguments is not None:
        if not isinstance(stream_arguments, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(f"{NAME}: stream_function_call_arguments must be a bool")
        config.stream_function_call_arguments = stream_arguments
    return ToolConfig(config) if config != FunctionCallingConfig() else None


# Provider options (``provider_options={"google": {...}}`` or ``google.configure().gemini(id, **opts)``)
# with a place in the body; any other key is sent as a top-level body field as given.
_THINKING_KEYS = {
    "thinking_budget": "thinkingBudget",
    "thinkingBudget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
    "includeThoughts": "includeThoughts",
    "thinking_level": "thinkingLevel",
    "thinkingLevel": "thinkingLevel",
}
_BODY_KEYS = {
    "safety_settings": "safety_settings",
    "safetySettings": "safety_settings",
    "cached_content": "cached_content",
    "cachedContent": "cached_content",
    "labels": "labels",
}
_STREAM_ARGUMENTS_KEYS = ("stream_function_call_arguments", "streamFunctionCallArguments")
_GENERATION_KEYS = {
    "response_modalities": "response_modalities",
    "responseModalities": "response_modalities",
    "media_resolution": "media_resolution",
    "mediaResolution": "media_resolution",
}


def _options(request: LLMRequest, model: ModelRef) -> dict[str, Any]:
    options = dict(request.options_for(NS))
    if model.provider != NS:
        options.update(request.options_for(model.provider))
    return options


def build_body(request: LLMRequest, model: ModelRef) -> GeminiBody | dict[str, Any]:
    g = request.generation
    assert g is not None  # resolved by prepare()
    options = _options(request, model)
    thinking: dict[str, Any] = {
        **(options.pop("thinkingConfig", None) or {}),
        **(options.pop("thinking_config", None) or {}),
    }
    generation: dict[str, Any] = {}
    body_fields: dict[str, Any] = {}
    json_schema_mode = bool(options.pop("response_json_schema", False))
    stream_arguments: bool | None = None
    for key in _STREAM_ARGUMENTS_KEYS:
        stream_arguments = options.pop(key, stream_arguments)
    raw_generation: dict[str, Any] = options.pop("generation_config", None) or {}
    for key in list(options):
        if key in _THINKING_KEYS:
            thinking[_THINKING_KEYS[key]] = options.pop(key)
        elif key in _BODY_KEYS:
            body_fields[_BODY_KEYS[key]] = options.pop(key)
        elif key in _GENERATION_KEYS:
            generation[_GENERATION_KEYS[key]] = options.pop(key)
    out_schema = request.output_schema
    if out_schema is not None or request.json_mode:
        generation["response_mime_type"] = "application/json"
    if out_schema is not None:
        if json_schema_mode:
            generation["response_json_schema"] = described_schema(out_schema)
        else:
            generation["response_schema"] = sanitize_schema(described_schema(out_schema))
    config = GenerationConfig(
        max_output_tokens=g.max_tokens,
        temperature=g.temperature,
        top_p=g.top_p,
        top_k=g.top_k,
        stop_sequences=list(g.stop) if g.stop else None,
        seed=g.seed,
        presence_penalty=g.presence_penalty,
        frequency_penalty=g.frequency_penalty,
        thinking_config=thinking or None,
        **generation,
    )
    contents, system = _lower_messages(request)
    body = GeminiBody(
        contents=contents,
        system_instruction=SystemInstruction(system) if system else None,
        tools=_lower_tools(request),
        tool_config=_lower_tool_choice(request, stream_arguments),
        generation_config=config if config != _EMPTY_CONFIG else None,
        **body_fields,
    )
    if not raw_generation:
        return with_options(body, options)
    data: dict[str, Any] = msgspec.to_builtins(body)
    data["generationConfig"] = {**data.get("generationConfig", {}), **raw_generation}
    return with_options(data, options)


_EMPTY_CONFIG = GenerationConfig()

# what Gemini leaves out (see ``route.support``)
SUPPORT = Support(
    {
        "cache": "Gemini caches repeated prefixes by itself; an explicit cache is a cachedContent "
        "resource (provider option cached_content), not breakpoints",
        "tools.strict": "Gemini function declarations have no strict flag",
        "parts.approval-request": "Gemini has no tool approvals",
        "output_schema.strict": ALWAYS_CONSTRAINED,
        **hosted_parts(),
    },
    keeps_part=lambda part: _replayable(part),
)


def _replayable(part: Part) -> bool:
    """Hosted parts the history lowering keeps: Gemini's own code execution (grounding and URL
    context calls are not replayable)."""
    if isinstance(part, ApprovalRequestPart):
        return False
    if not getattr(part, "provider_executed", False):
        return True
    value = part.input if isinstance(part, ToolCallPart) else getattr(part, "result", None)
    return getattr(part, "name", None) == "code_execution" and isinstance(value, dict)


HOSTED_TOOLS: dict[str, Callable[..., Any]] = {
    "web_search": _lower_web_search,
    "url_context": _lower_url_context,
    "code_execution": _lower_code_execution,
    "file_search": _lower_file_search,
}
