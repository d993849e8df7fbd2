"""OpenAI Chat Completions (and every OpenAI-compatible server), streamed over SSE.

Non-streamed (``stream=False``: ``stream: false``, no ``stream_options``), the completion's
``choices[0].message`` is read as one delta holding everything, by the same handlers.

The package keeps DESIGN §6's six sections in order, one direction per module: ``wire``
(1. quirks, constants and request body Structs; 2. stream event Structs), ``state`` (3. parser
state), ``lower`` (4. ``build_body``), ``parse`` (5. the stream decoders, ``step`` and one handler
per event type, ``whole``, ``on_halt``) and this module (6. the ``Protocol`` value and its default
route; it re-exports the names other modules import).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from ...framing.sse import SSEDataFraming, SSEEvent
from ...route.auth import Auth
from ...route.endpoint import Endpoint
from ...route.model import Route
from ...route.protocol import Protocol
from ...schema.request import LLMRequest
from ..openai_chat_support import chat_support
from .lower import HOSTED_TOOLS, TOOL_KINDS, build_body, make_build_body
from .parse import on_halt, step, whole
from .state import ChatState
from .wire import (
    DEFAULT_QUIRKS,
    NAME,
    REASONING_MODEL,
    REASONING_QUIRKS,
    ChatBody,
    ChatQuirks,
    HostedToolLowering,
)

__all__ = [
    "ChatBody",
    "ChatProtocol",
    "ChatQuirks",
    "ChatState",
    "HOSTED_TOOLS",
    "HostedToolLowering",
    "NAME",
    "PROTOCOL",
    "REASONING_MODEL",
    "REASONING_QUIRKS",
    "TOOL_KINDS",
    "build_body",
    "make_protocol",
    "on_halt",
    "route",
    "step",
    "whole",
]


# 6. the Protocol value and its default route ------------------------------------------------------

ChatProtocol: TypeAlias = Protocol[ChatBody | dict[str, Any], bytes | SSEEvent, ChatState]
"""Chat's body, frames (SSE data bytes, or an ``SSEEvent``) and parser state."""


def _provider_name(request: LLMRequest, default: str) -> str:
    """Who to name in stream errors: the model's provider (``openrouter``, ``groq``, ...)."""
    provider = getattr(request.model, "provider", None)
    return provider if isinstance(provider, str) and provider else default


def make_protocol(quirks: ChatQuirks = DEFAULT_QUIRKS, name: str = NAME) -> ChatProtocol:
    return Protocol(
        name=name,
        build_body=make_build_body(quirks),
        new_state=lambda request: ChatState(quirks, _provider_name(request, name)),
        step=step,
        on_halt=on_halt,
        native_output_schema=True,
        whole=whole,
        hosted_kinds=frozenset(quirks.hosted_tools or HOSTED_TOOLS),
        tool_kinds=TOOL_KINDS,
        support=chat_support(quirks),
    )


PROTOCOL = make_protocol()


def route(
    endpoint: Endpoint | str,
    auth: Auth,
    *,
    name: str = NAME,
    quirks: ChatQuirks | None = None,
    **changes: Any,
) -> Route:
    """A Chat Completions route. ``endpoint`` is an ``Endpoint`` or a base URL (``.../v1``,
    ``/chat/completions`` is appended)."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/chat/completions")
    return Route(
        name=name,
        protocol=make_protocol(quirks) if quirks is not None else PROTOCOL,
        endpoint=endpoint,
        auth=auth,
        framing=SSEDataFraming(),
        **changes,
    )
