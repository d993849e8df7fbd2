"""``Route`` and ``Model`` values."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..framing.base import Framing
from ..schema.errors import NoRouteError
from ..schema.events import LLMEvent
from ..schema.options import GenerationOptions
from ..schema.request import LLMRequest, ModelRef
from ..schema.validate import check_model
from .auth import Auth
from .endpoint import Endpoint
from .protocol import AnyProtocol

if TYPE_CHECKING:
    from ..catalog.info import ModelInfo
    from .transport import TransportKind  # httpx loads with the client, not with the route

__all__ = ["Model", "ModelGroup", "Route", "model_of", "models_of"]


class Route(msgspec.Struct, frozen=True):
    """Protocol x Endpoint x Auth x Framing, moved by a kind of transport (``None`` = the
    client's HTTP; ``route.websocket.WebSocketTransport`` for OpenAI Responses' WebSocket mode),
    which each client binds to its own connections."""

    name: str
    """Named in errors, warnings, logs and telemetry (``openai-chat``, ``azure-responses``, ...)."""
    protocol: AnyProtocol
    """The wire format: body lowering and frame parsing (any protocol; its types erased here)."""
    endpoint: Endpoint
    """Where requests go (base URL, path, query)."""
    auth: Auth
    """How requests are signed: an API key header, a bearer token, SigV4, ..."""
    framing: Framing[Any]
    """How a streamed response body splits into frames (SSE, the AWS event stream)."""
    transport: TransportKind | None = None
    """The kind of transport that moves requests (``None``: the client's HTTP)."""
    headers: Mapping[str, str] | None = None
    """Extra headers every request carries."""
    defaults: GenerationOptions | None = None
    """Generation options for every model on this route; the model's and the request's win."""

    def with_(self, **changes: Any) -> Route:
        return msgspec.structs.replace(self, **changes)

    def __repr__(self) -> str:
        # Credential headers (``x-api-key`` passed as an extra header, cookies) never print.
        from .redact import redact_headers

        headers = redact_headers(self.headers) if self.headers else None
        return (
            f"Route(name={self.name!r}, protocol={self.protocol.name!r}, endpoint={self.endpoint!r}, "
            f"auth={self.auth!r}, framing={getattr(self.framing, 'name', self.framing)!r}, "
            f"transport={self.transport!r}, headers={headers!r})"
        )


class Model(msgspec.Struct, ModelRef, frozen=True):
    """A model id on a route. Hand it to ``llmroute.request(model=...)``."""

    id: str
    """The provider's model id (``gpt-4o-mini``, ``claude-haiku-4-5``), sent as is."""
    route: Route
    """How calls reach the provider."""
    provider: str
    """The provider's name (``openai``, ``anthropic``, ...): the catalog, prices and telemetry key on it."""
    defaults: GenerationOptions | None = None
    """Generation options for every call to this model; over the route's, under the request's."""
    provider_options: dict[str, dict[str, Any]] | None = None
    """Provider-specific body keys by namespace for every call; the request's own win key by key."""

    def with_(self, **changes: Any) -> Model:
        return msgspec.structs.replace(self, **changes)

    @property
    def info(self) -> ModelInfo | None:
        """What ``llmroute.catalog`` knows about this model (context window, max output tokens,
        capabilities, prices); ``None`` when the catalog does not know it."""
        from ..catalog import lookup  # the catalog loads on first use, not with the route

        return lookup(self.provider, self.id)

    def __repr__(self) -> str:
        return f"Model({self.provider}:{self.id} via {self.route.name})"


class ModelGroup(ModelRef, ABC):
    """A value used like a ``Model`` that picks one per call (``llmroute.Router``). The executor
    hands it each model call (``run_step``); it runs them on its models through
    ``route.executor.run_model_step``. Lives here so the executor needs nothing from above.
    ``id`` and ``provider`` (``ModelRef``): the group's name, and ``router``."""

    @abstractmethod
    def models(self) -> tuple[Model, ...]:
        """Every model the group may send to, in its preferred order."""

    @abstractmethod
    def run_step(
        self, ctx: Any, request: LLMRequest, index: int, finish: bool, loop: Any = None
    ) -> AsyncGenerator[list[LLMEvent], None]:
        """One model call (``route.executor.run_step``'s contract) on a model of the group's choosing."""


def models_of(request: LLMRequest) -> tuple[Model, ...]:
    """The models a request may be sent to: its ``Model``, or every model of its group."""
    model = request.model
    if isinstance(model, ModelGroup):
        return model.models()
    return (model_of(request),)


def model_of(request: LLMRequest) -> Model:
    """``request.model``, checked: a ``Model`` (``LLMRequest.model`` is typed by its base,
    ``ModelRef``, and holds whatever it was given). For a ``ModelGroup`` (a router): its first
    model, which is what ``prepare`` shows."""
    model = request.model
    check_model(model)
    if isinstance(model, ModelGroup):
        return model.models()[0]
    if not isinstance(model, Model):
        raise NoRouteError(
            f"request.model must be an llmroute Model (from a provider facade), got {type(model).__name__}"
        )
    return model
