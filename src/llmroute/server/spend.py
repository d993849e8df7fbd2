"""What a request cost, for the access log, the metrics and key budgets: the provider's own figure
when it reported one, else the catalog's prices (extra ``llmroute[catalog]``); ``None`` when
neither is known. Which models the catalog prices is looked up once per model, at startup."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from ..route.model import Model
from ..schema.usage import Usage

__all__ = ["Pricer"]

log = logging.getLogger("llmroute.server")


class Pricer:
    def __init__(self) -> None:
        self._catalog: Any = None
        self._priced: dict[tuple[str, str], bool] = {}

    def warm(self, models: Iterable[Model]) -> None:
        """Load the catalog (a fraction of a second, once per process) and note which models it prices."""
        try:
            from .. import catalog

            for model in models:
                info = catalog.lookup(model.provider, model.id)
                self._priced[(model.provider, model.id)] = info is not None and info.prices is not None
        except Exception as exc:  # the extra missing or its data unreadable: costs stay unknown
            log.info("gateway: no catalog prices (%s); costs are the providers' own only", type(exc).__name__)
            self._catalog = None
            return
        self._catalog = catalog

    def cost(self, model: Model, usage: Usage | None) -> Decimal | None:
        if usage is None:
            return None
        if self._catalog is not None and self._priced.get((model.provider, model.id)):
            cost = self._catalog.cost(model.provider, model.id, usage)
            return None if cost is None else cost.total
        return usage.reported_cost
