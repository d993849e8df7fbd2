"""The wall clock a call's prices are read at: the time each step's answer arrived.

One function, so the builder, the hooks, the gateway and the catalog read the same clock (and a
test can set it: ``monkeypatch.setattr(llmroute.schema.clock, "now", ...)``).
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now"]


def now() -> datetime:
    """The current time, UTC."""
    return datetime.now(UTC)
