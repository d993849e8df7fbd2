"""``Usage`` arithmetic pinned field by field: a sum across steps, ``None`` on either side, the
two provider accountings, and counters that are not ints (bools included) refused."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import llmroute
from llmroute import Usage
from llmroute.schema.usage_read import usage_from_cached, usage_from_uncached

COUNTERS = [
    "input_tokens",
    "output_tokens",
    "non_cached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "web_search_requests",
    "cache_write_1h_tokens",
    "input_audio_tokens",
    "cache_read_audio_tokens",
    "input_image_tokens",
    "output_audio_tokens",
    "output_image_tokens",
]


@pytest.mark.parametrize("name", COUNTERS)
def test_each_counter_is_summed_on_its_own(name: str) -> None:
    a, b = Usage(**{name: 3}), Usage(**{name: 40})
    total = a + b
    assert getattr(total, name) == 43
    assert all(getattr(total, other) is None for other in COUNTERS if other != name)
    assert getattr(a + Usage(), name) == 3  # None on the right keeps the left
    assert getattr(Usage() + b, name) == 40  # None on the left keeps the right
    assert getattr(Usage() + Usage(), name) is None  # never reported stays unknown


def test_service_tier_and_reported_cost_across_steps() -> None:
    flex, flex2 = Usage(service_tier="flex"), Usage(service_tier="flex")
    assert (flex + flex2).service_tier == "flex"
    assert (flex + Usage(service_tier="priority")).service_tier is None  # mixed tiers: no single tier
    assert (flex + Usage()).service_tier is None
    cost = Usage(reported_cost=Decimal("0.25")) + Usage(reported_cost=Decimal("0.5"))
    assert cost.reported_cost == Decimal("0.75")
    # a sum is reported only when every step reported its cost
    assert (Usage(reported_cost=Decimal("0.25")) + Usage()).reported_cost is None
    assert (Usage() + Usage(reported_cost=Decimal("0.25"))).reported_cost is None


def test_tool_calls_speed_model_and_iterations_across_steps() -> None:
    a = Usage(tool_calls={"file_search": 2}, speed="fast", model="m1")
    b = Usage(tool_calls={"file_search": 1, "x_search": 3}, speed="fast", model="m2")
    total = a + b
    assert total.tool_calls == {"file_search": 3, "x_search": 3}
    assert total.speed == "fast" and total.model is None  # two served models: no single one
    assert (Usage() + Usage()).tool_calls is None
    # a sum with iterations keeps every part, so pricing the sum prices each part
    it = Usage(input_tokens=5, model="advisor")
    with_parts = Usage(input_tokens=10, iterations=(it, it))
    plain = Usage(input_tokens=7)
    assert (with_parts + plain).iterations == (it, it, plain)
    assert (plain + with_parts).iterations == (plain, it, it)
    assert (plain + plain).iterations == ()


def test_a_full_sum_over_three_steps() -> None:
    step: dict[str, Any] = {name: i + 1 for i, name in enumerate(COUNTERS)}
    total = Usage(**step) + Usage(**step) + Usage(**{k: 10 * v for k, v in step.items()})
    assert [getattr(total, name) for name in COUNTERS] == [12 * (i + 1) for i in range(len(COUNTERS))]
    assert total.provider_metadata is None  # raw provider usage is per step, never summed


@pytest.mark.parametrize(
    ("usage", "total"),
    [
        (Usage(), None),
        (Usage(input_tokens=5), 5),
        (Usage(output_tokens=7), 7),
        (Usage(input_tokens=5, output_tokens=7), 12),
        (Usage(input_tokens=0, output_tokens=0), 0),
    ],
)
def test_total_tokens(usage: Usage, total: int | None) -> None:
    assert usage.total_tokens == total


def test_from_uncached_adds_the_cached_parts_to_the_input() -> None:
    u = usage_from_uncached(
        uncached_input=10, output_tokens=4, cache_read=100, cache_write=1000, reasoning=2,
        web_search_requests=1, raw={"input_tokens": 10},
    )  # fmt: skip
    assert (u.input_tokens, u.non_cached_input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        1110,
        10,
        100,
        1000,
    )
    assert (u.output_tokens, u.reasoning_tokens, u.web_search_requests) == (4, 2, 1)
    assert u.provider_metadata == {"input_tokens": 10}
    assert usage_from_uncached(uncached_input=None, output_tokens=3).input_tokens is None
    assert usage_from_uncached(uncached_input=None, output_tokens=3, cache_read=8).input_tokens == 8
    assert usage_from_uncached(uncached_input=0, output_tokens=None).input_tokens == 0


def test_from_cached_subtracts_the_cached_parts() -> None:
    u = usage_from_cached(
        input_tokens=1110, output_tokens=4, cache_read=100, cache_write=1000, reasoning=2,
        web_search_requests=1, raw={"prompt_tokens": 1110},
    )  # fmt: skip
    assert (u.input_tokens, u.non_cached_input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        1110,
        10,
        100,
        1000,
    )
    assert (u.output_tokens, u.reasoning_tokens, u.web_search_requests) == (4, 2, 1)
    assert u.provider_metadata == {"prompt_tokens": 1110}
    assert usage_from_cached(input_tokens=50, output_tokens=None, cache_read=20).non_cached_input_tokens == 30
    assert usage_from_cached(input_tokens=50, output_tokens=None).non_cached_input_tokens == 50
    assert (
        usage_from_cached(input_tokens=None, output_tokens=1, cache_read=20).non_cached_input_tokens is None
    )


@pytest.mark.parametrize("bad", [True, False, 1.0, "12", [1]])
@pytest.mark.parametrize("position", range(6))
def test_counters_that_are_not_ints_are_refused(bad: object, position: int) -> None:
    names = [
        "uncached_input",
        "output_tokens",
        "cache_read",
        "cache_write",
        "reasoning",
        "web_search_requests",
    ]
    kwargs: dict[str, Any] = {"uncached_input": 1, "output_tokens": 1, names[position]: bad}
    # the field, by its Usage name, and what came instead: the provider's malformed output, typed
    field = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"]
    field.append("web_search_requests")
    kind = "a bool" if isinstance(bad, bool) else type(bad).__name__
    match = f"usage: {field[position]} is {kind}.*, not a token count"
    with pytest.raises(llmroute.InvalidProviderOutputError, match=match) as info:
        usage_from_uncached(**kwargs)
    assert info.value.code == "bad_usage"
    cached = {"input_tokens" if k == "uncached_input" else k: v for k, v in kwargs.items()}
    with pytest.raises(llmroute.InvalidProviderOutputError, match=match):
        usage_from_cached(**cached)


def test_the_one_hour_cache_write_part_passes_through() -> None:
    u = usage_from_uncached(uncached_input=1, output_tokens=1, cache_write=10, cache_write_1h=4)
    assert (u.cache_write_tokens, u.cache_write_1h_tokens, u.input_tokens) == (10, 4, 11)
    c = usage_from_cached(input_tokens=20, output_tokens=1, cache_write=10, cache_write_1h=4)
    assert (c.cache_write_tokens, c.cache_write_1h_tokens, c.non_cached_input_tokens) == (10, 4, 10)


def test_usage_count_and_section_read_provider_fields() -> None:
    from llmroute import InvalidProviderOutputError
    from llmroute.schema.usage_read import usage_count, usage_section

    raw = {"n": 5, "zero": 0, "none": None, "s": "5", "b": True, "obj": {"k": 1}, "list": [1]}
    assert [usage_count(raw, k, "w") for k in ("n", "zero", "none", "missing")] == [5, 0, None, None]
    for key, kind in (("s", "str '5'"), ("b", "a bool"), ("obj", "dict {'k': 1}")):
        with pytest.raises(
            InvalidProviderOutputError, match=f"w: usage field '{key}' is {kind}, not a token count"
        ):
            usage_count(raw, key, "w")
    assert usage_section(raw, "obj", "w") == {"k": 1}
    assert usage_section(raw, "none", "w") == {} and usage_section(raw, "missing", "w") == {}
    for key in ("n", "list", "s"):
        with pytest.raises(InvalidProviderOutputError, match=f"w: usage field '{key}' is .*, not an object"):
            usage_section(raw, key, "w")
