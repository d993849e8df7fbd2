"""Bedrock's embedding models through ``InvokeModel`` (``/model/{id}/invoke``): Amazon Titan and
Cohere Embed. SigV4 or a Bedrock API key, as the Converse routes.

- **Titan** (``amazon.titan-embed-text-v1``, ``-v2:0``): one text a request,
  ``{"inputText", "dimensions"?}`` -> ``{"embedding": [...], "inputTextTokenCount"}``. v2 takes
  ``dimensions`` (256, 512 or 1024) and ``normalize`` (an option); v1 has a fixed size, so
  ``dimensions`` is refused. No input type.
- **Cohere** (``cohere.embed-english-v3``, ``-multilingual-v3``, ``-v4:0``): Cohere's body
  (``embeddings.cohere``), up to 96 texts, ``{"texts", "input_type", "output_dimension"?}`` ->
  ``{"embeddings": [[...]]}`` (or by type). The body has no token counts; Bedrock sends them in
  the ``x-amzn-bedrock-input-token-count`` header. ``output_dimension`` only on v4.
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
from . import cohere

__all__ = ["COHERE", "COHERE_NAME", "TITAN", "TITAN_NAME", "protocol_for", "route"]

TITAN_NAME = "bedrock-titan-embeddings"
COHERE_NAME = "bedrock-cohere-embeddings"
TOKEN_HEADER = "x-amzn-bedrock-input-token-count"

# 1. body Structs --------------------------------------------------------------------------------


class _TitanBody(msgspec.Struct, omit_defaults=True):
    inputText: str
    dimensions: int | None = None


class _CohereBody(msgspec.Struct, omit_defaults=True):
    texts: Sequence[str]
    input_type: str
    output_dimension: int | None = None


# 2. answer Structs ------------------------------------------------------------------------------


class _TitanAnswer(msgspec.Struct):
    embedding: list[float]
    inputTextTokenCount: int | None = None


_titan_decoder = msgspec.json.Decoder(_TitanAnswer)

# 4. build_body ----------------------------------------------------------------------------------


def titan_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> Any:
    (text,) = inputs  # one text a request (max_inputs=1)
    return with_options(_TitanBody(text, options.dimensions), dict(model.options or {}))


def cohere_body(inputs: Sequence[str], options: EmbedOptions, model: EmbeddingModel) -> Any:
    body = _CohereBody(inputs, cohere.input_type(options), options.dimensions)
    return with_options(body, dict(model.options or {}))


# 5. decode --------------------------------------------------------------------------------------


def titan_decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    answer = _titan_decoder.decode(body)
    tokens = answer.inputTextTokenCount
    usage = Usage(input_tokens=tokens) if tokens is not None else _header_usage(headers)
    return pack([answer.embedding], count, TITAN_NAME, usage=usage)


def cohere_decode(body: bytes, headers: Mapping[str, str], count: int) -> Decoded:
    rows, tokens = cohere.vectors(body)
    usage = Usage(input_tokens=tokens) if tokens is not None else _header_usage(headers)
    return pack(rows, count, COHERE_NAME, usage=usage)


def _header_usage(headers: Mapping[str, str]) -> Usage | None:
    value = headers.get(TOKEN_HEADER)
    return Usage(input_tokens=int(value)) if value is not None and value.strip().isdigit() else None


# 6. the protocol values and their route ---------------------------------------------------------

_NO_INPUT_TYPE = "Titan has no input type: the same vector serves queries and documents"
_FIXED_SIZE = "this model's vectors have one fixed size"
TITAN = EmbeddingProtocol(
    name=TITAN_NAME,
    build_body=titan_body,
    decode=titan_decode,
    max_inputs=1,
    support=Support(unsent={"input_type": _NO_INPUT_TYPE}),
)
_TITAN_V1 = TITAN.with_(
    support=Support(unsent={"input_type": _NO_INPUT_TYPE}, refused={"dimensions": _FIXED_SIZE})
)
COHERE = EmbeddingProtocol(
    name=COHERE_NAME,
    build_body=cohere_body,
    decode=cohere_decode,
    max_inputs=cohere.MAX_INPUTS,
    support=cohere.SUPPORT.with_(refused={"dimensions": _FIXED_SIZE}),
)
_COHERE_V4 = COHERE.with_(support=cohere.SUPPORT)


def protocol_for(model_id: str) -> EmbeddingProtocol:
    """The protocol of a Bedrock embedding model id (an inference profile's ``us.`` prefix or an
    ARN's path aside): Cohere for ``cohere.embed-*``, Titan otherwise."""
    bare = model_id.rsplit("/", 1)[-1]
    bare = bare.split(".", 1)[1] if bare.split(".", 1)[0] in ("us", "eu", "apac", "global") else bare
    if bare.startswith("cohere.embed-"):
        return _COHERE_V4 if bare.startswith("cohere.embed-v4") else COHERE
    return (
        _TITAN_V1 if bare.startswith(("amazon.titan-embed-text-v1", "amazon.titan-embed-g1-text")) else TITAN
    )


def route(
    base_url: str,
    auth: Auth,
    protocol: EmbeddingProtocol,
    *,
    headers: Mapping[str, str] | None = None,
) -> EmbeddingRoute:
    """``{base_url}/model/{model}/invoke`` (``base_url``: the region's ``bedrock-runtime``)."""
    return EmbeddingRoute(
        protocol.name, protocol, Endpoint(base_url, "/model/{model}/invoke"), auth, headers=headers
    )
