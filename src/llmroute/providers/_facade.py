"""What every facade shares: turning keyword defaults into a ``Model``."""

from __future__ import annotations

import os
from typing import Any

from ..route.model import Model, Route
from ..schema.options import GenerationOptions

__all__ = ["env_base_url", "env_default", "make_model"]


def env_default(explicit: str | None, *names: str) -> str | None:
    """An explicit argument wins; else the first of the vendor SDK's variables that is set (and
    not blank)."""
    if explicit is not None:
        return explicit
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def env_base_url(explicit: str | None, name: str, default: str, *, suffix: str = "") -> str:
    """``base_url=``, else the SDK's variable (its SDK adds ``suffix``, e.g. ``/v1``, itself, so it
    is added when missing), else ``default``."""
    if explicit is not None:
        return explicit.rstrip("/")
    value = env_default(None, name)
    if value is None:
        return default
    value = value.rstrip("/")
    return value if not suffix or value.endswith(suffix) else value + suffix


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
