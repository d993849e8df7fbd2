"""The Gemini API's ``models/{model}:batchEmbedContents`` (one request per input, up to 100 a batch).

Request: ``{"requests": [{"model": "models/{id}", "content": {"parts": [{"text"}]}, "taskType"?,
"outputDimensionality"?}]}``. Answer: ``{"embeddings": [{"values": [...]}]}``, in request order.
The answer carries no token counts, so the usage (and the cost) of a Gemini API call is unknown;
Vertex's ``predict`` (``embeddings.vertex``) reports them. ``input_type`` is Gemini's ``taskType``;
an ``EmbeddingModel``'s options (``title``, a ``taskType`` of Gemini's own such as
``CODE_RETRIEVAL_QUERY``) go into every request of the batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...route.auth import Auth
from ...route.embedding import Decoded, EmbeddingModel, EmbeddingProtocol, EmbeddingRoute, EmbedOptions, pack
from ...route.endpoint import Endpoint
from .._shared import with_options

__all__ = ["MAX_INPUTS", "NAME", "PROTOCOL", "TASK_TYPES", "route"]

NAME = "gemini-embeddings"

# 1. constants and body Structs ------------------------------------------------------------------

MAX_INPUTS = 100  # "at most 100 requests can be in one batch"
TASK_TYPES: Mapping[str, str] = {
    "query": "RETRIEVAL_QUERY",
    "document": "RETRIEVAL_DOCUMENT",
    "classification": "CLASSIFICATION",
    "clustering": "CLUSTERING",
    "similarity": "SEMANTIC_SIMILARITY",
}


class _Part(msgspec.Struct):
    text: str


class _Content(msgspec.Struct):
    parts: tuple[_Part]


class _Request(msgspec.Struct, omit_defaults=True, rename="camel"):
    model: str
    content: _Content
    task_type: str | None = None
    output_dimensionality: int | None = None


class _Body(msgspec.Struct):
    requests: list[Any]


# 2. answer Structs ------------------------------------------------------------------------------


class _Values(msgspec.Struct):
    values: list[float]


class _Answer(msgspec.Struct):
    embeddings: list[_Values]


_decoder = msgspec.json.Decoder(_Answer)

# 4. build_body ----------------------------------------------------------------------------------


def build_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> _Body:
    name = "models/" + model.id
    task = TASK_TYPES[options.input_type] if options.input_type is not None else None
    extra = dict(model.options or {})
    requests: list[Any] = []
    for text in inputs:
        request: Any = _Request(name, _Content((_Part(text),)), task, options.dimensions)
        requests.append(with_options(request, extra) if extra else request)
    return _Body(requests)


# 5. decode --------------------------------------------------------------------------------------


def decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    answer = _decoder.decode(body)
    return pack([e.values for e in answer.embeddings], count, NAME)


# 6. the protocol value and its route ------------------------------------------------------------

PROTOCOL = EmbeddingProtocol(name=NAME, build_body=build_body, decode=decode, max_inputs=MAX_INPUTS)


def route(
    base_url: str, auth: Auth, *, name: str = NAME, headers: Mapping[str, str] | None = None
) -> EmbeddingRoute:
    """``{base_url}/models/{model}:batchEmbedContents`` (``base_url`` ends in the API version)."""
    endpoint = Endpoint(base_url, "/models/{model}:batchEmbedContents")
    return EmbeddingRoute(name, PROTOCOL, endpoint, auth, headers=headers)
