"""Structured output: ``await client.generate_object(request, schema=MyStruct)``.

Where the protocol lowers ``request.output_schema`` natively (``Protocol.native_output_schema``:
OpenAI Chat ``response_format``, Responses ``text.format``, Gemini ``responseSchema``) the schema is
sent that way (strict projection by default); elsewhere (Anthropic, Bedrock, ...) a synthetic tool
with the schema is forced with ``tool_choice`` and its input is the object. Either way the JSON is
decoded into the requested type (msgspec, or pydantic for a ``BaseModel`` / ``TypeAdapter``); if
it does not validate, ``InvalidProviderOutputError`` carries the raw text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, Protocol, TypedDict, TypeVar

import msgspec

from ..route.model import models_of
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.request import LLMRequest, OutputSchema
from ..schema.response import LLMResponse
from ..schema.tools import ToolChoice, ToolDefinition
from .codec import ValidationFailed, convert, schema_of
from .schema_projection import strict_schema

if TYPE_CHECKING:
    from ..route.policy import RetryPolicy, Timeouts

__all__ = [
    "ObjectOptions",
    "ObjectResponse",
    "OutputType",
    "SupportsGenerate",
    "TypeAdapterLike",
    "generate_object",
    "output_request",
    "parse_text",
    "strict_capable",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class TypeAdapterLike(Protocol[T_co]):
    """What ``generate_object`` needs of a ``pydantic.TypeAdapter`` (pydantic stays optional)."""

    def validate_python(self, object: Any, /) -> T_co: ...

    def json_schema(self) -> dict[str, Any]: ...


class SupportsGenerate(Protocol):
    """What ``generate_object`` calls on a client (``llmroute.Client`` is one). A protocol, not the
    Client itself, so this module sits below the Client instead of importing it back."""

    async def generate(
        self, request: LLMRequest, *, timeouts: Timeouts | None = None, retry: RetryPolicy | None = None
    ) -> LLMResponse: ...


class ObjectOptions(TypedDict, total=False):
    """The keyword arguments of ``generate_object``, which ``Client.generate_object`` and
    ``SyncClient.generate_object`` pass on to it unchanged (defaults and meaning are its own)."""

    name: str | None
    description: str | None
    strict: bool
    mode: Literal["auto", "native", "tool"]
    timeouts: Timeouts | None
    retry: RetryPolicy | None


OutputType = type[T] | TypeAdapterLike[T]
"""A msgspec type (Struct, dataclass, TypedDict, ...), a pydantic ``BaseModel`` or a ``TypeAdapter``."""

_RAW_LIMIT = 4000
_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*)\n\s*```\s*$", re.S)


class ObjectResponse(NamedTuple, Generic[T]):
    """``value`` (an instance of the requested type) and the full ``response``; unpacks as a pair."""

    value: T
    response: LLMResponse


def _name_of(schema: Any, name: str | None) -> str:
    raw = name or getattr(schema, "__name__", None) or "output"
    return _NAME.sub("_", raw)[:64]


def strict_capable(protocol_name: str) -> bool:
    """OpenAI's strict JSON-schema mode (Chat ``response_format``, Responses ``text.format``, and
    OpenAI-compatible servers). Elsewhere (Gemini ``responseSchema``) the plain schema is sent, so
    optional fields stay optional."""
    return protocol_name.startswith("openai")


def output_request(
    request: LLMRequest,
    schema: Any,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = True,
    mode: Literal["auto", "native", "tool"] = "auto",
) -> tuple[LLMRequest, str | None]:
    """The request asking for ``schema``, and the forced tool's name (``None`` in native mode).
    Returns the request and the tool name; whether the strict projection is used is
    ``strict and strict_capable(protocol)`` (``generate_object`` recomputes it for decoding)."""
    _check_arguments(request, name, mode)
    out_name = _name_of(schema, name)
    try:
        plain = schema_of(schema)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            "schema: expected a type to decode into (a msgspec Struct, dataclass, TypedDict, pydantic "
            f"BaseModel or TypeAdapter), got {type(schema).__name__} {schema!r:.60} ({exc})".replace(
                "\n", " "
            ),
            param="schema",
        ) from None
    protocols = [m.route.protocol for m in models_of(request)]  # a router: every target's
    native = all(p.native_output_schema for p in protocols) if mode == "auto" else mode == "native"
    if native:
        strict = strict and all(strict_capable(p.name) for p in protocols)
        body = strict_schema(plain) if strict else plain
        output = OutputSchema(out_name, body, description, strict)
        return msgspec.structs.replace(request, output_schema=output), None
    definition = ToolDefinition(
        out_name, description or f"Respond by calling this tool with the {out_name} object.", plain
    )
    tools = tuple(t for t in request.tools if not (isinstance(t, ToolDefinition) and t.name == out_name))
    return (
        msgspec.structs.replace(request, tools=(*tools, definition), tool_choice=ToolChoice.named(out_name)),
        out_name,
    )


def _check_arguments(request: object, name: object, mode: object) -> None:
    if not isinstance(request, LLMRequest):
        raise InvalidRequestError(
            f"request: expected an LLMRequest from llmroute.request(...), got {type(request).__name__}",
            param="request",
        )
    if name is not None and not isinstance(name, str):
        raise InvalidRequestError(f"name: expected a str, got {type(name).__name__}", param="name")
    if mode not in ("auto", "native", "tool"):
        raise InvalidRequestError(f"mode: expected 'auto', 'native' or 'tool', got {mode!r}", param="mode")


def _cap(text: str) -> str:
    return text if len(text) <= _RAW_LIMIT else text[:_RAW_LIMIT] + "..."


def decode_object(value: Any, schema: OutputType[T], raw: str, *, strict: bool) -> T:
    """Validate a decoded JSON value into ``schema``, or raise ``InvalidProviderOutputError``."""
    try:
        return convert(value, schema, strict_nulls=strict)
    except ValidationFailed as exc:
        name = getattr(schema, "__name__", None) or type(schema).__name__
        raise InvalidProviderOutputError(
            f"structured output does not match {name}: {exc.message}", raw=_cap(raw)
        ) from None


def parse_text(text: str, schema: OutputType[T], *, strict: bool = True) -> T:
    """JSON text (a fenced code block is tolerated) -> ``schema``."""
    body = text
    fenced = _FENCE.match(text)
    if fenced:
        body = fenced.group(1)
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidProviderOutputError(
            f"structured output is not valid JSON: {exc}", raw=_cap(text)
        ) from None
    return decode_object(value, schema, text, strict=strict)


def object_from_response(
    response: LLMResponse, schema: OutputType[T], tool_name: str | None, *, strict: bool
) -> T:
    if tool_name is None:
        return parse_text(response.text, schema, strict=strict)
    for call in response.tool_calls:
        if call.name == tool_name and not call.provider_executed:
            value = call.input
            if isinstance(value, str):
                raise InvalidProviderOutputError("structured output is not valid JSON", raw=_cap(value))
            return decode_object(value, schema, msgspec.json.encode(value).decode(), strict=False)
    raise InvalidProviderOutputError(
        f"the model did not call the {tool_name} output tool", raw=_cap(response.text) or None
    )


async def generate_object(
    client: SupportsGenerate,
    request: LLMRequest,
    schema: OutputType[T],
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = True,
    mode: Literal["auto", "native", "tool"] = "auto",
    timeouts: Timeouts | None = None,
    retry: RetryPolicy | None = None,
) -> ObjectResponse[T]:
    """One model call asking for ``schema``; returns ``ObjectResponse(value, response)``."""
    prepared, tool_name = output_request(
        request, schema, name=name, description=description, strict=strict, mode=mode
    )
    response = await client.generate(prepared, timeouts=timeouts, retry=retry)
    strict = (
        strict
        and tool_name is None
        and all(strict_capable(m.route.protocol.name) for m in models_of(request))
    )
    try:
        value = object_from_response(response, schema, tool_name, strict=strict)
    except InvalidProviderOutputError as exc:
        exc.partial = response
        raise
    return ObjectResponse(value, response)
