"""Cohere's ``POST /v2/embed``, and the Cohere body Bedrock's ``cohere.embed-*`` models take.

Request: ``{"model", "texts": [...], "input_type", "embedding_types": ["float"],
"output_dimension"?}`` (at most 96 texts). Answer: ``{"embeddings": {"float": [[...]]},
"meta": {"billed_units": {"input_tokens"}}}``, in text order. ``input_type`` is required by the v3
and later models, so a call that says none is sent as ``search_document`` (the corpus side of a
search, the bulk of what gets embedded); ``similarity`` has no Cohere word and is refused.
``output_dimension`` exists on ``embed-v4.0`` only (the API refuses it elsewhere).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...route.auth import Auth
from ...route.embedding import Decoded, EmbeddingModel, EmbeddingProtocol, EmbeddingRoute, EmbedOptions, pack
from ...route.endpoint import Endpoint
from ...route.support import Support
from ...schema.usage import Usage
from .._shared import with_options

__all__ = ["DEFAULT_BASE_URL", "INPUT_TYPES", "MAX_INPUTS", "NAME", "PROTOCOL", "SUPPORT", "route"]

NAME = "cohere-embeddings"
DEFAULT_BASE_URL = "https://api.cohere.com"

# 1. constants and body Structs ------------------------------------------------------------------

MAX_INPUTS = 96
INPUT_TYPES: Mapping[str, str] = {
    "query": "search_query",
    "document": "search_document",
    "classification": "classification",
    "clustering": "clustering",
}
DEFAULT_INPUT_TYPE = "search_document"
_FLOAT = ("float",)
SUPPORT = Support(
    refused={
        "input_type.similarity": "Cohere's input types are search_query, search_document, "
        "classification and clustering"
    }
)


class _Body(msgspec.Struct, omit_defaults=True):
    model: str
    texts: Sequence[str]
    input_type: str
    embedding_types: tuple[str, ...]
    output_dimension: int | None = None


# 2. answer Structs ------------------------------------------------------------------------------


class _ByType(msgspec.Struct):
    floats: list[list[float]] = msgspec.field(name="float")


class _Billed(msgspec.Struct):
    input_tokens: int | None = None


class _Meta(msgspec.Struct):
    billed_units: _Billed | None = None


class _Answer(msgspec.Struct):
    # v2 (and Bedrock with ``embedding_types``): by type; Bedrock without: one list per text
    embeddings: _ByType | list[list[float]]
    meta: _Meta | None = None


_decoder = msgspec.json.Decoder(_Answer)

# 4. build_body ----------------------------------------------------------------------------------


def input_type(options: EmbedOptions) -> str:
    return INPUT_TYPES[options.input_type] if options.input_type is not None else DEFAULT_INPUT_TYPE


def build_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> Any:
    body = _Body(model.id, inputs, input_type(options), _FLOAT, options.dimensions)
    return with_options(body, dict(model.options or {}))


# 5. decode --------------------------------------------------------------------------------------


def vectors(body: bytes) -> tuple[list[list[float]], int | None]:
    """The answer's vectors (either shape) and its billed input tokens, when it says."""
    answer = _decoder.decode(body)
    rows = answer.embeddings.floats if isinstance(answer.embeddings, _ByType) else answer.embeddings
    billed = answer.meta.billed_units if answer.meta is not None else None
    return rows, billed.input_tokens if billed is not None else None


def decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    rows, tokens = vectors(body)
    return pack(rows, count, NAME, usage=Usage(input_tokens=tokens) if tokens is not None else None)


# 6. the protocol value and its route ------------------------------------------------------------

PROTOCOL = EmbeddingProtocol(
    name=NAME, build_body=build_body, decode=decode, max_inputs=MAX_INPUTS, support=SUPPORT
)


def route(
    base_url: str, auth: Auth, *, name: str = NAME, headers: Mapping[str, str] | None = None
) -> EmbeddingRoute:
    """``{base_url}/v2/embed``."""
    return EmbeddingRoute(name, PROTOCOL, Endpoint(base_url, "/v2/embed"), auth, headers=headers)
