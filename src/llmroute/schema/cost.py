"""What a response cost, in US dollars."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

import msgspec

__all__ = ["Cost", "CostSource"]

CostSource = Literal["provider", "catalog", "mixed"]


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
