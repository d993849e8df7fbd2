"""What every facade shares: turning keyword defaults into a ``Model``."""

from __future__ import annotations

from typing import Any

from ..route.model import Model, Route
from ..schema.options import GenerationOptions

__all__ = ["make_model"]


def make_model(
    model_id: str,
    route: Route,
    provider: str,
    generation: GenerationOptions | None = None,
    options: dict[str, Any] | None = None,
) -> Model:
    if not model_id:
        from ..schema.errors import InvalidRequestError

        raise InvalidRequestError(f"{provider}: a model id is required")
    return Model(
        id=model_id,
        route=route,
        provider=provider,
        defaults=generation,
        provider_options={provider: options} if options else None,
    )
