"""OpenAI's ``POST /embeddings`` and the servers that speak it: Azure OpenAI (the same API on
deployments), Mistral, Together,
Fireworks, DeepInfra, Ollama's OpenAI endpoint, Voyage. One body, one answer shape; each server's
differences are declared in ``EmbeddingQuirks`` (the field the vector size goes in, whether it
answers base64, its per-request limits, its input types).

Request: ``{"model", "input": [...], "dimensions"?, "encoding_format": "base64"?}``. Answer:
``{"data": [{"index", "embedding"}], "model", "usage": {"prompt_tokens" | "total_tokens"}}``;
``embedding`` is a list of floats, or (``encoding_format: "base64"``) base64 of little-endian
float32, which is what the openai SDK asks for too: a quarter of the JSON to parse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from ...route.auth import Auth
from ...route.embedding import (
    BuildBody,
    Decoded,
    EmbeddingModel,
    EmbeddingProtocol,
    EmbeddingRoute,
    EmbedOptions,
    Row,
    pack,
)
from ...route.endpoint import Endpoint
from ...route.support import Support
from ...schema.embedding import INPUT_TYPES
from ...schema.errors import InvalidProviderOutputError
from ...schema.usage import Usage
from .._shared import with_options

__all__ = [
    "COMPATIBLE_QUIRKS",
    "MISTRAL_QUIRKS",
    "NAME",
    "OPENAI_QUIRKS",
    "PROTOCOL",
    "EmbeddingQuirks",
    "make_protocol",
    "route",
]

NAME = "openai-embeddings"

# 1. quirks and limits ---------------------------------------------------------------------------

# OpenAI: at most 2,048 inputs and 300,000 tokens (summed over the inputs) in one request.
OPENAI_MAX_INPUTS = 2048
OPENAI_MAX_TOKENS = 300_000
_NO_INPUT_TYPE = "this API has no input type: the same vector serves queries and documents"


class EmbeddingQuirks(msgspec.Struct, frozen=True):
    """How one server's ``/embeddings`` differs from OpenAI's."""

    dimensions_field: str | None = "dimensions"
    """The body field the vector size goes in (Mistral and Voyage: ``output_dimension``);
    ``None``: the server has none, so ``dimensions`` is refused."""
    base64: bool = True
    """The server answers ``encoding_format: "base64"`` (float32 bytes); else floats in JSON."""
    max_inputs: int = OPENAI_MAX_INPUTS
    """The most inputs in one request."""
    max_tokens: int | None = OPENAI_MAX_TOKENS
    """The most tokens summed over one request's inputs, where the server caps them."""
    input_types: Mapping[str, str] | None = None
    """``InputType`` -> the server's ``input_type`` word (Voyage); ``None``: no such field."""
    input_type_note: str = _NO_INPUT_TYPE
    """Why an input type the server has no word for is not sent."""


OPENAI_QUIRKS = EmbeddingQuirks()
# Servers known only by their base URL: floats (not every server answers base64), no token cap.
COMPATIBLE_QUIRKS = EmbeddingQuirks(base64=False, max_tokens=None)
# Mistral: ``output_dimension`` (codestral-embed), base64; at most 256 inputs (its API answers
# "Too many inputs in request" past that).
MISTRAL_QUIRKS = EmbeddingQuirks(dimensions_field="output_dimension", max_inputs=256, max_tokens=None)


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    input: Sequence[str]
    encoding_format: str | None = None


# 2. answer Structs ------------------------------------------------------------------------------


class _Item(msgspec.Struct):
    index: int
    embedding: bytes | list[float]  # bytes: msgspec decodes the base64 string itself


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    total_tokens: int | None = None


class _Answer(msgspec.Struct):
    data: list[_Item]
    model: str | None = None
    usage: _Usage | None = None


_decoder = msgspec.json.Decoder(_Answer)

# 4. build_body ----------------------------------------------------------------------------------


def make_build_body(quirks: EmbeddingQuirks) -> BuildBody:
    def build_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> Any:
        body: Any = _Body(model.id, inputs, "base64" if quirks.base64 else None)
        extra: dict[str, Any] = {}
        if options.dimensions is not None and quirks.dimensions_field is not None:
            extra[quirks.dimensions_field] = options.dimensions
        if options.input_type is not None and quirks.input_types is not None:
            extra["input_type"] = quirks.input_types[options.input_type]
        if extra:
            body = {**msgspec.to_builtins(body), **extra}
        return with_options(body, dict(model.options or {}))

    return build_body


# 5. decode --------------------------------------------------------------------------------------


def decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    answer = _decoder.decode(body)
    items = answer.data
    placed: list[Row | None] = [None] * len(items)
    for item in items:  # placed by ``index``: the answer's order is not the inputs' by contract
        i = item.index
        if not 0 <= i < len(items) or placed[i] is not None:
            raise InvalidProviderOutputError(
                f"{NAME}: index {i} is out of range or repeated in an answer of {len(items)}",
                code="bad_shape",
            )
        placed[i] = item.embedding
    rows = cast(list[Row], placed)  # every index 0..n-1 seen once: no hole is left
    usage = None
    if answer.usage is not None:
        tokens = answer.usage.prompt_tokens
        tokens = tokens if tokens is not None else answer.usage.total_tokens
        usage = Usage(input_tokens=tokens) if tokens is not None else None
    return pack(rows, count, NAME, usage=usage, model=answer.model)


# 6. the protocol value and its route ------------------------------------------------------------


def make_protocol(quirks: EmbeddingQuirks = OPENAI_QUIRKS, name: str = NAME) -> EmbeddingProtocol:
    refused = (
        {} if quirks.dimensions_field else {"dimensions": "this server has no field for the vector size"}
    )
    if quirks.input_types is None:
        unsent = {"input_type": quirks.input_type_note}
    else:
        unsent = {
            f"input_type.{kind}": quirks.input_type_note
            for kind in INPUT_TYPES
            if kind not in quirks.input_types
        }
    return EmbeddingProtocol(
        name=name,
        build_body=make_build_body(quirks),
        decode=decode,
        max_inputs=quirks.max_inputs,
        max_bytes=quirks.max_tokens,  # a token is at least one byte
        support=Support(unsent=unsent, refused=refused),
    )


PROTOCOL = make_protocol()


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    headers: Mapping[str, str] | None = None,
    protocol: EmbeddingProtocol = PROTOCOL,
) -> EmbeddingRoute:
    """``/embeddings`` under ``endpoint`` (a base URL, or an ``Endpoint`` with its own path)."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/embeddings")
    return EmbeddingRoute(name, protocol, endpoint, auth, headers=headers)
