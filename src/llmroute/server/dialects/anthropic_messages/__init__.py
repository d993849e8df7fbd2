"""Anthropic Messages (``POST /v1/messages``, ``/v1/messages/count_tokens``) on the gateway's side of
the wire: ``wire`` (the request bodies), ``decode`` (a body -> an ``LLMRequest``, every field
lowered, carried to an Anthropic upstream, reported or refused) and ``render`` (a run's events ->
the streamed events and the whole ``message``, Anthropic's error shape); ``DIALECT`` is its row in
``server.dialects.DIALECTS``.

Decoding waits for the model (``Dialect.prepare``): what is Anthropic's own goes to an
Anthropic-speaking upstream as it is and is reported or refused elsewhere, and the client's
``anthropic-beta`` / ``anthropic-version`` headers are forwarded where every target is Anthropic's
own API (Bedrock takes the betas in the body)."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ....schema.errors import InvalidRequestError
from ....schema.notices import RequestWarning
from ....schema.options import HttpOverlay
from ....schema.request import LLMRequest
from ....schema.response import LLMResponse
from ...dialect import Arrival, Counter, Dialect, Inbound, Unresolved
from ...failure import Failure
from ..conversation import decode_body
from .decode import NS, lower
from .render import Stream, error_body, message
from .wire import CountTokensRequest, MessagesRequest

__all__ = ["DIALECT"]

_encode = msgspec.json.Encoder().encode
_decoder = msgspec.json.Decoder(MessagesRequest)
_count_decoder = msgspec.json.Decoder(CountTokensRequest)
_FORWARDED = ("anthropic-beta", "anthropic-version")

Payload = MessagesRequest | CountTokensRequest


def _inbound(payload: Payload, stream: bool) -> Inbound[Payload]:
    if not payload.messages:
        raise InvalidRequestError("messages: at least one message is required", param="messages")
    return Inbound(payload.model, stream, LLMRequest(model=Unresolved(payload.model)), payload)


def _decode(body: bytes, _path: Mapping[str, str] | None = None) -> Inbound[Payload]:
    payload = decode_body(_decoder, body)
    return _inbound(payload, payload.stream)


def _decode_count(body: bytes, _path: Mapping[str, str] | None = None) -> Inbound[Payload]:
    return _inbound(decode_body(_count_decoder, body), False)


def _prepare(inbound: Inbound[Payload], arrival: Arrival) -> Inbound[Payload]:
    upstream = arrival.upstream
    lowered = lower(inbound.reply, Unresolved(inbound.model), upstream, gateway_search=arrival.search)
    request, warnings = lowered.request, list(lowered.warnings)
    given = {h: arrival.headers[h] for h in _FORWARDED if h in arrival.headers}
    if given:
        if upstream.every(frozenset({"anthropic-messages"})):
            request = msgspec.structs.replace(request, http=HttpOverlay(headers=given))
        elif upstream.every(frozenset({"bedrock-anthropic-messages"})) and "anthropic-beta" in given:
            betas = [b.strip() for b in given["anthropic-beta"].split(",") if b.strip()]
            options = dict(request.provider_options or {})
            options[NS] = {**options.get(NS, {}), "anthropic_beta": betas}
            request = msgspec.structs.replace(request, provider_options=options)
        elif "anthropic-beta" in given:
            where = upstream.others(frozenset({"anthropic-messages"})) or "gateway"
            warnings.append(
                RequestWarning("anthropic-beta", where, "beta headers reach Anthropic's own API only")
            )
    return Inbound(inbound.model, inbound.stream, request, inbound.reply, tuple(warnings), lowered.searches)


def _whole(inbound: Inbound[Payload], response: LLMResponse, hidden: frozenset[str]) -> bytes:
    return _encode(message(response, inbound.model, hidden))


def _stream(inbound: Inbound[Payload], hidden: frozenset[str]) -> Stream:
    return Stream(inbound.model, hidden)


def _error(failure: Failure) -> bytes:
    return _encode(error_body(failure.status, failure.message))


def _count_reply(tokens: int, _exact: bool) -> bytes:
    return _encode({"input_tokens": tokens})


DIALECT: Dialect[Payload] = Dialect(
    name="anthropic-messages",
    paths=("/v1/messages",),
    decode=_decode,
    whole=_whole,
    stream=_stream,
    error=_error,
    prepare=_prepare,
    count=Counter(("/v1/messages/count_tokens",), _decode_count, _count_reply),
)
"""Anthropic Messages, as the gateway serves it."""
