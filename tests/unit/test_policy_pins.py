"""``RetryPolicy`` / ``Timeouts`` pinned: the exact retried status set, every validation edge
(bools as numbers, NaN, zero, negatives), ``replace`` per field, and ``delay`` at its bounds."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmroute import InvalidRequestError
from llmroute.route.policy import RETRY_STATUSES, RetryPolicy, Timeouts


def test_the_retried_status_set_is_exactly_these() -> None:
    # 408 timeout, 409 lock contention, 429 rate limit, transient 5xx, Anthropic's 529 -- never
    # 501 (not implemented) or 505, never a 4xx that means the request itself is wrong
    assert frozenset({408, 409, 429, 500, 502, 503, 504, 529}) == RETRY_STATUSES
    assert RetryPolicy().statuses == RETRY_STATUSES


@pytest.mark.parametrize("field", ["connect", "first_byte", "idle", "total", "pool"])
@pytest.mark.parametrize("bad", [True, False, 0, 0.0, -1, -0.5, math.nan, "10", [1]])
def test_timeouts_refuse_non_positive_and_non_numbers(field: str, bad: object) -> None:
    with pytest.raises(InvalidRequestError, match=rf"^Timeouts\.{field}: must be a number > 0") as info:
        Timeouts(**{field: bad})  # pyright: ignore[reportArgumentType]
    assert info.value.param == f"Timeouts.{field}"
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("field", ["connect", "first_byte", "idle", "total", "pool"])
def test_timeouts_accept_small_positive_numbers(field: str) -> None:
    assert getattr(Timeouts(**{field: 0.001}), field) == 0.001
    assert getattr(Timeouts(**{field: 1}), field) == 1


def test_timeouts_none_only_where_unbounded_is_meaningful() -> None:
    assert Timeouts(total=None, pool=None).total is None
    for field in ("connect", "first_byte", "idle"):
        with pytest.raises(InvalidRequestError, match=rf"Timeouts\.{field}: must be a number > 0, got None$"):
            Timeouts(**{field: None})  # pyright: ignore[reportArgumentType]
    with pytest.raises(InvalidRequestError, match=r"Timeouts\.total: must be a number > 0 or None, got -1"):
        Timeouts(total=-1)


def test_timeouts_replace_changes_only_what_is_given() -> None:
    base = Timeouts(connect=1, first_byte=2, idle=3, total=4, pool=5)
    assert base.replace() == base
    assert base.replace(connect=10) == Timeouts(connect=10, first_byte=2, idle=3, total=4, pool=5)
    assert base.replace(first_byte=20) == Timeouts(connect=1, first_byte=20, idle=3, total=4, pool=5)
    assert base.replace(idle=30) == Timeouts(connect=1, first_byte=2, idle=30, total=4, pool=5)
    assert base.replace(total=40) == Timeouts(connect=1, first_byte=2, idle=3, total=40, pool=5)
    assert base.replace(pool=50) == Timeouts(connect=1, first_byte=2, idle=3, total=4, pool=50)


@pytest.mark.parametrize("field", ["initial_backoff", "max_backoff", "max_retry_after", "jitter"])
def test_retry_numbers_at_least_zero(field: str) -> None:
    assert getattr(RetryPolicy(**{field: 0}), field) == 0
    for bad in (-0.001, True, math.nan, None, "1"):
        with pytest.raises(
            InvalidRequestError, match=rf"^RetryPolicy\.{field}: must be a number >= 0, got "
        ) as info:
            RetryPolicy(**{field: bad})
        assert info.value.param == f"RetryPolicy.{field}"


def test_retry_multiplier_at_least_one_and_jitter_at_most_one() -> None:
    assert RetryPolicy(multiplier=1).multiplier == 1
    with pytest.raises(
        InvalidRequestError, match=r"RetryPolicy\.multiplier: must be a number >= 1, got 0\.99"
    ):
        RetryPolicy(multiplier=0.99)
    assert RetryPolicy(jitter=1).jitter == 1
    with pytest.raises(
        InvalidRequestError, match=r"RetryPolicy\.jitter: must be between 0 and 1, got 1\.01"
    ) as info:
        RetryPolicy(jitter=1.01)
    assert info.value.param == "RetryPolicy.jitter"


@pytest.mark.parametrize("bad", [-1, True, 1.0, "2", None])
def test_max_retries_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(InvalidRequestError, match=r"^RetryPolicy\.max_retries: must be an int >= 0") as info:
        RetryPolicy(max_retries=bad)
    assert info.value.param == "RetryPolicy.max_retries"
    assert RetryPolicy(max_retries=0).max_retries == 0 == RetryPolicy.none().max_retries


@pytest.mark.parametrize("bad", [[429], (429,), frozenset({True}), frozenset({"429"}), {429.0}])
def test_statuses_must_be_a_set_of_ints(bad: Any) -> None:
    with pytest.raises(
        InvalidRequestError, match=r"RetryPolicy\.statuses: must be a frozenset of HTTP status ints"
    ):
        RetryPolicy(statuses=bad)
    assert RetryPolicy(statuses=frozenset({418})).statuses == {418}
    assert RetryPolicy(statuses={418}).statuses == {418}  # pyright: ignore[reportArgumentType]


def test_delay_from_retry_after_is_a_floor_capped_and_never_negative() -> None:
    p = RetryPolicy(jitter=0.5, max_retry_after=60)
    assert p.delay(1, retry_after=10, rand=lambda: 0.0) == 10
    assert p.delay(1, retry_after=10, rand=lambda: 1.0) == 15
    assert p.delay(1, retry_after=50, rand=lambda: 1.0) == 60  # jitter never passes the cap
    assert p.delay(1, retry_after=600, rand=lambda: 0.0) == 60
    assert p.delay(1, retry_after=-5, rand=lambda: 1.0) == 0.0  # a clock-skewed hint
    assert p.delay(1, retry_after=0.0, rand=lambda: 1.0) == 0.0
    assert RetryPolicy(jitter=0).delay(3, retry_after=7, rand=lambda: 1.0) == 7


def test_delay_backoff_grows_caps_and_spreads() -> None:
    p = RetryPolicy(initial_backoff=0.5, multiplier=2, max_backoff=30, jitter=0)
    assert [p.delay(n) for n in (0, 1, 2, 3, 4)] == [0.5, 0.5, 1.0, 2.0, 4.0]
    assert p.delay(20) == 30
    assert p.delay(100_000) == 30  # the power overflows: the cap still holds
    j = RetryPolicy(initial_backoff=4, multiplier=2, max_backoff=30, jitter=0.25)
    assert j.delay(1, rand=lambda: 0.0) == 3.0
    assert j.delay(1, rand=lambda: 0.5) == 4.0
    assert j.delay(1, rand=lambda: 1.0) == 5.0
    assert j.delay(4, rand=lambda: 1.0) == 30  # 32 * 1.25, capped
    assert j.delay(4, rand=lambda: 0.0) == 22.5  # 30 * 0.75: the cap applies before the spread
    z = RetryPolicy(initial_backoff=0, max_backoff=0, jitter=1)
    assert z.delay(1, rand=lambda: 0.0) == 0.0
