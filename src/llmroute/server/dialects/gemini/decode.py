"""A client's Gemini ``generateContent`` request -> an ``LLMRequest``: every field lowered, carried to
a Gemini upstream in ``provider_options["google"]`` (which only the Gemini protocols read),
reported where the upstream has no such thing and the answer means the same, or refused by name.

Function calls without ids (Gemini 2.x clients) get ids by position, and a ``functionResponse``
without one answers the earliest unanswered call of its name, as Gemini pairs them. A
``thoughtSignature`` the gateway packed (``server.carry``: another upstream's reasoning, carried on
the call because gemini-cli drops thought parts from its history) goes back as those parts."""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ....schema.content import MediaPart, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from ....schema.errors import InvalidRequestError
from ....schema.options import GenerationOptions
from ....schema.request import OutputSchema
from ....schema.tools import HostedTool, ToolChoice, ToolDefinition, ToolSpec
from ... import carry
from ...disposition import Dispositions, Lowered
from ...upstream import GEMINI, Upstream
from ..conversation import Conversation
from .wire import Content, FunctionDeclaration, GenerateRequest, GenerationConfig, ToolIn
from .wire import Part as WirePart

__all__ = ["NS", "json_schema", "lower"]

NS = "google"  # the provider_options / provider_metadata namespace the Gemini protocols read

_REPORTED = {
    "safetySettings": "safety thresholds are Gemini's own",
    "labels": "billing labels are Gemini's own",
    "serviceTier": "the service tier is Gemini's own",
    "store": "Gemini's own logging setting",
    "generationConfig.thinkingConfig": "reasoning there is the model's own setting",
    "generationConfig.mediaResolution": "media resolution is Gemini's own",
    "generationConfig.responseLogprobs": "log probabilities are not returned by this door",
    "generationConfig.logprobs": "log probabilities are not returned by this door",
    "generationConfig.enableEnhancedCivicAnswers": "Gemini's own",
    "generationConfig.audioTimestamp": "Gemini's own",
    "generationConfig.routingConfig": "Gemini's own model routing",
    "generationConfig.modelSelectionConfig": "Gemini's own model routing",
    "toolConfig.functionCallingConfig.streamFunctionCallArguments": "arguments stream as the upstream sends them",
    "toolConfig.retrievalConfig": "a location hint for Gemini's own grounding",
}
_REFUSED = {
    "cachedContent": "a cachedContent resource lives on Gemini",
    "generationConfig.speechConfig": "speech output is Gemini's own",
    "generationConfig.imageConfig": "image output is Gemini's own",
}
_GENERATION_EXTRAS = {  # wire attribute -> its camelCase name
    "media_resolution": "mediaResolution",
    "speech_config": "speechConfig",
    "image_config": "imageConfig",
    "response_logprobs": "responseLogprobs",
    "logprobs": "logprobs",
    "enable_enhanced_civic_answers": "enableEnhancedCivicAnswers",
    "audio_timestamp": "audioTimestamp",
    "routing_config": "routingConfig",
    "model_selection_config": "modelSelectionConfig",
}
_GEMINI_ONLY_TOOLS = ("google_maps", "computer_use", "enterprise_web_search", "retrieval", "mcp_servers")


class _Context(Dispositions):
    def __init__(self, upstream: Upstream, gateway_search: bool) -> None:
        super().__init__(upstream, GEMINI, NS)
        self.gateway_search = gateway_search
        self.searches = False
        self.calls: list[tuple[str, str]] = []  # unanswered (id, name), oldest first
        self.generation: dict[str, Any] = {}  # generationConfig fields carried to Gemini

    def only_gemini(self, field: str, value: Any, key: str | None = None) -> None:
        self.carry(field, value, reported=_REPORTED, refused=_REFUSED, key=key)


def lower(
    payload: GenerateRequest, model: Any, upstream: Upstream, *, gateway_search: bool = False
) -> Lowered:
    cx = _Context(upstream, gateway_search)
    system = payload.system_instruction
    conversation = Conversation(_system(system), field="contents")
    for i, content in enumerate(payload.contents):
        _content(conversation, content, i, cx)
    tools, choice = _tools(payload, cx)
    generation, schema, json_mode = _generation(payload.generation_config, cx)
    cx.only_gemini("safetySettings", payload.safety_settings)
    cx.only_gemini("cachedContent", payload.cached_content)
    cx.only_gemini("labels", payload.labels)
    cx.only_gemini("serviceTier", payload.service_tier)
    cx.only_gemini("store", payload.store)
    if cx.generation and cx.native:
        cx.options["generation_config"] = cx.generation
    request = conversation.request(
        model, tools=(), tool_choice=choice, generation=generation, output_schema=schema, json_mode=json_mode
    )
    return cx.lowered(msgspec.structs.replace(request, tools=tuple(tools)), searches=cx.searches)


# -- contents ---------------------------------------------------------------------------------------


def _system(system: Content | None) -> list[TextPart]:
    if system is None:
        return []
    out: list[TextPart] = []
    for j, part in enumerate(system.parts):
        if part.text is None:
            raise InvalidRequestError(
                f"systemInstruction.parts[{j}]: only text parts are allowed here", param="systemInstruction"
            )
        out.append(TextPart(part.text))
    return out


def _standard(sig: str) -> str:
    """A base64 signature in the standard alphabet, padded, as Gemini sent it (google-genai hands
    bytes back URL-safe)."""
    if "-" not in sig and "_" not in sig and len(sig) % 4 == 0:
        return sig
    bare = sig.replace("-", "+").replace("_", "/").rstrip("=")
    return bare + "=" * (-len(bare) % 4)


def _signature_meta(sig: str | None) -> dict[str, Any] | None:
    return {NS: {"thoughtSignature": _standard(sig)}} if sig else None


def _content(conversation: Conversation, content: Content, i: int, cx: _Context) -> None:
    where = f"contents[{i}]"
    if content.role == "model":
        _model_turn(conversation, content.parts, i, cx)
        return
    parts: list[Part] = []
    for j, part in enumerate(content.parts):
        at = f"{where}.parts[{j}]"
        if part.function_response is not None:
            if parts:
                conversation.add("user", tuple(parts))
                parts = []
            conversation.add("tool", (_function_response(part, at, cx),), merge=True)
        elif part.text is not None:
            parts.append(TextPart(part.text))
        elif (media := _media(part, at)) is not None:
            parts.append(media)
        else:
            raise InvalidRequestError(
                f"{at}: a user part holds text, inlineData, fileData or a functionResponse"
            )
    if parts:
        conversation.add("user", tuple(parts))


def _media(part: WirePart, at: str) -> MediaPart | None:
    if part.inline_data is not None:
        blob = part.inline_data
        return MediaPart(blob.mime_type, blob.data, None, _signature_meta(part.thought_signature))
    if part.file_data is not None:
        given = part.file_data
        uri = given.file_uri
        if not uri.startswith(("http://", "https://", "gs://")):
            raise InvalidRequestError(
                f"{at}.fileData.fileUri: a file in Gemini's Files API cannot be read through this "
                "model; send it inline (inlineData)",
                param=f"{at}.fileData",
            )
        return MediaPart(given.mime_type or "application/octet-stream", uri)
    return None


def _function_response(part: WirePart, at: str, cx: _Context) -> ToolResultPart:
    response = part.function_response
    assert response is not None
    call_id = response.id
    if call_id is None:
        found = next((c for c in cx.calls if c[1] == response.name), None)
        call_id = found[0] if found is not None else f"call_{response.name}_{len(cx.calls)}"
    cx.calls = [c for c in cx.calls if c[0] != call_id]
    value: Any = response.response if response.response is not None else {}
    media = [
        m
        for j, p in enumerate(response.parts or ())
        if (m := _media(msgspec.convert(p, WirePart), f"{at}.functionResponse.parts[{j}]")) is not None
    ]
    result: Any = (TextPart(msgspec.json.encode(value).decode()), *media) if media else value
    error = isinstance(value, dict) and set(cast("dict[str, Any]", value)) == {"error"}
    return ToolResultPart(call_id, response.name, result, error)


def _model_turn(conversation: Conversation, parts_in: list[WirePart], i: int, cx: _Context) -> None:
    parts: list[Part] = []
    restored: set[tuple[str | None, str | None]] = set()  # reasoning already given back
    for j, part in enumerate(parts_in):
        at = f"contents[{i}].parts[{j}]"
        sig = part.thought_signature
        packed = carry.unpack(sig)
        if part.function_call is not None:
            call = part.function_call
            call_id = call.id or f"call_{i}_{j}"
            meta = _signature_meta(sig) if packed is None else packed.provider_metadata
            if packed is not None:
                for before in packed.before:
                    if (before.signature, before.encrypted) not in restored:
                        parts.append(carry.restored(before, ""))
            parts.append(ToolCallPart(call_id, call.name, call.args or {}, provider_metadata=meta))
            cx.calls.append((call_id, call.name))
        elif part.executable_code is not None:
            parts.append(ToolCallPart(f"code_{i}_{j}", "code_execution", part.executable_code, True))
        elif part.code_execution_result is not None:
            result = part.code_execution_result
            parts.append(ToolResultPart(f"code_{i}_{j - 1}", "code_execution", result, False, True))
        elif part.thought:
            if packed is not None:
                parts.append(carry.restored(packed, part.text or ""))
                restored.add((packed.signature, packed.encrypted))
            else:
                native = _standard(sig) if sig else None
                parts.append(ReasoningPart(part.text or "", native, provider_metadata=_signature_meta(sig)))
        elif part.text is not None:
            parts.append(TextPart(part.text, _signature_meta(sig)))
        elif (media := _media(part, at)) is not None:
            parts.append(media)
        elif sig is not None and parts:  # an empty part carrying the signature of the turn
            continue
        else:
            raise InvalidRequestError(f"{at}: an empty model part", param=at)
    if parts:
        conversation.add("assistant", tuple(parts), merge=True)


# -- tools ------------------------------------------------------------------------------------------


def json_schema(schema: Any) -> Any:
    """Gemini's OpenAPI-subset ``Schema`` (``"type": "STRING"``, ``nullable``) as plain JSON Schema."""
    if isinstance(schema, list):
        return [json_schema(s) for s in cast("list[Any]", schema)]
    if not isinstance(schema, dict):
        return schema
    given = cast("dict[str, Any]", schema)
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {k: json_schema(v) for k, v in cast("dict[str, Any]", value).items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "not"):
            out[key] = json_schema(value)
        elif key in ("nullable", "propertyOrdering", "example"):
            continue
        else:
            out[key] = value
    if given.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _function(decl: FunctionDeclaration) -> ToolDefinition:
    if decl.parameters_json_schema is not None:
        schema: Any = decl.parameters_json_schema
    elif decl.parameters is not None:
        schema = json_schema(decl.parameters)
    else:
        schema = {"type": "object", "properties": {}}
    return ToolDefinition(decl.name, decl.description or "", cast("dict[str, Any]", schema))


def _tools(payload: GenerateRequest, cx: _Context) -> tuple[list[ToolSpec], ToolChoice | None]:
    tools: list[ToolSpec] = []
    for i, tool in enumerate(payload.tools or ()):
        tools.extend(_tool(tool, i, cx))
    config = payload.tool_config
    calling = config.function_calling_config if config is not None else None
    if config is not None:
        cx.only_gemini("toolConfig.retrievalConfig", config.retrieval_config, "retrieval_config")
    if calling is None:
        return tools, None
    if calling.stream_function_call_arguments is not None:
        cx.only_gemini(
            "toolConfig.functionCallingConfig.streamFunctionCallArguments",
            calling.stream_function_call_arguments,
            "stream_function_call_arguments",
        )
    allowed = calling.allowed_function_names
    if allowed:  # only these may be called: offer only these
        unknown = sorted(set(allowed) - {t.name for t in tools if isinstance(t, ToolDefinition)})
        if unknown:
            raise InvalidRequestError(
                f"toolConfig.functionCallingConfig.allowedFunctionNames: {', '.join(unknown)} not declared",
                param="toolConfig",
            )
        tools = [t for t in tools if not isinstance(t, ToolDefinition) or t.name in allowed]
    mode = calling.mode or "AUTO"
    if mode == "NONE":
        return tools, ToolChoice("none")
    if mode == "ANY":
        if allowed and len(allowed) == 1:
            return tools, ToolChoice.named(allowed[0])
        return tools, ToolChoice("required")
    return tools, None  # AUTO, VALIDATED (the upstream validates the calls it makes either way)


def _tool(tool: ToolIn, i: int, cx: _Context) -> list[ToolSpec]:
    at = f"tools[{i}]"
    out: list[ToolSpec] = [_function(d) for d in tool.function_declarations or ()]
    for name in ("google_search", "google_search_retrieval"):
        options = getattr(tool, name)
        if options is None:
            continue
        if cx.gateway_search:
            cx.searches = True  # served by the gateway's own web_search
        else:
            if options and cx.elsewhere:
                cx.warn(f"{at}.googleSearch", "the search options are Gemini's own")
            out.append(HostedTool("web_search", dict(options) if cx.native and not cx.elsewhere else {}))
    if tool.code_execution is not None:
        out.append(HostedTool("code_execution", {}))
    if tool.url_context is not None:
        out.append(HostedTool("url_context", dict(tool.url_context)))
    if tool.file_search is not None:
        out.append(HostedTool("file_search", dict(tool.file_search)))
    for name in _GEMINI_ONLY_TOOLS:
        if getattr(tool, name) is not None:
            raise InvalidRequestError(
                f"{at}: Gemini's {name} tool is not available through this model", param=at
            )
    return out


# -- generationConfig -------------------------------------------------------------------------------


def _generation(
    config: GenerationConfig | None, cx: _Context
) -> tuple[GenerationOptions, OutputSchema | None, bool]:
    if config is None:
        return GenerationOptions(), None, False
    if config.candidate_count not in (None, 1):
        raise InvalidRequestError(
            "generationConfig.candidateCount: one candidate per request",
            param="generationConfig.candidateCount",
        )
    modalities = [m.upper() for m in config.response_modalities or ()]
    if any(m != "TEXT" for m in modalities):
        if cx.elsewhere:
            raise InvalidRequestError(
                f"generationConfig.responseModalities: {', '.join(modalities)} output is not available "
                f"through this model ({cx.elsewhere})",
                param="generationConfig.responseModalities",
            )
        cx.options["response_modalities"] = config.response_modalities
    if config.thinking_config is not None:
        thinking = {k: v for k, v in msgspec.to_builtins(config.thinking_config).items() if v is not None}
        cx.only_gemini("generationConfig.thinkingConfig", thinking, "thinkingConfig")
    for name, camel in _GENERATION_EXTRAS.items():
        value = getattr(config, name)
        if value is not None:
            field = f"generationConfig.{camel}"
            cx.carry(field, value, reported=_REPORTED, refused=_REFUSED, key=field)
            cx.options.pop(field, None)
            if cx.native:
                cx.generation[camel] = value
    mime = config.response_mime_type
    schema: OutputSchema | None = None
    if config.response_json_schema is not None:
        schema = OutputSchema("output", cast("dict[str, Any]", config.response_json_schema))
    elif config.response_schema is not None:
        schema = OutputSchema("output", cast("dict[str, Any]", json_schema(config.response_schema)))
    if mime not in (None, "text/plain", "application/json"):
        raise InvalidRequestError(
            f"generationConfig.responseMimeType: {mime!r} is not available through this model "
            "(text/plain and application/json are)",
            param="generationConfig.responseMimeType",
        )
    top_k = config.top_k
    generation = GenerationOptions(
        max_tokens=config.max_output_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=int(top_k) if top_k is not None else None,
        stop=tuple(config.stop_sequences) if config.stop_sequences else None,
        seed=config.seed,
        presence_penalty=config.presence_penalty,
        frequency_penalty=config.frequency_penalty,
    )
    return generation, schema, mime == "application/json" and schema is None
