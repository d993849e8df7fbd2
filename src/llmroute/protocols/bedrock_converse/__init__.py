"""AWS Bedrock Converse (``/model/{id}/converse-stream``), streamed as AWS event-stream messages.

Non-streamed (``stream=False``), ``/model/{id}/converse`` answers with JSON whose content blocks
are fed to the stream handlers as the start/delta/stop events a stream of them would carry.

The package keeps DESIGN §6's six sections in order, one direction per module: ``wire``
(1. quirks, constants and request body Structs; 2. stream event Structs), ``state`` (3. parser
state), ``lower`` (4. ``build_body``), ``parse`` (5. the stream decoders, ``step`` and one handler
per event type, ``whole``, ``on_halt``) and this module (6. the ``Protocol`` value and its default
route; it re-exports the names other modules import).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from ...framing.eventstream import EventStreamFraming, EventStreamMessage
from ...route.auth import Auth
from ...route.endpoint import Endpoint
from ...route.model import Route
from ...route.protocol import Protocol
from .lower import HOSTED_TOOLS, SUPPORT, build_body
from .parse import on_halt, step, whole
from .state import ConverseState
from .wire import ACCEPT, MAX_CACHE_POINTS, NAME, ConverseBody

__all__ = [
    "ACCEPT",
    "ConverseBody",
    "ConverseProtocol",
    "ConverseState",
    "HOSTED_TOOLS",
    "MAX_CACHE_POINTS",
    "NAME",
    "PROTOCOL",
    "build_body",
    "on_halt",
    "route",
    "runtime_url",
    "step",
    "whole",
]


# 6. the Protocol value and its default route ------------------------------------------------------

ConverseProtocol: TypeAlias = Protocol[ConverseBody | dict[str, Any], EventStreamMessage, ConverseState]
"""Converse's body, frames (AWS event-stream messages) and parser state."""

PROTOCOL: ConverseProtocol = Protocol(
    name=NAME,
    build_body=build_body,
    new_state=ConverseState.for_request,
    step=step,
    on_halt=on_halt,
    accept=ACCEPT,
    native_output_schema=True,
    whole=whole,
    hosted_kinds=frozenset(HOSTED_TOOLS),
    support=SUPPORT,
)


def runtime_url(region: str, base_url: str | None = None) -> str:
    """``base_url``, else the regional ``bedrock-runtime`` endpoint (Converse and InvokeModel)."""
    return base_url or f"https://bedrock-runtime.{region}.amazonaws.com"


def route(endpoint: Endpoint | str, auth: Auth, *, name: str = NAME, **changes: Any) -> Route:
    """A Converse route. ``endpoint`` is an ``Endpoint`` or a base URL (``runtime_url(region)`` for
    AWS's regional one; ``/model/{model}/converse-stream`` is appended)."""
    if isinstance(endpoint, str):
        endpoint = Endpoint(endpoint, "/model/{model}/converse-stream", whole_path="/model/{model}/converse")
    return Route(
        name=name,
        protocol=PROTOCOL,
        endpoint=endpoint,
        auth=auth,
        framing=EventStreamFraming(),
        **changes,
    )
