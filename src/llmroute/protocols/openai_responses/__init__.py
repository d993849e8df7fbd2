"""OpenAI Responses API (``POST /responses``), streamed over SSE or as WebSocket messages.

Lowering: ``request.system`` becomes ``instructions``; system-role messages stay ``system`` input
items. Assistant history is lowered back into the items the API produced: text as ``output_text``
messages (with their ``phase``), reasoning as ``reasoning`` items (id, summary and
``encrypted_content``, so ``store: false`` reasoning round-trips), function calls, and hosted tool
calls as their own items (``web_search_call``, ``code_interpreter_call``, ...). Provider options
(namespace = the model's provider, ``"openai"``) set ``reasoning`` / ``reasoning_effort`` /
``reasoning_summary``, ``text`` / ``verbosity``, ``include``, ``store``, ``service_tier``,
``prompt_cache_key``, ``max_output_tokens`` and any other top-level body key. The Responses API has
no ``top_k``, penalties, ``seed`` or ``stop``: those generation options are not sent.

Stream: every frame is one JSON event with a ``type``. Text blocks are ``<item id>:<content
index>``, reasoning blocks ``<item id>:<summary index>``; ``url_citation`` annotations become
``citation`` events with validated ``str`` spans into their text block, each emitted once. Items that
call a tool (function, custom, client built-in and hosted calls, their outputs, MCP approval
requests) are read and lowered back by ``openai_responses_items``. Unknown event types are skipped
(also when their fields have shapes of their own); items that carry no call are kept raw in the
step metadata (``other_items``).

Non-streamed (``stream=False``, HTTP only: the WebSocket mode always streams), the Response
object is replayed through the stream handlers: each output item as added + done (reasoning
summaries and ``reasoning_text`` as their blocks' text), then the terminal status.

The package keeps DESIGN §6's six sections in order, one direction per module: ``wire``
(1. quirks, constants and request body Structs; 2. stream event Structs), ``state`` (3. parser
state), ``lower`` (4. ``build_body``), ``parse`` (5. the stream decoders, ``step`` and one handler
per event type, ``whole``, ``on_halt``) and this module (6. the ``Protocol`` value and its default
route; it re-exports the names other modules import).
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeAlias

import msgspec

from ...framing.sse import SSEEvent, SSEFraming
from ...route.auth import Auth
from ...route.endpoint import Endpoint
from ...route.model import Route
from ...route.protocol import Protocol
from .. import openai_responses_items as calls
from .lower import HOSTED_TOOLS, build_body
from .parse import HOSTED_ITEMS, on_halt, raw_decoder, step, whole
from .state import ResponsesState
from .wire import NAME, Annotation, OutputItem, ResponsesBody, ResponsesQuirks

__all__ = [
    "Annotation",
    "HOSTED_ITEMS",
    "HOSTED_TOOLS",
    "NAME",
    "OutputItem",
    "PROTOCOL",
    "ResponsesBody",
    "ResponsesProtocol",
    "ResponsesQuirks",
    "ResponsesState",
    "build_body",
    "make_protocol",
    "on_halt",
    "route",
    "step",
    "websocket_message",
    "whole",
]


# 6. the Protocol value and its default route ------------------------------------------------------

ResponsesProtocol: TypeAlias = Protocol[ResponsesBody | dict[str, Any], SSEEvent, ResponsesState]
"""Responses' body, frames (SSE events: the parser reads their names) and parser state."""


def make_protocol(quirks: ResponsesQuirks | None = None, name: str = NAME) -> ResponsesProtocol:
    declared = quirks or ResponsesQuirks()
    return Protocol(
        name=name,
        build_body=build_body if quirks is None else partial(build_body, quirks=declared),
        new_state=lambda _request: ResponsesState(declared),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
        whole=whole,
        tool_kinds=calls.TOOL_KINDS,
        hosted_kinds=frozenset(HOSTED_TOOLS).difference(declared.hosted_remove).union(declared.hosted_kinds),
        support=calls.SUPPORT,
    )


PROTOCOL = make_protocol()


_TRANSPORT_ONLY = ("stream", "background")


def websocket_message(body: bytes) -> bytes:
    """The HTTP body as the WebSocket mode's ``response.create`` message (no ``stream``)."""
    data: dict[str, Any] = raw_decoder.decode(body)
    for key in _TRANSPORT_ONLY:
        data.pop(key, None)
    return msgspec.json.encode({"type": "response.create", **data})


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    quirks: ResponsesQuirks | None = None,
    **changes: Any,
) -> Route:
    """A Responses route; a str ``endpoint`` is a base URL (``.../v1``, ``/responses`` is appended)."""
    return Route(
        name=name,
        protocol=PROTOCOL if quirks is None else make_protocol(quirks),
        endpoint=Endpoint(endpoint, "/responses") if isinstance(endpoint, str) else endpoint,
        auth=auth,
        framing=SSEFraming(),
        **changes,
    )
