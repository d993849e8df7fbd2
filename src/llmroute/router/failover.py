"""Where a moving session goes: among the next targets of equal weight, the one whose call costs
least with a cold cache (catalog prices), so a pin that must move costs as little as it can."""

from __future__ import annotations

import logging
from typing import TypeVar

from ..route.model import Model
from ..schema.request import LLMRequest
from ..schema.usage import Usage
from .slot import Slot

__all__ = ["cheapest_first", "cold_cost"]

log = logging.getLogger("llmroute.router")

B = TypeVar("B")

OUTPUT_GUESS = 1024  # output tokens a cold call is priced with when max_tokens is unset (and its cap)


def cheapest_first(pairs: list[tuple[Slot, B]], request: LLMRequest, tokens: int) -> list[tuple[Slot, B]]:
    """Within each priority whose targets weigh the same, the target whose call costs least with
    a cold cache first (catalog prices; unknown prices last); weights that differ keep their
    order. Priorities keep theirs."""
    out: list[tuple[Slot, B]] = []
    i = 0
    while i < len(pairs):
        priority = pairs[i][0].target.priority
        j = i
        while j < len(pairs) and pairs[j][0].target.priority == priority:
            j += 1
        group = pairs[i:j]
        if len(group) > 1 and len({s.target.weight for s, _ in group}) == 1:
            costs = {s.index: cold_cost(s, request, tokens) for s, _ in group}
            group = sorted(group, key=lambda p: costs[p[0].index])
        out.extend(group)
        i = j
    return out


def cold_cost(slot: Slot, request: LLMRequest, tokens: int) -> float:
    """What ``request`` costs on ``slot`` with nothing cached: its input as cache writes where the
    protocol caches by breakpoints and the request asks for them, else as plain input."""
    from ..catalog import cost

    g = request.generation
    output = min(g.max_tokens, OUTPUT_GUESS) if g is not None and g.max_tokens else OUTPUT_GUESS
    tokens = max(tokens - (g.max_tokens or 0 if g is not None else 0), 1)  # the estimate holds max_tokens
    model = slot.model
    assert isinstance(model, Model)  # a chat router's targets are chat models
    name = model.route.protocol.name
    explicit = request.cache is not None and ("anthropic" in name or name.startswith("bedrock"))
    usage = Usage(
        input_tokens=tokens,
        output_tokens=output,
        non_cached_input_tokens=0 if explicit else tokens,
        cache_read_tokens=0,
        cache_write_tokens=tokens if explicit else 0,
    )
    try:
        priced = cost(model.provider, model.id, usage)
    except Exception:  # the catalog's data failed to load: unknown, not an error
        log.debug("llmroute: no price for %s", model, exc_info=True)
        return float("inf")
    return float(priced.total) if priced is not None else float("inf")
