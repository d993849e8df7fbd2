"""Gemini Code Assist (``cloudcode-pa`` ``v1internal``): the Gemini protocol inside an envelope.

The body is Gemini's, wrapped as ``{model, project, request}``; each frame is
``{"response": <a Gemini chunk>, "traceId": ...}`` and only ``response`` reaches Gemini's chunk
handler. An error object (or any frame without ``response``) is read as a plain chunk, where that
handler raises it. State, ``on_halt`` and everything else are ``gemini.PROTOCOL``'s own.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..framing.sse import SSEEvent, SSEFraming
from ..route.auth import Auth
from ..route.decoding import DECODE_ERRORS
from ..route.endpoint import Endpoint
from ..route.model import Route
from ..route.protocol import Protocol
from ..schema.events import LLMEvent
from ..schema.request import LLMRequest, ModelRef
from . import gemini
from ._shared import decode_frame

__all__ = ["CODE_ASSIST_BASE_URL", "NAME", "code_assist_protocol", "route"]

NAME = "gemini-code-assist"

CODE_ASSIST_BASE_URL = "https://cloudcode-pa.googleapis.com"


class _CodeAssistBody(msgspec.Struct):
    model: str
    project: str
    request: Any


class _Frame(gemini.Chunk, rename="camel"):
    """``{"response": {...}, "traceId": ...}``. It extends ``Chunk`` so one decode also reads a
    frame that is not wrapped (an ``error`` object, a frame already unwrapped) as a plain chunk."""

    response: gemini.Chunk | None = None
    trace_id: str | None = None


class _Whole(msgspec.Struct):
    """The non-streamed body: ``response`` kept raw for Gemini's own ``whole`` (empty: absent)."""

    response: msgspec.Raw = msgspec.Raw()


_frame_decoder = msgspec.json.Decoder(_Frame)
_decode_frame = _frame_decoder.decode
_whole_decoder = msgspec.json.Decoder(_Whole)


def _unwrap_frame(frame: SSEEvent) -> gemini.Chunk | None:
    """The Gemini chunk inside one frame, decoded once (``None``: a blank frame, skipped)."""
    data = frame.data
    try:
        envelope = _decode_frame(data)
    except DECODE_ERRORS:  # blank frames are skipped; the slow path reports the raw frame
        if not data.strip():
            return None
        envelope = decode_frame(_frame_decoder, data, f"{NAME} frame")
    return envelope.response if envelope.response is not None else envelope


def _unwrap_whole(body: bytes) -> bytes:
    """``v1internal:generateContent``: the same envelope around one whole response."""
    response = decode_frame(_whole_decoder, body, f"{NAME} response").response
    return bytes(response) if response else body


def _on_chunk(state: gemini.GeminiState, chunk: gemini.Chunk | None, out: list[LLMEvent]) -> None:
    if chunk is not None:
        gemini.on_chunk(state, chunk, out)


# Gemini whose frames arrive decoded: the step the envelope composes with (``wrapped`` unwraps each
# frame into the chunk this step reads; Gemini decodes each frame just once, here in the unwrap).
# Code Assist is a Google Cloud backend: like Vertex AI it has none of the Gemini API's File Search
# stores, so ``file_search`` is refused by name instead of sent as a ``fileSearch`` tool.
_DECODED = gemini.VERTEX_PROTOCOL.with_step(_on_chunk)


def code_assist_protocol(project: str) -> Protocol[_CodeAssistBody, SSEEvent, gemini.GeminiState]:
    """``gemini.PROTOCOL`` for Code Assist: the body wrapped for ``project``, frames unwrapped."""

    def wrap(
        body: gemini.GeminiBody | dict[str, Any], _request: LLMRequest, model: ModelRef
    ) -> _CodeAssistBody:
        return _CodeAssistBody(model.id, project, body)

    return _DECODED.wrapped(NAME, wrap, _unwrap_frame, _unwrap_whole)


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
