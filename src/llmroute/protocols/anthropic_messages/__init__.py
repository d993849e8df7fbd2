"""Anthropic Messages (``POST /v1/messages``), streamed over SSE, or not (``stream=False``: the
whole Message is read through the stream handlers, block by block).

Decisions worth knowing:

- **Citations.** Anthropic gives no offsets: it splits text blocks at citation boundaries and attaches
  ``citations`` to the block they support. So a ``Citation`` covers its whole text block:
  ``start=0``, ``end=len(block text)`` (Python ``str`` indices, end exclusive; ``None``/``None`` for an
  empty block). Because ``citations_delta`` usually arrives *before* the text it cites, citations are
  emitted when the block closes (after its last ``text-delta``, just before ``text-end``), when the
  length is known. The raw citation (``encrypted_index`` ...) is kept in ``provider_metadata`` and in
  the ``text-end`` metadata, so the text block round-trips with its citations.
- **pause_turn** maps to ``"tool-calls"``: the turn stopped inside a server-tool loop and, exactly as
  after local tool calls, the caller sends the conversation back (the assistant message included) to
  continue. ``provider_metadata["stop_reason"] == "pause_turn"`` tells the two apart.
- **Round-trip.** Thinking blocks become ``ReasoningPart(text, signature)``; ``redacted_thinking``
  becomes ``ReasoningPart("", encrypted=data)`` marked ``{"anthropic": {"type": "redacted_thinking"}}``.
  Server tools (``server_tool_use`` / ``mcp_tool_use``) and their ``*_tool_result`` blocks become
  provider-executed tool calls/results whose ``provider_metadata["anthropic"]["type"]`` names the
  block; the lowering rebuilds the same blocks (content untouched). A ``web_search_tool_result``'s
  ``result`` is the canonical ``{"sources", "queries"}`` (``llmroute.hosted.SearchResult``); the
  block's own ``content`` (``encrypted_content``, ``page_age``, ``error_code``) is kept in
  ``provider_metadata["anthropic"]["content"]`` and is what the lowering sends back. Provider-executed parts without
  Anthropic metadata (another provider's hosted tools) and reasoning without a signature cannot be
  replayed to Anthropic and are left out.
- The parser reads only the event's data (the JSON event, dispatched on its ``type``): a frame is
  those bytes (``SSEDataFraming``, the default, builds no ``SSEEvent``) or an ``SSEEvent``, so an
  envelope (Bedrock's event-stream ``{"bytes": ...}``) composes with ``Protocol.wrapped`` by handing
  it either; ``reshape_body`` drops/adds top-level body keys for such an envelope.

The package keeps DESIGN §6's six sections in order, one direction per module: ``wire``
(1. quirks, constants and request body Structs; 2. stream event Structs), ``state`` (3. parser
state), ``lower`` (4. ``build_body``), ``parse`` (5. the stream decoders, ``step`` and one handler
per event type, ``whole``, ``on_halt``) and this module (6. the ``Protocol`` value and its default
route; it re-exports the names other modules import).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from ...framing.base import Framing
from ...framing.sse import SSEDataFraming, SSEEvent
from ...route.auth import Auth
from ...route.endpoint import Endpoint
from ...route.model import Route
from ...route.protocol import AnyProtocol, Protocol
from ..anthropic_support import SUPPORT
from .lower import HOSTED_TOOLS, assistant_block, build_body, envelope, reshape_body
from .parse import HOSTED_ITEMS, on_halt, step, whole
from .state import AnthropicState
from .wire import DEFAULT_MAX_TOKENS, NAME, NAMESPACE, AnthropicBody

__all__ = [
    "AnthropicBody",
    "AnthropicProtocol",
    "AnthropicState",
    "DEFAULT_MAX_TOKENS",
    "HOSTED_ITEMS",
    "HOSTED_TOOLS",
    "NAME",
    "NAMESPACE",
    "PROTOCOL",
    "assistant_block",
    "build_body",
    "envelope",
    "on_halt",
    "reshape_body",
    "route",
    "step",
    "whole",
]


# 6. the Protocol value and its default route ------------------------------------------------------

AnthropicProtocol: TypeAlias = Protocol[AnthropicBody | dict[str, Any], bytes | SSEEvent, AnthropicState]
"""Messages' body, frames (SSE data bytes, or an ``SSEEvent``) and parser state."""

PROTOCOL: AnthropicProtocol = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=AnthropicState.for_request,
    step=step,
    on_halt=on_halt,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    framing: Framing[Any] | None = None,
    protocol: AnyProtocol = PROTOCOL,
    **changes: Any,
) -> Route:
    """A Messages route. ``endpoint`` is an ``Endpoint`` or a base URL (``.../v1``, ``/messages`` is
    appended); ``framing`` defaults to SSE, events' data only (the parser never reads the event
    name); ``protocol`` may be a ``PROTOCOL.wrapped(...)`` envelope."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/messages")
    return Route(
        name=name,
        protocol=protocol,
        endpoint=endpoint,
        auth=auth,
        framing=framing or SSEDataFraming(),
        **changes,
    )
