"""Bad input caught before any network I/O: an ``InvalidRequestError`` whose ``param`` names the
argument at fault.

``llmroute.request()`` checks what it is given; ``prepare()`` (every call, every tool-loop step)
checks the finished request again, including what only then is known: the tool set after the
runtime added its tools, which ``tool_choice`` must name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, cast

import msgspec

from .content import (
    ApprovalRequestPart,
    ApprovalResponsePart,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .errors import InvalidRequestError
from .options import CachePolicy, GenerationOptions
from .request import LLMRequest, OutputSchema
from .tools import HostedTool, ToolChoice, ToolDefinition

__all__ = [
    "TOOL_NAME",
    "check_cache",
    "check_generation",
    "check_json",
    "check_model",
    "check_provider_options",
    "check_text",
    "check_tool_name",
    "validate_request",
]

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_PARTS = (
    TextPart,
    MediaPart,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    ApprovalRequestPart,
    ApprovalResponsePart,
)
_ROLES = ("system", "user", "assistant", "tool")
_encoder = msgspec.json.Encoder()
# A lone surrogate (half of a UTF-16 pair, e.g. from a bad decode) has no UTF-8 form: no body holds it.
_SURROGATE = re.compile("[\ud800-\udfff]")
# What encoding a value that is not JSON raises (a self-referential dict: RecursionError).
_NOT_JSON = (TypeError, ValueError, RecursionError, msgspec.EncodeError)


def _bad(param: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{param}: {message}", param=param)


def _kind(value: object) -> str:
    return type(value).__name__


# A "provider:model" string (the form other libraries take) -> the facade call that builds it.
_FACADE_CALLS = {
    "openai": "openai.configure().chat",
    "anthropic": "anthropic.configure().messages",
    "google": "google.configure().gemini",
    "gemini": "google.configure().gemini",
    "vertex": "vertex.configure(project=..., location=...).gemini",
    "bedrock": "bedrock.configure(region=...).converse",
    "azure": 'azure.configure("resource").chat',
    "xai": "xai.configure().chat",
    "openrouter": "openrouter.configure().chat",
    "glm": "glm.configure().chat",
}


def _model_hint(model: str) -> str:
    prefix, sep, bare = model.partition(":")
    call = _FACADE_CALLS.get(prefix.strip().lower()) if sep and bare else None
    if call is None:
        return f"openai.configure().chat({_quoted(model)})"
    return f"{call}({_quoted(bare)}) (the provider is the facade, not a prefix of the id)"


def _quoted(text: str) -> str:
    return _encoder.encode(text).decode()


def check_model(model: object) -> None:
    """A model is a ``Model`` from a provider facade; a bare id string is the common mistake."""
    if isinstance(model, str):
        raise _bad(
            "model",
            f"expected a Model from a provider facade, not a string; e.g. {_model_hint(model)}",
        )
    if model is None or not (hasattr(model, "id") and hasattr(model, "provider")):
        raise _bad("model", f"expected a Model from a provider facade, got {_kind(model)}")


def check_tool_name(name: object, param: str) -> str:
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise _bad(param, f"tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
    return name


def _number(value: object, param: str, *, low: float, high: float | None, integer: bool = False) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integer and not isinstance(value, int))
    ):
        want = "an int" if integer else "a number"
        raise _bad(param, f"must be {want}, got {_kind(value)} {value!r}")
    if math.isnan(value) or value < low or (high is not None and value > high):
        bounds = f">= {low:g}" if high is None else f"between {low:g} and {high:g}"
        raise _bad(param, f"must be {bounds}, got {value!r}")


def check_generation(generation: object) -> None:
    if generation is None:
        return
    if not isinstance(generation, GenerationOptions):
        raise _bad(
            "generation",
            f"expected llmroute.GenerationOptions(...), got {_kind(generation)}"
            + (" (pass GenerationOptions(**your_dict))" if isinstance(generation, dict) else ""),
        )
    _number(generation.max_tokens, "generation.max_tokens", low=1, high=None, integer=True)
    _number(generation.temperature, "generation.temperature", low=0, high=2)
    _number(generation.top_p, "generation.top_p", low=0, high=1)
    _number(generation.top_k, "generation.top_k", low=1, high=None, integer=True)
    _number(generation.frequency_penalty, "generation.frequency_penalty", low=-2, high=2)
    _number(generation.presence_penalty, "generation.presence_penalty", low=-2, high=2)
    _number(generation.seed, "generation.seed", low=-(2**63), high=2**63 - 1, integer=True)
    stop = cast(object, generation.stop)
    if stop is not None and (
        isinstance(stop, str)
        or not isinstance(stop, tuple | list)
        or not all(isinstance(s, str) for s in cast(Sequence[object], stop))
    ):
        raise _bad("generation.stop", "must be a tuple of strings")


def _check_messages(messages: Sequence[object]) -> None:
    for i, message in enumerate(messages):
        param = f"messages[{i}]"
        if not isinstance(message, Message):
            hint = " (wrap text with llmroute.user(...))" if isinstance(message, str) else ""
            raise _bad(param, f"expected a Message, got {_kind(message)}{hint}")
        if message.role not in _ROLES:
            raise _bad(f"{param}.role", f"unknown role {message.role!r}")
        for j, part in enumerate(cast(Sequence[object], message.content)):
            if not isinstance(part, _PARTS):
                raise _bad(f"{param}.content[{j}]", f"expected a content part, got {_kind(part)}")
            if isinstance(part, TextPart | ReasoningPart):
                check_text(part.text, f"{param}.content[{j}].text")
        if message.role == "user" and all(
            isinstance(p, TextPart) and not p.text.strip() for p in message.content
        ):
            raise _bad(f"{param}.content", "the user message is empty or only whitespace")


def _check_tools(tools: Sequence[object]) -> set[str]:
    """Function tool names must be unique; a hosted tool may share one (a hosted ``web_search``
    next to a local tool of that name is how the runtime is tested never to run hosted calls)."""
    names: set[str] = set()
    kinds: set[str] = set()
    for i, spec in enumerate(tools):
        param = f"tools[{i}]"
        if isinstance(spec, HostedTool):
            kinds.add(spec.kind)
            continue
        if not isinstance(spec, ToolDefinition):
            raise _bad(
                param, f"expected a tool (llmroute.tool, ToolDefinition or a hosted tool), got {_kind(spec)}"
            )
        name = check_tool_name(spec.name, f"{param}.name")
        if name in names:
            raise _bad(param, f"duplicate tool name {name!r}")
        names.add(name)
        check_tool_schema(name, spec.input_schema, f"{param}.input_schema")
    return names | kinds


def check_text(text: str, param: str) -> None:
    """Text must have a UTF-8 form: a lone surrogate is named with its position."""
    found = _SURROGATE.search(text)
    if found is not None:
        raise _bad(
            param,
            f"contains a lone surrogate U+{ord(found.group()):04X} at index {found.start()}, "
            "which has no UTF-8 form (half of a UTF-16 pair)",
        )


def check_json(value: object, param: str, what: str) -> None:
    """``value`` must encode as JSON: no sets, objects, NaN, lone surrogates, or a dict inside itself."""
    try:
        _encoder.encode(value)
    except _NOT_JSON as exc:
        reason = "it contains itself" if isinstance(exc, RecursionError) else str(exc)
        raise _bad(param, f"{what} cannot be encoded as JSON ({reason})") from None


def check_tool_schema(name: str, schema: object, param: str) -> None:
    """The schema must be a JSON object that encodes (no sets, classes, NaN or self-reference)."""
    if not isinstance(schema, dict):
        raise _bad(param, f"tool {name}: input schema must be a JSON Schema object, got {_kind(schema)}")
    check_json(cast(object, schema), param, f"tool {name}: input schema")


def check_provider_options(options: object, param: str = "provider_options") -> None:
    """``{namespace: {option: value}}`` with string names and JSON values (they go into the body)."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise _bad(param, f"expected a dict of namespace to options, got {_kind(options)}")
    for namespace, values in cast(dict[object, object], options).items():
        if not isinstance(namespace, str):
            raise _bad(param, f"namespaces must be strings, got {_kind(namespace)}")
        where = f"{param}[{namespace!r}]"
        if values is None:
            continue
        if not isinstance(values, dict):
            raise _bad(where, f"expected a dict of options, got {_kind(values)}")
        for key, value in cast(dict[object, object], values).items():
            if not isinstance(key, str):
                raise _bad(where, f"option names must be strings, got {_kind(key)}")
            check_json(value, f"{where}[{key!r}]", "the value")


_TTLS = ("5m", "1h", "24h")
_KEY_LIMIT = 1024


def _key(value: object, param: str) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise _bad(param, f"must be a non-empty string, got {_kind(value)} {value!r}")
    if len(value) > _KEY_LIMIT:
        raise _bad(param, f"must be at most {_KEY_LIMIT} characters, got {len(value)}")
    check_text(value, param)


def check_cache(cache: object) -> None:
    """A ``CachePolicy`` whose fields hold what they say (msgspec does not check on init)."""
    if cache is None:
        return
    if not isinstance(cache, CachePolicy):
        raise _bad(
            "cache",
            f"expected llmroute.CachePolicy(...), got {_kind(cache)}"
            + (" (pass CachePolicy(**your_dict))" if isinstance(cache, dict) else ""),
        )
    for name in ("tools", "system", "explicit"):
        if not isinstance(getattr(cache, name), bool):
            raise _bad(f"cache.{name}", f"expected True or False, got {_kind(getattr(cache, name))}")
    _number(cache.messages, "cache.messages", low=0, high=None, integer=True)
    if cache.ttl is not None and cache.ttl not in _TTLS:
        raise _bad("cache.ttl", f"expected one of '5m', '1h', '24h' or None, got {cache.ttl!r}")
    _key(cache.key, "cache.key")


def validate_request(request: LLMRequest, *, tools_final: bool = True) -> None:
    """Raise ``InvalidRequestError`` (with ``param``) for the first problem found. With
    ``tools_final=False`` (at ``llmroute.request()``, before the tool runtime adds its tools) a
    ``tool_choice`` naming a tool not yet present is allowed."""
    check_model(request.model)
    for i, part in enumerate(cast(Sequence[object], request.system)):
        if not isinstance(part, TextPart):
            raise _bad(f"system[{i}]", f"expected text, got {_kind(part)}")
        check_text(part.text, f"system[{i}].text")
    if not request.messages:
        raise _bad("messages", "the conversation is empty: pass prompt=... or messages=[...]")
    _check_messages(cast(Sequence[object], request.messages))
    names = _check_tools(cast(Sequence[object], request.tools))
    choice: Any = request.tool_choice
    if choice is not None:
        if not isinstance(choice, ToolChoice):
            raise _bad(
                "tool_choice", f"expected 'auto', 'none', 'required' or a tool name, got {_kind(choice)}"
            )
        if choice.mode == "tool":
            check_tool_name(choice.name, "tool_choice")
            if tools_final and choice.name not in names:
                known = ", ".join(sorted(names)) or "none"
                raise _bad(
                    "tool_choice", f"names tool {choice.name!r}, which is not among the tools ({known})"
                )
    check_generation(request.generation)
    check_cache(request.cache)
    _key(request.session, "session")
    check_provider_options(request.provider_options)
    out: Any = request.output_schema
    if out is not None and not (isinstance(out, OutputSchema) and isinstance(cast(object, out.schema), dict)):
        raise _bad("output_schema", f"expected an llmroute.OutputSchema(name, schema), got {_kind(out)}")
    if not isinstance(cast(object, request.json_mode), bool):
        raise _bad("json_mode", f"expected True or False, got {_kind(request.json_mode)}")
