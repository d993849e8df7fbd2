"""``Route`` and ``Model`` values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..framing.base import Framing
from ..schema.errors import NoRouteError
from ..schema.options import GenerationOptions
from ..schema.request import LLMRequest
from ..schema.validate import check_model
from .auth import Auth
from .endpoint import Endpoint
from .protocol import Protocol

if TYPE_CHECKING:
    from ..catalog.info import ModelInfo

__all__ = ["Model", "Route", "model_of"]


class Route(msgspec.Struct, frozen=True):
    """Protocol x Endpoint x Auth x Framing, moved by a transport (``None`` = the client's HTTP)."""

    name: str
    protocol: Protocol
    endpoint: Endpoint
    auth: Auth
    framing: Framing[Any]
    transport: Any = None
    headers: Mapping[str, str] | None = None
    defaults: GenerationOptions | None = None

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


class Model(msgspec.Struct, frozen=True):
    """A model id on a route. Hand it to ``llmroute.request(model=...)``."""

    id: str
    route: Route
    provider: str
    defaults: GenerationOptions | None = None
    provider_options: dict[str, dict[str, Any]] | None = None

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


def model_of(request: LLMRequest) -> Model:
    """``request.model``, checked: a ``Model`` (``LLMRequest.model`` is typed loosely)."""
    model = request.model
    check_model(model)
    if not isinstance(model, Model):
        raise NoRouteError(
            f"request.model must be an llmroute Model (from a provider facade), got {type(model).__name__}"
        )
    return model
