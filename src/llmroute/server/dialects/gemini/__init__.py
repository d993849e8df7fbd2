"""Gemini ``generateContent`` / ``streamGenerateContent`` / ``countTokens`` on the gateway's side of
the wire (``/v1beta/models/{model}:…``, and ``/v1/…``): ``wire`` (the request bodies), ``decode`` (a
body -> an ``LLMRequest``) and ``render`` (a run's events -> the streamed chunks and the whole
response, Gemini's error shape); ``DIALECT`` is its row in ``server.dialects.DIALECTS``.

The key comes as ``x-goog-api-key`` (google-genai, gemini-cli), ``Authorization: Bearer`` or
``?key=``. A stream is server-sent events (``?alt=sse``, as both SDKs ask); the JSON-array stream
Gemini sends without it is refused by name."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ....schema.errors import InvalidRequestError
from ....schema.options import GenerationOptions
from ....schema.request import LLMRequest
from ....schema.response import LLMResponse
from ...dialect import Arrival, Counter, Dialect, Inbound, Unresolved
from ...failure import Failure, Refused
from ..conversation import decode_body
from .decode import lower
from .render import Stream, error_body, response
from .wire import CountTokensRequest, GenerateRequest

__all__ = ["DIALECT"]

_encode = msgspec.json.Encoder().encode
_decoder = msgspec.json.Decoder(GenerateRequest)
_count_decoder = msgspec.json.Decoder(CountTokensRequest)
_METHODS = {"generateContent": False, "streamGenerateContent": True}


def _model(path: Mapping[str, str] | None) -> str:
    return (path or {}).get("model", "").removeprefix("models/")


def _decode(body: bytes, path: Mapping[str, str] | None = None) -> Inbound[GenerateRequest]:
    method = (path or {}).get("method", "")
    if method not in _METHODS:
        raise Refused(
            Failure(
                404,
                f"no method {method!r} (generateContent, streamGenerateContent, countTokens)",
                "invalid_request_error",
                "not_found",
            )
        )
    payload = decode_body(_decoder, body)
    if not payload.contents:
        raise InvalidRequestError("contents: at least one content is required", param="contents")
    model = _model(path)
    return Inbound(model, _METHODS[method], LLMRequest(model=Unresolved(model)), payload)


def _decode_count(body: bytes, path: Mapping[str, str] | None = None) -> Inbound[GenerateRequest]:
    given = decode_body(_count_decoder, body)
    payload = given.generate_content_request or GenerateRequest(contents=given.contents or [])
    if not payload.contents:
        raise InvalidRequestError("contents: at least one content is required", param="contents")
    model = _model(path)
    return Inbound(model, False, LLMRequest(model=Unresolved(model)), payload)


def _prepare(inbound: Inbound[GenerateRequest], arrival: Arrival) -> Inbound[GenerateRequest]:
    if inbound.stream and arrival.query.get("alt") != "sse":
        raise InvalidRequestError(
            "streamGenerateContent: add ?alt=sse (the gateway streams server-sent events, not a JSON array)",
            param="alt",
        )
    lowered = lower(inbound.reply, Unresolved(inbound.model), arrival.upstream, gateway_search=arrival.search)
    request = lowered.request
    generation = msgspec.structs.replace(request.generation or GenerationOptions(), stream=inbound.stream)
    request = msgspec.structs.replace(request, generation=generation)
    return Inbound(inbound.model, inbound.stream, request, inbound.reply, lowered.warnings, lowered.searches)


def _whole(inbound: Inbound[GenerateRequest], result: LLMResponse, hidden: frozenset[str]) -> bytes:
    return _encode(response(result, inbound.model, hidden))


def _stream(inbound: Inbound[GenerateRequest], hidden: frozenset[str]) -> Stream:
    return Stream(inbound.model, hidden)


def _error(failure: Failure) -> bytes:
    return _encode(error_body(failure.status, failure.message))


def _count_reply(tokens: int, _exact: bool) -> bytes:
    return _encode({"totalTokens": tokens})


_PATHS = ("/v1beta/models/{model}:{method}", "/v1/models/{model}:{method}")

DIALECT: Dialect[GenerateRequest] = Dialect(
    name="gemini",
    paths=_PATHS,
    decode=_decode,
    whole=_whole,
    stream=_stream,
    error=_error,
    key_headers=("x-goog-api-key", "x-api-key"),
    prepare=_prepare,
    count=Counter(
        ("/v1beta/models/{model}:countTokens", "/v1/models/{model}:countTokens"), _decode_count, _count_reply
    ),
    key_query="key",
)
"""Gemini's generateContent API, as the gateway serves it."""
