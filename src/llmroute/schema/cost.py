"""What a response cost, in US dollars."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Literal

import msgspec

__all__ = ["TICK_USD", "Cost", "CostSource", "reported_cost"]

CostSource = Literal["provider", "catalog", "mixed"]


TICK_USD = Decimal("1e-10")
"""xAI's ``cost_in_usd_ticks`` unit: one tick is 10^-10 USD (docs.x.ai, "Usage and cost")."""


def reported_cost(raw: dict[str, Any]) -> Decimal | None:
    """The call's cost as the provider put it in its usage object: xAI ``cost_in_usd_ticks``,
    OpenRouter ``cost`` (USD; with BYOK plus ``cost_details.upstream_inference_cost``, what the
    upstream provider charged your own key). ``None`` when there is none or it is malformed."""
    ticks = raw.get("cost_in_usd_ticks")
    if type(ticks) is int and ticks >= 0:
        return ticks * TICK_USD
    cost = _usd(raw.get("cost"))
    if cost is not None and raw.get("is_byok") is True:
        details = raw.get("cost_details")
        upstream = _usd(details.get("upstream_inference_cost")) if isinstance(details, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        return None if upstream is None else cost + upstream
    return cost


def _usd(value: object) -> Decimal | None:
    # a JSON number: str() gives the shortest repr, so 0.0133176 stays Decimal("0.0133176")
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        amount = Decimal(str(value))
        return amount if amount >= 0 else None
    return None


def _add(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    return None if a is None or b is None else a + b


class Cost(msgspec.Struct, frozen=True):
    """The price of one step (or a sum of steps), exact ``Decimal`` USD.

    With ``source="catalog"`` the parts are computed from the catalog's prices and sum exactly to
    ``total``. With ``source="provider"`` ``total`` is the figure the provider reported for the call
    (OpenRouter ``usage.cost``, xAI ``cost_in_usd_ticks``); the parts are ``None`` because the provider
    did not split it. ``"mixed"`` is a sum of steps with both sources.
    """

    total: Decimal
    """Everything: model tokens, hosted tool fees and the server-side search backend."""
    input: Decimal | None = None
    """Input tokens that were neither read from nor written to the prompt cache."""
    cache_read: Decimal | None = None
    """Input tokens read from the prompt cache (Anthropic 0.1x input; each provider's own discount)."""
    cache_write: Decimal | None = None
    """Input tokens written to the prompt cache (Anthropic: 5-minute writes 1.25x, 1-hour writes 2x)."""
    output: Decimal | None = None
    """Output tokens, reasoning included (reasoning is billed as output)."""
    tools: Decimal | None = None
    """Hosted tool fees of the model's provider: web search requests, grounded prompts."""
    search: Decimal = Decimal(0)
    """The server-side ``web_search`` tool's backend model calls (``websearch.ServerWebSearch``), apart
    from the main model's cost and included in ``total``."""
    source: CostSource = "catalog"
    """``"provider"``: reported by the provider; ``"catalog"``: computed from published prices."""

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            total=self.total + other.total,
            input=_add(self.input, other.input),
            cache_read=_add(self.cache_read, other.cache_read),
            cache_write=_add(self.cache_write, other.cache_write),
            output=_add(self.output, other.output),
            tools=_add(self.tools, other.tools),
            search=self.search + other.search,
            source=self.source if self.source == other.source else "mixed",
        )

    def with_search(self, search: Decimal) -> Cost:
        """This cost plus ``search`` dollars of server-side web_search backend calls."""
        if not search:
            return self
        return msgspec.structs.replace(self, total=self.total + search, search=self.search + search)
