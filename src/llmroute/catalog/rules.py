"""Published billing rules the data packages do not carry, applied to the prices they resolve.

Each rule cites the provider's price page. genai-prices keeps token prices and a web search price
per model; how a provider counts the searches (per query or per grounded prompt) and the per-call
fees of some hosted tools live here, in one table, so a data update never silently drops them.
"""

from __future__ import annotations

import re
from decimal import Decimal

import msgspec

from .info import Prices

__all__ = ["TOOL_FEES", "apply_rules"]

# Gemini 1.x/2.x: "Grounding with Google Search ... $35 / 1,000 grounded prompts"; Gemini 3 and later:
# "$14 / 1,000 search queries" (https://ai.google.dev/gemini-api/docs/pricing; Vertex AI the same,
# https://cloud.google.com/vertex-ai/generative-ai/pricing#grounding). A grounded prompt is one call
# whose answer used search, however many queries it ran.
_GROUNDED_PER_PROMPT = re.compile(r"^(?:models/)?gemini-(?:1\.|2\.)")
_GOOGLE = frozenset({"google", "vertex"})

# Per 1,000 calls, by ``Usage.tool_calls`` kind (and ``web_search`` for ``Prices.web_search``), where
# the provider's page publishes a per-call fee genai-prices does not list.
TOOL_FEES: dict[str, dict[str, Decimal]] = {
    # https://docs.x.ai/developers/pricing "Tools Pricing": web search, X search and code execution
    # $5 / 1k calls, collections search (file_search) $2.50, attachment search $10
    "xai": {
        "web_search": Decimal(5),
        "x_search": Decimal(5),
        "code_execution": Decimal(5),
        "file_search": Decimal("2.5"),
        "attachment_search": Decimal(10),
    },
}


def apply_rules(provider: str, model_id: str, prices: Prices) -> Prices:
    """``prices`` with the provider's published counting rules and per-call fees added (a fee the
    data already lists is kept as it is)."""
    changes: dict[str, object] = {}
    if provider in _GOOGLE and _GROUNDED_PER_PROMPT.match(model_id) and not prices.web_search_per_prompt:
        changes["web_search_per_prompt"] = True
    fees = TOOL_FEES.get(provider)
    if fees:
        if prices.web_search is None and "web_search" in fees:
            changes["web_search"] = fees["web_search"]
        missing = {k: v for k, v in fees.items() if k != "web_search" and k not in prices.tool_calls}
        if missing:
            changes["tool_calls"] = {**prices.tool_calls, **missing}
    return msgspec.structs.replace(prices, **changes) if changes else prices
