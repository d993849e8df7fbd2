"""Gemini ``generateContent`` (Google AI Studio, Vertex AI, Code Assist), streamed over SSE.

``:streamGenerateContent?alt=sse`` sends one complete ``GenerateContentResponse`` per event; its
``parts`` hold only the new delta. Non-streamed (``stream=False``), ``:generateContent`` answers
with one such response holding every part: the same chunk handler reads it as a one-chunk stream.
Grounding (``groundingMetadata``) becomes the canonical hosted ``web_search`` call/result plus
``citation`` events once the stream ends: see ``gemini_grounding``. Tool schemas are rewritten for
Gemini's ``Schema`` by ``gemini_schema``.

Code Assist (``cloudcode-pa``) is this protocol inside an envelope: see ``gemini_code_assist``.

The package keeps DESIGN §6's six sections in order, one direction per module: ``wire``
(1. quirks, constants and request body Structs; 2. stream event Structs), ``state`` (3. parser
state), ``lower`` (4. ``build_body``), ``parse`` (5. the stream decoders, ``step`` and one handler
per event type, ``whole``, ``on_halt``) and this module (6. the ``Protocol`` value and its default
route; it re-exports the names other modules import).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import msgspec

from ...framing.sse import SSEDataFraming, SSEEvent
from ...route.auth import Auth
from ...route.endpoint import Endpoint
from ...route.model import Route
from ...route.protocol import AnyProtocol, Protocol
from .lower import HOSTED_TOOLS, SUPPORT, build_body
from .parse import on_chunk, on_halt, step, whole
from .state import GeminiState
from .wire import NAME, Chunk, GeminiBody

__all__ = [
    "Chunk",
    "GeminiBody",
    "GeminiProtocol",
    "GeminiState",
    "HOSTED_TOOLS",
    "NAME",
    "PROTOCOL",
    "build_body",
    "on_chunk",
    "on_halt",
    "route",
    "step",
    "whole",
]


# 6. the Protocol value and its default route ------------------------------------------------------

GeminiProtocol: TypeAlias = Protocol[GeminiBody | dict[str, Any], bytes | SSEEvent, GeminiState]
"""Gemini's body, frames (SSE data bytes, or an ``SSEEvent``) and parser state."""

PROTOCOL: GeminiProtocol = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=lambda _request: GeminiState(),
    step=step,
    on_halt=on_halt,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)

# Vertex AI's Gemini: the same protocol without the Gemini API's File Search stores
VERTEX_PROTOCOL: GeminiProtocol = msgspec.structs.replace(
    PROTOCOL, hosted_kinds=PROTOCOL.hosted_kinds - {"file_search"}
)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_STREAM_QUERY = {"alt": "sse"}


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    protocol: AnyProtocol = PROTOCOL,
    **changes: Any,
) -> Route:
    """Google AI Studio / Vertex: ``{base_url}/models/{model}:streamGenerateContent?alt=sse``
    (``:generateContent`` when not streaming). ``endpoint`` is an ``Endpoint`` or that base URL."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(
            endpoint,
            "/models/{model}:streamGenerateContent",
            whole_path="/models/{model}:generateContent",
            stream_query=_STREAM_QUERY,
        )
    return Route(
        name=name,
        protocol=protocol,
        endpoint=endpoint,
        auth=auth,
        framing=SSEDataFraming(),
        **changes,
    )
