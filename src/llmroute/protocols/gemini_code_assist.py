"""Gemini Code Assist (``cloudcode-pa`` ``v1internal``): the Gemini protocol inside an envelope.

The body is Gemini's, wrapped as ``{model, project, request}``; each frame is
``{"response": <a Gemini chunk>, "traceId": ...}`` and only ``response`` reaches Gemini's ``step``.
An error object (or any frame without ``response``) is passed on unwrapped, where Gemini's chunk
handler reads it. State, ``on_halt`` and everything else are ``gemini.PROTOCOL``'s own.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..route.auth import Auth
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
from ..route.protocol import Protocol
from ..schema.request import LLMRequest
from . import gemini
from ._shared import decode_frame

__all__ = ["CODE_ASSIST_BASE_URL", "NAME", "code_assist_protocol", "route"]

NAME = "gemini-code-assist"

CODE_ASSIST_BASE_URL = "https://cloudcode-pa.googleapis.com"


class _CodeAssistBody(msgspec.Struct):
    model: str
    project: str
    request: Any


class _Envelope(msgspec.Struct):
    """The envelope only: ``response`` stays raw bytes for Gemini's own decoder (empty: absent)."""

    response: msgspec.Raw = msgspec.Raw()


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_decode_envelope = _envelope_decoder.decode


def _unwrap_frame(frame: SSEEvent) -> SSEEvent:
    data = frame.data
    try:
        envelope = _decode_envelope(data)
    except DECODE_ERRORS:  # blank frames go on for Gemini to skip; the slow path reports the rest
        if not data.strip():
            return frame
        envelope = decode_frame(_envelope_decoder, data, "code assist frame")
    response = envelope.response
    return SSEEvent(bytes(response), frame.event, frame.id, frame.retry) if response else frame


def _unwrap_whole(body: bytes) -> bytes:
    """``v1internal:generateContent``: the same envelope around one whole response."""
    response = decode_frame(_envelope_decoder, body, "code assist response").response
    return bytes(response) if response else body


def code_assist_protocol(project: str) -> Protocol:
    """``gemini.PROTOCOL`` for Code Assist: the body wrapped for ``project``, frames unwrapped."""

    def wrap(body: Any, _request: LLMRequest, model: Model) -> _CodeAssistBody:
        return _CodeAssistBody(model.id, project, body)

    return gemini.PROTOCOL.wrapped(NAME, wrap, _unwrap_frame, _unwrap_whole)


def route(endpoint: Endpoint | str, auth: Auth, *, project: str, name: str = NAME, **changes: Any) -> Route:
    """``{base_url}/v1internal:streamGenerateContent?alt=sse`` (``:generateContent`` when not
    streaming) for the Code Assist ``project``; ``endpoint`` is an ``Endpoint`` or that base URL."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(
            endpoint,
            "/v1internal:streamGenerateContent",
            whole_path="/v1internal:generateContent",
            stream_query={"alt": "sse"},
        )
    return Route(
        name=name,
        protocol=code_assist_protocol(project),
        endpoint=endpoint,
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
