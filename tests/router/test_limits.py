"""Rate-limit headers the router acts on, and its request-size estimate."""

from __future__ import annotations

import datetime as dt

import pytest

import llmroute
from llmroute.providers import openai
from llmroute.router import estimate_tokens
from llmroute.router.limits import DEFAULT_RESET, Budget, RateLimits, read_limits


def test_openai_requests_exhausted_blocks_until_the_reset() -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0.5s"}
    assert read_limits(200, headers) == RateLimits(blocked_for=360.5)
    assert read_limits(
        200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"}
    ) == (RateLimits(blocked_for=0.02))
    assert read_limits(200, {"x-ratelimit-remaining-requests": "0"}) == RateLimits(blocked_for=DEFAULT_RESET)


def test_anthropic_tokens_running_low_are_remembered_until_their_reset() -> None:
    reset = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    limits = read_limits(
        200,
        {
            "anthropic-ratelimit-input-tokens-remaining": "1200",
            "anthropic-ratelimit-input-tokens-reset": reset,
        },
    )
    assert limits is not None and limits.tokens == 1200 and 28 < limits.tokens_for <= 30
    exhausted = read_limits(200, {"anthropic-ratelimit-requests-remaining": "0"})
    assert exhausted == RateLimits(blocked_for=DEFAULT_RESET)


def test_plenty_left_is_nothing_to_act_on() -> None:
    assert (
        read_limits(200, {"x-ratelimit-remaining-requests": "5000", "x-ratelimit-remaining-tokens": "90000"})
        is None
    )
    assert read_limits(200, {}) is None
    assert read_limits(200, {"x-ratelimit-remaining-requests": "soon"}) is None


def test_few_requests_left_are_counted_down() -> None:
    limits = read_limits(200, {"x-ratelimit-remaining-requests": "99", "x-ratelimit-reset-requests": "2s"})
    assert limits == RateLimits(requests=99, requests_for=2.0)


def test_retry_after_on_429_and_503() -> None:
    assert read_limits(429, {"retry-after-ms": "1500"}) == RateLimits(blocked_for=1.5)
    assert read_limits(503, {"retry-after": "7"}) == RateLimits(blocked_for=7.0)
    assert read_limits(429, {}) is None


def test_estimate_counts_text_tools_and_max_tokens() -> None:
    model = openai.configure(api_key="sk-x").chat("m")
    small = estimate_tokens(llmroute.request(model=model, prompt="hi"))
    big = estimate_tokens(llmroute.request(model=model, prompt="word " * 4_000))
    assert small < 20 and big == pytest.approx(5_000, rel=0.01)
    capped = estimate_tokens(
        llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(max_tokens=1_000))
    )
    assert capped == small + 1_000
    wide = estimate_tokens(llmroute.request(model=model, prompt="漢" * 1_000))
    assert wide >= 750  # UTF-8 bytes, not characters


def test_a_budget_counts_down_from_the_last_reading_less_what_was_sent_since() -> None:
    budget = Budget()
    first = budget.sent(None)
    for _ in range(4):
        budget.sent(None)  # four more sent before the first one's answer arrived
    budget.read(RateLimits(requests=6, requests_for=30.0), first, now=100.0)
    assert budget.requests == 2  # the provider had counted the first only
    assert budget.refusal(100.0, None) is None
    budget.sent(None)
    budget.sent(None)
    refused = budget.refusal(100.5, None)
    assert refused is not None and "remaining requests" in refused[0] and refused[1] == 130.0
    assert budget.refusal(130.0, None) is None  # the reset: counted no more
    budget.read(RateLimits(tokens=500, tokens_for=10.0), budget.sends, now=200.0)
    assert budget.refusal(200.0, 600) is not None and budget.refusal(200.0, 400) is None
    budget.plenty()  # an answer with nothing to watch
    assert budget.refusal(200.0, 600) is None
