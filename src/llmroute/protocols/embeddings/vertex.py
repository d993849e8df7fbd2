"""Vertex AI's text embeddings: ``publishers/google/models/{model}:predict``.

Request: ``{"instances": [{"content", "task_type"?}], "parameters": {"outputDimensionality"?}}``.
Answer: ``{"predictions": [{"embeddings": {"values": [...], "statistics": {"token_count",
"truncated"}}}]}``, in instance order; the token counts are the usage. At most 250 instances and
20,000 tokens a request (``gemini-embedding-001``: one instance a request, ``SINGLE_INPUT``). An
``EmbeddingModel``'s options go into ``parameters`` (``autoTruncate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...route.auth import Auth
from ...route.embedding import Decoded, EmbeddingModel, EmbeddingProtocol, EmbeddingRoute, EmbedOptions, pack
from ...route.endpoint import Endpoint
from ...schema.usage import Usage
from .._shared import with_options
from .gemini import TASK_TYPES

__all__ = ["NAME", "PROTOCOL", "SINGLE_INPUT", "protocol_for", "route"]

NAME = "vertex-embeddings"

# 1. constants and body Structs ------------------------------------------------------------------

MAX_INPUTS = 250
MAX_TOKENS = 20_000
SINGLE_INPUT = frozenset({"gemini-embedding-001"})  # "supports one instance per request"


class _Instance(msgspec.Struct, omit_defaults=True):
    content: str
    task_type: str | None = None


class _Parameters(msgspec.Struct, omit_defaults=True, rename="camel"):
    output_dimensionality: int | None = None


class _Body(msgspec.Struct, omit_defaults=True):
    instances: list[_Instance]
    parameters: Any = None


# 2. answer Structs ------------------------------------------------------------------------------


class _Statistics(msgspec.Struct):
    token_count: int | None = None
    truncated: bool | None = None


class _Embedding(msgspec.Struct):
    values: list[float]
    statistics: _Statistics | None = None


class _Prediction(msgspec.Struct):
    embeddings: _Embedding


class _Answer(msgspec.Struct):
    predictions: list[_Prediction]


_decoder = msgspec.json.Decoder(_Answer)

# 4. build_body ----------------------------------------------------------------------------------


def build_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> _Body:
    task = TASK_TYPES[options.input_type] if options.input_type is not None else None
    parameters: Any = _Parameters(options.dimensions)
    if model.options:
        parameters = with_options(parameters, dict(model.options))
    elif options.dimensions is None:
        parameters = None
    return _Body([_Instance(text, task) for text in inputs], parameters)


# 5. decode --------------------------------------------------------------------------------------


def decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    predictions = _decoder.decode(body).predictions
    tokens = [p.embeddings.statistics.token_count if p.embeddings.statistics else None for p in predictions]
    usage = Usage(input_tokens=sum(t for t in tokens if t is not None)) if None not in tokens else None
    return pack([p.embeddings.values for p in predictions], count, NAME, usage=usage)


# 6. the protocol value and its route ------------------------------------------------------------

PROTOCOL = EmbeddingProtocol(
    name=NAME, build_body=build_body, decode=decode, max_inputs=MAX_INPUTS, max_bytes=MAX_TOKENS
)
_SINGLE = PROTOCOL.with_(max_inputs=1)


def protocol_for(model_id: str) -> EmbeddingProtocol:
    """The protocol with ``model_id``'s per-request limit."""
    return _SINGLE if model_id in SINGLE_INPUT else PROTOCOL


def route(
    base_url: str,
    auth: Auth,
    *,
    name: str = NAME,
    headers: Mapping[str, str] | None = None,
    protocol: EmbeddingProtocol = PROTOCOL,
) -> EmbeddingRoute:
    """``{base_url}/models/{model}:predict`` (``base_url`` ends in ``publishers/google``)."""
    return EmbeddingRoute(
        name, protocol, Endpoint(base_url, "/models/{model}:predict"), auth, headers=headers
    )
