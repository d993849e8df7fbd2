"""``Catalog``: the merged view of the data packages plus the user's own models and aliases."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..schema.cost import Cost
from ..schema.errors import InvalidRequestError
from ..schema.usage import Usage
from .ids import limit_candidates, price_ref, sources_for
from .info import ModelInfo, Prices
from .pricing import price_usage, provider_cost
from .sources import ModelsDevModel, PriceSource, load_models_dev, models_dev_prices, price_source

__all__ = ["Catalog"]

_UNSET: Any = object()
_T = TypeVar("_T")


def _read_file(param: str, path: str | Path, read: Callable[[str | Path], _T]) -> _T:
    try:
        return read(path)
    except OSError as exc:
        raise InvalidRequestError(
            f"{param}: cannot read {str(path)!r}: {exc.strerror or exc}", param=param
        ) from None
    except (ValueError, TypeError, KeyError, msgspec.DecodeError) as exc:  # pydantic's errors are ValueErrors
        kind = "models.dev api.json" if param == "models_dev" else "genai-prices data.json"
        raise InvalidRequestError(
            f"{param}: not a valid {kind} file: {str(path)!r} ({type(exc).__name__})", param=param
        ) from None


class Catalog:
    """Model limits, capabilities and prices. ``llmroute.catalog``'s functions use one shared instance;
    build your own to keep overrides apart (``Catalog(models_dev=path, prices=path)`` loads newer
    data files)."""

    def __init__(self, *, models_dev: str | Path | None = None, prices: str | Path | None = None) -> None:
        self._models_dev_path = models_dev
        self._prices_path = prices
        # files named here are read now, so a bad one fails here (the packages' copies load on first use)
        self._md: dict[str, dict[str, ModelsDevModel]] | None = (
            None if models_dev is None else _read_file("models_dev", models_dev, load_models_dev)
        )
        self._prices: PriceSource | None = (
            _UNSET if prices is None else _read_file("prices", prices, PriceSource.from_file)
        )
        self._models: dict[tuple[str, str], ModelInfo] = {}
        self._aliases: dict[tuple[str, str], tuple[str, str]] = {}
        self._cache: dict[tuple[str, str], ModelInfo | None] = {}
        # Resolved prices per (provider, model, service tier, UTC minute): genai-prices resolves start
        # dates and time-of-day windows (DeepSeek's off-peak hours) on every call, ~30 us each; a price
        # window opens and closes on a minute, so within one the answer cannot change.
        self._price_cache: dict[tuple[str, str, str | None, datetime], Prices | str] = {}
        self._lock = threading.Lock()

    # -- data ---------------------------------------------------------------------------------

    def _models_dev(self) -> dict[str, dict[str, ModelsDevModel]]:
        if self._md is None:
            with self._lock:
                if self._md is None:
                    self._md = load_models_dev(self._models_dev_path)
        return self._md

    def _price_source(self) -> PriceSource | None:
        if self._prices is _UNSET:
            with self._lock:
                if self._prices is _UNSET:
                    self._prices = (
                        PriceSource.from_file(self._prices_path) if self._prices_path else price_source()
                    )
        return self._prices

    def load(self, *, models_dev: str | Path | None = None, prices: str | Path | None = None) -> None:
        """Use newer data files instead of the installed packages' copies: a models.dev ``api.json``
        (https://models.dev/api.json, gzipped or not) and/or a genai-prices ``data.json``
        (https://github.com/pydantic/genai-prices, ``prices/data.json``). Read now: a missing or
        malformed file is an ``InvalidRequestError`` naming it, and the data in use stays."""
        md = None if models_dev is None else _read_file("models_dev", models_dev, load_models_dev)
        source = None if prices is None else _read_file("prices", prices, PriceSource.from_file)
        with self._lock:
            if models_dev is not None:
                self._models_dev_path, self._md = models_dev, md
            if prices is not None:
                self._prices_path, self._prices = prices, source
            self._cache.clear()
            self._price_cache.clear()

    # -- user models --------------------------------------------------------------------------

    def register(self, info: ModelInfo) -> None:
        """Add or replace a model (a private deployment, a fine-tune): ``lookup(info.provider,
        info.id)`` returns ``info`` and costs use ``info.prices``."""
        if not isinstance(info, ModelInfo):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"register: expected a ModelInfo, got {type(info).__name__}", param="info"
            )
        with self._lock:
            self._models[(info.provider, info.id)] = info
            self._cache.clear()
            self._price_cache.clear()

    def alias(self, provider: str, model_id: str, to: str, *, to_provider: str | None = None) -> None:
        """Make ``model_id`` mean the catalog's ``to`` (an Azure deployment name for its base model:
        ``alias("azure", "prod-chat", "gpt-4o")``; a Bedrock application inference profile ARN)."""
        for name, value in (("provider", provider), ("model_id", model_id), ("to", to)):
            if not isinstance(value, str) or not value:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidRequestError(f"alias: {name} must be a non-empty string", param=name)
        with self._lock:
            self._aliases[(provider, model_id)] = (to_provider or provider, to)
            self._cache.clear()
            self._price_cache.clear()

    # -- lookup -------------------------------------------------------------------------------

    def lookup(self, provider: str, model_id: str) -> ModelInfo | None:
        """What the catalog knows about ``model_id`` on ``provider``; ``None`` when it does not know
        the model (never a near match)."""
        key = (provider, model_id)
        try:
            return self._cache[key]
        except KeyError:
            pass
        info = self._find(provider, model_id)
        self._cache[key] = info
        return info

    def _find(self, provider: str, model_id: str) -> ModelInfo | None:
        if not isinstance(provider, str) or not isinstance(model_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError("lookup: provider and model_id must be strings", param="model_id")
        if (provider, model_id) in self._models:
            return self._models[(provider, model_id)]
        target = self._aliases.get((provider, model_id))
        if target is not None:
            base = self.lookup(*target)
            if base is None:
                return None
            return msgspec.structs.replace(
                base,
                provider=provider,
                id=model_id,
                sources=(*base.sources, f"alias:{target[0]}/{target[1]}"),
            )
        md_model, md_where = self._find_models_dev(provider, model_id)
        price_model = self._find_prices(provider, model_id)
        if md_model is None and price_model is None:
            return None
        return _merge(provider, model_id, md_model, md_where, price_model, self._price_source())

    def _find_models_dev(self, provider: str, model_id: str) -> tuple[ModelsDevModel | None, str]:
        md = self._models_dev()
        for md_provider, candidate in limit_candidates(provider, model_id):
            model = md.get(md_provider, {}).get(candidate)
            if model is not None:
                return model, f"{md_provider}/{candidate}"
        return None, ""

    def _find_prices(self, provider: str, model_id: str) -> Any | None:
        source = self._price_source()
        row = sources_for(provider).prices
        if source is None or row is None:
            return None
        return source.find(row, price_ref(provider, model_id))

    def models(self, search: str | None = None, *, provider: str | None = None) -> list[ModelInfo]:
        """Every model the catalog lists for llmroute's providers (or ``provider``), optionally only
        those whose id or name contains ``search`` (case-insensitive); sorted by provider and id."""
        from .ids import SOURCES

        needle = (search or "").lower()
        providers = [provider] if provider else sorted(SOURCES)
        out: dict[tuple[str, str], ModelInfo] = {}
        md = self._models_dev()
        for name in providers:
            for row in sources_for(name).models_dev:
                for mid, model in md.get(row, {}).items():
                    if needle in mid.lower() or needle in (model.name or "").lower():
                        info = self.lookup(name, mid)
                        if info is not None:
                            out.setdefault((name, mid), info)
        out.update(
            (key, info)
            for key, info in self._models.items()
            if (provider is None or provider == key[0]) and needle in key[1].lower()
        )
        return [out[k] for k in sorted(out)]

    # -- cost ---------------------------------------------------------------------------------

    def price(
        self, provider: str, model_id: str, usage: Usage | None = None, *, at: datetime | None = None
    ) -> Prices | str:
        """The prices that apply to a call (its service tier, the date ``at``), or why none do."""
        when = at or datetime.now(tz=UTC)
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)  # naive is UTC
        when = when.replace(second=0, microsecond=0)
        key = (provider, model_id, usage.service_tier if usage is not None else None, when)
        try:
            return self._price_cache[key]
        except KeyError:
            pass
        if len(self._price_cache) > 4096:  # one entry per model a minute: drop the old minutes
            self._price_cache.clear()
        result = self._price(provider, model_id, usage, when)
        self._price_cache[key] = result
        return result

    def _price(self, provider: str, model_id: str, usage: Usage | None, at: datetime) -> Prices | str:
        registered = self._models.get((provider, model_id))
        if registered is None and (provider, model_id) in self._aliases:
            provider, model_id = self._aliases[(provider, model_id)]
            registered = self._models.get((provider, model_id))
        if registered is not None:
            return registered.prices or "the registered model has no prices"
        price_model = self._find_prices(provider, model_id)
        source = self._price_source()
        if price_model is not None and source is not None:
            tier = usage.service_tier if usage is not None else None
            context = {"service_tier": tier} if tier else None
            prices = source.prices(price_model, at, context)
            if prices is not None:
                return prices
        info = self.lookup(provider, model_id)
        if info is None:
            return f"unknown model {model_id!r} on {provider}"
        return info.prices or f"no published prices for {model_id!r} on {provider} in the catalog"

    def cost(self, provider: str, model_id: str, usage: Usage, *, at: datetime | None = None) -> Cost | None:
        """The cost of one call's ``usage``: the provider's own figure when it reported one, else the
        catalog's computation; ``None`` when neither is known (``cost_reason`` says why)."""
        result = self._cost(provider, model_id, usage, at)
        return result if isinstance(result, Cost) else None

    def cost_reason(
        self, provider: str, model_id: str, usage: Usage, *, at: datetime | None = None
    ) -> str | None:
        """Why ``cost`` is ``None`` (unknown model, a known model without that price); ``None`` when
        the cost is known."""
        result = self._cost(provider, model_id, usage, at)
        return result if isinstance(result, str) else None

    def catalog_cost(
        self, provider: str, model_id: str, usage: Usage, *, at: datetime | None = None
    ) -> Cost | None:
        """The catalog's own computation, ignoring a provider-reported cost."""
        prices = self.price(provider, model_id, usage, at=at)
        if isinstance(prices, str):
            return None
        result = price_usage(prices, usage)
        return result if isinstance(result, Cost) else None

    def _cost(self, provider: str, model_id: str, usage: Usage, at: datetime | None) -> Cost | str:
        if not isinstance(usage, Usage):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"cost: usage must be a Usage, got {type(usage).__name__}", param="usage"
            )
        reported = provider_cost(usage)
        if reported is not None:
            return reported
        prices = self.price(provider, model_id, usage, at=at)
        if isinstance(prices, str):
            return prices
        return price_usage(prices, usage)


def _merge(
    provider: str,
    model_id: str,
    md: ModelsDevModel | None,
    md_where: str,
    price_model: Any | None,
    source: PriceSource | None,
) -> ModelInfo:
    """One ``ModelInfo`` from both sources: limits, modalities, capabilities and dates from models.dev;
    prices from genai-prices (models.dev's where genai-prices lacks the model); the context window
    from genai-prices only where models.dev lacks the model."""
    prices: Prices | None = None
    sources: list[str] = []
    if md is not None:
        sources.append(f"models.dev:{md_where}")
    if price_model is not None and source is not None:
        prices = source.prices(price_model, datetime.now(tz=UTC))
        sources.append(f"genai-prices:{sources_for(provider).prices}/{price_model.id}")
    if prices is None and md is not None:
        prices = models_dev_prices(md)
    deprecated = None
    if md is not None and md.status is not None:
        deprecated = md.status == "deprecated"
    if price_model is not None and source is not None and source.deprecated(price_model):
        deprecated = True
    caching = None
    if prices is not None and prices.cache_read is not None:
        caching = True
    common: Mapping[str, Any] = {
        "provider": provider,
        "id": model_id,
        "prices": prices,
        "web_search": True if prices is not None and prices.web_search is not None else None,
        "prompt_caching": caching,
        "deprecated": deprecated,
        "sources": tuple(sources),
    }
    if md is None:
        window = source.context_window(price_model) if source is not None else None
        return ModelInfo(name=getattr(price_model, "name", None), context_window=window, **common)
    return ModelInfo(
        name=md.name,
        context_window=md.limit.context,
        max_input_tokens=md.limit.input,
        max_output_tokens=md.limit.output,
        input_modalities=md.modalities.input,
        output_modalities=md.modalities.output,
        tools=md.tool_call,
        structured_output=md.structured_output,
        reasoning=md.reasoning,
        attachments=md.attachment,
        temperature=md.temperature,
        open_weights=md.open_weights,
        knowledge_cutoff=md.knowledge,
        release_date=md.release_date,
        last_updated=md.last_updated,
        status=md.status,
        **common,
    )
