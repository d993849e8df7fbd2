"""Resolved prices are cached per UTC minute: a time-of-day price window still applies exactly.

DeepSeek published off-peak prices (16:30-00:30 UTC, 50% off deepseek-chat) in February 2025
(https://api-docs.deepseek.com/quick_start/pricing, as carried by genai-prices)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from llmroute import Usage, catalog

USAGE = Usage(input_tokens=1_000_000, output_tokens=1_000_000)


def _total(at: datetime) -> Decimal:
    cost = catalog.cost("deepseek", "deepseek-chat", USAGE, at=at)
    assert cost is not None
    return cost.total


def test_off_peak_window_applies_on_either_side_of_a_cached_minute() -> None:
    peak = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    off_peak = datetime(2025, 3, 1, 17, 0, tzinfo=UTC)
    assert _total(peak) == Decimal("1.37")
    assert _total(off_peak) == Decimal("0.685")
    assert _total(peak) == Decimal("1.37")  # the cache did not keep the off-peak answer
    # the window opens at 16:30: one minute before is peak, the minute itself is off-peak
    assert _total(datetime(2025, 3, 1, 16, 29, 59, tzinfo=UTC)) == Decimal("1.37")
    assert _total(datetime(2025, 3, 1, 16, 30, 0, tzinfo=UTC)) == Decimal("0.685")


def test_a_naive_time_is_utc_and_an_aware_one_is_converted() -> None:
    assert _total(datetime(2025, 3, 1, 17, 0)) == Decimal("0.685")
    tokyo = timezone(timedelta(hours=9))
    # 02:00 in Tokyo is 17:00 UTC the day before: off-peak
    assert _total(datetime(2025, 3, 2, 2, 0, tzinfo=tokyo)) == Decimal("0.685")
    assert _total(datetime(2025, 3, 2, 2, 0, tzinfo=UTC)) == Decimal("1.37")
