"""OpenAI's ``POST /v1/embeddings``, as the gateway serves it (``EmbeddingsDialect``).

Request: ``{"model", "input": str | [str], "dimensions"?, "encoding_format"?: "float" | "base64"}``,
plus ``input_type`` (``query``, ``document``, ``classification``, ``clustering``,
``similarity``: an llmroute extension the upstream route lowers, warns about or refuses). Any number
of inputs: the upstream call splits them to the provider's maximum. Refused by name (400): token
arrays as ``input`` (the upstream APIs take text), ``user`` (not forwarded), an unknown
``encoding_format``, any other field.

Answer: ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage": {"prompt_tokens", "total_tokens", "cost"?}}``; ``embedding`` is a list of floats, or with
``base64`` the little-endian float32 bytes base64-encoded (what the openai SDK asks for by
default). The usage's counts are ``null`` where the upstream reports none (the Gemini API).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Literal, cast

import msgspec

from ...schema.cost import Cost
from ...schema.embedding import EmbeddingResponse, InputType
from ...schema.errors import InvalidRequestError
from ..dialect import EmbeddingsDialect, EmbedInbound
from ..failure import openai_error_json
from .conversation import decode_body

__all__ = ["DIALECT", "EmbeddingsRequest", "decode", "whole"]

Encoding = Literal["float", "base64"]


class EmbeddingsRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The fields of ``POST /v1/embeddings``; any other is refused by name."""

    model: str
    """The gateway's public name of an embedding model."""
    input: str | list[Any]
    """One text, or a list of texts (token arrays are refused)."""
    dimensions: int | None = None
    """Floats per vector (``None``: the model's own)."""
    encoding_format: Encoding | None = None
    """``float`` (the default) or ``base64``."""
    input_type: InputType | None = None
    """An llmroute extension: what the vectors are for."""
    user: str | None = None
    """OpenAI's end-user id: refused (not forwarded)."""


_decoder = msgspec.json.Decoder(EmbeddingsRequest)
_encode = msgspec.json.Encoder().encode


def decode(body: bytes, path: Mapping[str, str] | None = None) -> EmbedInbound[Encoding]:
    """An embeddings body as the gateway's ``EmbedInbound`` (the reply: the encoding asked for)."""
    request = decode_body(_decoder, body)
    if request.user is not None:
        raise InvalidRequestError("user: not forwarded by this gateway; leave it out", param="user")
    if request.dimensions is not None and request.dimensions < 1:
        raise InvalidRequestError("dimensions: must be at least 1", param="dimensions")
    items: list[object] = [request.input] if isinstance(request.input, str) else list(request.input)
    if not items:
        raise InvalidRequestError("input: nothing to embed (an empty list)", param="input")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            what = "token arrays are" if isinstance(item, int | list) else f"a {type(item).__name__} is"
            raise InvalidRequestError(f"input[{i}]: {what} not accepted; send text", param=f"input[{i}]")
        if not item:
            raise InvalidRequestError(f"input[{i}]: an empty string has no embedding", param=f"input[{i}]")
    inputs = tuple(cast(list[str], items))
    return EmbedInbound(
        request.model, inputs, request.dimensions, request.input_type, request.encoding_format or "float"
    )


def whole(inbound: EmbedInbound[Encoding], response: EmbeddingResponse, cost: Cost | None) -> bytes:
    """The answer, under the client's model name."""
    vectors = response.vectors
    if inbound.reply == "base64":
        raw = vectors.tobytes()
        step = vectors.dimensions * 4
        rows: list[Any] = [base64.b64encode(raw[i : i + step]).decode() for i in range(0, len(raw), step)]
    else:
        rows = vectors.tolist()
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
    tokens = response.usage.input_tokens if response.usage is not None else None
    usage: dict[str, Any] = {"prompt_tokens": tokens, "total_tokens": tokens}
    if cost is not None:
        usage["cost"] = float(cost.total)
    return _encode({"object": "list", "data": data, "model": inbound.model, "usage": usage})


DIALECT: EmbeddingsDialect[Encoding] = EmbeddingsDialect(
    name="openai-embeddings",
    paths=("/v1/embeddings",),
    decode=decode,
    whole=whole,
    error=openai_error_json,
)
"""OpenAI's embeddings endpoint, as the gateway serves it."""
