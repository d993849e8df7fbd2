"""``Catalog``: the merged view of the data packages plus the user's own models and aliases."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..schema import clock
from ..schema.cost import Cost
from ..schema.errors import InvalidRequestError
from ..schema.usage import Usage
from .ids import bare_id, limit_candidates, price_ref, sources_for
from .info import ModelInfo, Prices
from .pricing import price_usage, provider_cost
from .rules import apply_rules
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
        self._price_cache: dict[tuple[str, str, tuple[tuple[str, str], ...], datetime], Prices | str] = {}
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
        """The prices that apply to a call (its service tier and speed, the date ``at``), or why none do."""
        when = _utc_minute(at)
        context = _price_context(usage)
        key = (provider, model_id, context, when)
        try:
            return self._price_cache[key]
        except KeyError:
            pass
        if len(self._price_cache) > 4096:  # one entry per model a minute: drop the old minutes
            self._price_cache.clear()
        result = self._price(provider, model_id, context, when)
        self._price_cache[key] = result
        return result

    def _price(
        self, provider: str, model_id: str, context: tuple[tuple[str, str], ...], at: datetime
    ) -> Prices | str:
        registered = self._models.get((provider, model_id))
        if registered is None and (provider, model_id) in self._aliases:
            provider, model_id = self._aliases[(provider, model_id)]
            registered = self._models.get((provider, model_id))
        if registered is not None:
            return registered.prices or "the registered model has no prices"
        price_model = self._find_prices(provider, model_id)
        source = self._price_source()
        if price_model is not None and source is not None:
            prices = source.prices(price_model, at, dict(context) or None)
            if prices is not None:
                return apply_rules(provider, price_model.id, prices)
        info = self.lookup(provider, model_id)
        if info is None:
            return f"unknown model {model_id!r} on {provider}"
        if info.prices is None:
            return f"no published prices for {model_id!r} on {provider} in the catalog"
        return apply_rules(provider, bare_id(provider, model_id), info.prices)

    def priced_model(self, provider: str, model_id: str, usage: Usage) -> str:
        """The model a call is priced as: the one the response says served it (``usage.model``)
        when the catalog knows it as another model than ``model_id`` (DeepSeek's ``deepseek-chat``
        served by ``deepseek-v4-flash``), else ``model_id`` (which keeps an alias, a registered
        deployment or a regional inference profile's own prices)."""
        served = usage.model
        if not served or served == model_id or (provider, model_id) in self._models:
            return model_id
        if (provider, model_id) in self._aliases:
            return model_id
        mine = self._find_prices(provider, model_id)
        theirs = self._find_prices(provider, served)
        if theirs is not None:
            return model_id if mine is not None and mine.id == theirs.id else served
        if mine is None and self.lookup(provider, served) is not None:
            return served
        return model_id

    def cost(self, provider: str, model_id: str, usage: Usage, *, at: datetime | None = None) -> Cost | None:
        """The cost of one call's ``usage``: the provider's own figure when it reported one, else the
        catalog's computation at the call's date and time ``at`` (default: now); ``None`` when
        neither is known (``cost_reason`` says why)."""
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
        _check_cost_args(provider, model_id, usage, at)
        result = self._catalog_cost(provider, model_id, usage, at)
        return result if isinstance(result, Cost) else None

    def _cost(self, provider: str, model_id: str, usage: Usage, at: datetime | None) -> Cost | str:
        _check_cost_args(provider, model_id, usage, at)
        reported = provider_cost(usage)
        if reported is not None:
            return reported
        return self._catalog_cost(provider, model_id, usage, at)

    def _catalog_cost(self, provider: str, model_id: str, usage: Usage, at: datetime | None) -> Cost | str:
        if usage.iterations:
            return self._iterations_cost(provider, model_id, usage, at)
        prices = self.price(provider, self.priced_model(provider, model_id, usage), usage, at=at)
        if isinstance(prices, str):
            return prices
        return price_usage(prices, usage)

    def _iterations_cost(self, provider: str, model_id: str, usage: Usage, at: datetime | None) -> Cost | str:
        """Anthropic ``usage.iterations``: every sampling run on its own model's rates, each its own
        request for the long-context tier, plus the call's hosted tool fees once."""
        total: Cost | None = None
        for part in usage.iterations:
            step = msgspec.structs.replace(
                part,
                model=part.model or usage.model,
                service_tier=part.service_tier or usage.service_tier,
                speed=part.speed or usage.speed,
                web_search_requests=None,
                tool_calls=None,
            )
            cost = self._catalog_cost(provider, model_id, step, at)
            if isinstance(cost, str):
                return cost
            total = cost if total is None else total + cost
        cost = self._catalog_cost(provider, model_id, _fees_only(usage), at)
        if isinstance(cost, str):
            return cost
        return cost if total is None else total + cost


def _fees_only(usage: Usage) -> Usage:
    """Only the hosted tool counts of ``usage`` (its tokens are priced per iteration)."""
    return Usage(
        web_search_requests=usage.web_search_requests,
        tool_calls=usage.tool_calls,
        model=usage.model,
        service_tier=usage.service_tier,
        speed=usage.speed,
    )


def _utc_minute(at: datetime | None) -> datetime:
    when = at or clock.now()
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)  # naive is UTC
    return when.replace(second=0, microsecond=0)


def _price_context(usage: Usage | None) -> tuple[tuple[str, str], ...]:
    """genai-prices' price context for the call: the service tier and speed the response named."""
    if usage is None:
        return ()
    pairs = (("service_tier", usage.service_tier), ("speed", usage.speed))
    return tuple((k, v) for k, v in pairs if v)


def _check_cost_args(provider: object, model_id: object, usage: object, at: object) -> None:
    if not isinstance(usage, Usage):
        raise InvalidRequestError(f"cost: usage must be a Usage, got {type(usage).__name__}", param="usage")
    if at is not None and not isinstance(at, datetime):
        raise InvalidRequestError(
            f"cost: at must be a datetime (the call's date and time), got {type(at).__name__} {at!r:.40}",
            param="at",
        )
    for name, value in (("provider", provider), ("model_id", model_id)):
        if not isinstance(value, str) or not value:
            raise InvalidRequestError(f"cost: {name} must be a non-empty string", param=name)


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
