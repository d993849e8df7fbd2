"""``Plan``: what one model call resolves once, before its first attempt.

Sending a request needs its ``Model`` (a router's first choice when it is only shown), the route
and protocol, the generation and provider options layered route -> model -> request, and whether
it streams -- which picks the framing and the parser's entry point. ``Plan.of(request)`` does that
lookup and that merge once per model call; ``prepare()`` (on every attempt), the executor and the
hooks (``CallInfo.generation``) read the plan instead of resolving again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..framing.base import Framing
from ..framing.whole import WHOLE_BODY
from ..schema.events import LLMEvent
from ..schema.options import GenerationOptions, merge_generation
from ..schema.request import LLMRequest
from .model import Model, Route, model_of
from .protocol import AnyProtocol

__all__ = ["Plan", "Step", "layered_provider_options"]

Step = Callable[[Any, Any, list[LLMEvent]], None]
"""A protocol's ``step`` or ``whole`` handler, its types erased (a ``Route`` holds any protocol)."""


class Plan(msgspec.Struct, frozen=True):
    """One model call, resolved (``Plan.of(request)``)."""

    request: LLMRequest
    """The request as the caller built it (its ``model`` may be a router)."""
    model: Model
    """The ``Model`` it is sent to (a router's first choice when the request is only prepared)."""
    route: Route
    """``model.route``."""
    protocol: AnyProtocol
    """``route.protocol``."""
    generation: GenerationOptions
    """The generation options in effect: the route's, then the model's, then the request's."""
    resolved: LLMRequest
    """What ``prepare()`` compiles: the request on ``model``, with the layered generation and
    provider options."""
    streaming: bool
    """The call streams (``stream`` unset or ``True`` once the layers apply)."""
    framing: Framing[Any]
    """The route's framing, or (not streaming) the whole body as one frame."""
    step: Step
    """The parser's entry point: the protocol's ``step`` per frame, or ``whole`` for a body."""

    @classmethod
    def of(cls, request: LLMRequest) -> Plan:
        """Resolve ``request``: ``NoRouteError`` (or ``InvalidRequestError`` for a bare string)
        when its ``model`` is not a model."""
        model = model_of(request)  # the call's one model lookup
        route = model.route
        protocol = route.protocol
        generation = merge_generation(route.defaults, model.defaults, request.generation)
        options = layered_provider_options(model, request)
        streaming = generation.stream is not False
        # prepare() refuses stream=False for a protocol without a ``whole`` handler before any read
        step = protocol.step if streaming or protocol.whole is None else protocol.whole
        return cls(
            request=request,
            model=model,
            route=route,
            protocol=protocol,
            generation=generation,
            resolved=msgspec.structs.replace(
                request, model=model, generation=generation, provider_options=options
            ),
            streaming=streaming,
            framing=route.framing if streaming else WHOLE_BODY,
            step=step,
        )


def layered_provider_options(model: Model, request: LLMRequest) -> dict[str, dict[str, Any]] | None:
    """The model's provider options with the request's over them, per namespace."""
    if not model.provider_options:
        return request.provider_options
    merged: dict[str, dict[str, Any]] = {k: dict(v) for k, v in model.provider_options.items()}
    for ns, opts in (request.provider_options or {}).items():
        merged[ns] = {**merged.get(ns, {}), **opts}
    return merged
