"""``websearch.SearchLimits``: query and prompt limits before any request, the response cap and the
wall clock against a real server on 127.0.0.1, all as ``LimitExceeded`` with the issue's codes."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

import llmroute
from llmroute.websearch.limits import LimitExceeded, SearchLimits
from tests.reliability import conftest as reliability
from tests.reliability.server import FaultServer, Reply, Stall, chat_chunk
from tests.reliability.test_faults import BOUND, chat_request, client_for, settled

DEFAULT = SearchLimits()


def test_defaults_are_the_issues_numbers() -> None:
    assert (
        DEFAULT.max_query_units,
        DEFAULT.max_prompt_bytes,
        DEFAULT.max_response_bytes,
        DEFAULT.timeout,
    ) == (
        32_768,
        98_304,
        52_428_800,
        600.0,
    )


@pytest.mark.parametrize(
    ("query", "ok"),
    [
        ("a" * 32_768, True),
        ("a" * 32_769, False),
        ("🗼" * 16_384, True),  # astral: two UTF-16 units each
        ("🗼" * 16_384 + "a", False),
        ("東" * 32_768, True),  # BMP: one unit each, three UTF-8 bytes
        ("東" * 32_769, False),
    ],
    ids=["ascii-at-limit", "ascii-over", "astral-at-limit", "astral-over", "bmp-at-limit", "bmp-over"],
)
def test_query_length_is_counted_in_utf16_code_units(query: str, ok: bool) -> None:
    if ok:
        DEFAULT.check_query(query)
        return
    with pytest.raises(LimitExceeded) as caught:
        DEFAULT.check_query(query)
    error = caught.value
    assert (error.code, error.limit, error.actual, error.retryable) == (
        "QUERY_TOO_LONG",
        32_768,
        32_769,
        False,
    )
    assert isinstance(error, llmroute.LLMError) and query[:20] not in str(error)


def test_prompt_size_is_system_and_user_together_in_utf8_bytes() -> None:
    DEFAULT.check_prompt("s" * 50_000, "u" * 48_304)
    DEFAULT.check_prompt("ö" * 49_152)  # two bytes each: exactly at the limit
    with pytest.raises(LimitExceeded) as caught:
        DEFAULT.check_prompt("s" * 50_000, "ö" * 24_153)
    assert (caught.value.code, caught.value.actual, caught.value.unit) == (
        "PROMPT_TOO_LARGE",
        98_306,
        "UTF-8 bytes",
    )
    assert "98,306" in str(caught.value) and "ö" not in str(caught.value)


def test_limits_are_configurable_and_bad_values_are_typed_errors() -> None:
    small = SearchLimits(max_query_units=3, max_prompt_bytes=4)
    small.check_query("abc")
    with pytest.raises(LimitExceeded):
        small.check_query("abcd")
    with pytest.raises(LimitExceeded):
        small.check_prompt("ab", "cde")
    for bad in ({"max_query_units": 0}, {"timeout": -1.0}, {"max_prompt_bytes": True}):
        with pytest.raises(llmroute.InvalidRequestError, match="must be a positive number"):
            SearchLimits(**bad)  # type: ignore[arg-type]


def test_core_errors_map_to_limit_codes() -> None:
    too_large = llmroute.ResponseTooLargeError("cap", limit=1_000)
    assert DEFAULT.exceeded(too_large) is not None
    assert DEFAULT.exceeded(too_large).code == "RESPONSE_TOO_LARGE"  # type: ignore[union-attr]
    total = llmroute.TimeoutError("total", deadline="total")
    assert DEFAULT.exceeded(total).code == "SEARCH_TIMEOUT"  # type: ignore[union-attr]
    assert DEFAULT.exceeded(llmroute.TimeoutError("idle", deadline="idle")) is None  # a network fault
    assert DEFAULT.exceeded(llmroute.RateLimitError("slow down")) is None


anyio_backend = reliability.anyio_backend  # the socket tests share the reliability suite's fixtures
server = reliability.server


@pytest.mark.anyio
async def test_response_cap_closes_the_connection_and_is_response_too_large(server: FaultServer) -> None:
    limits = SearchLimits(max_response_bytes=2_000)
    server.add(Reply(parts=[chat_chunk("x" * 200) for _ in range(50)] + [Stall()]))
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with pytest.raises(llmroute.ResponseTooLargeError) as caught:
                await client.generate(chat_request(server), max_response_bytes=limits.max_response_bytes)
            await settled(server)
    mapped = limits.exceeded(caught.value)
    assert mapped is not None and (mapped.code, mapped.limit) == ("RESPONSE_TOO_LARGE", 2_000)


@pytest.mark.anyio
async def test_wall_clock_cancels_a_stalled_search_and_is_search_timeout(server: FaultServer) -> None:
    limits = SearchLimits(timeout=0.3)
    server.add(Reply(parts=[chat_chunk("partial"), Stall()]))
    started = anyio.current_time()
    with anyio.fail_after(BOUND):
        async with client_for(server) as (client, _):
            with pytest.raises(LimitExceeded) as caught, limits.wall_clock():
                await client.generate(chat_request(server))
            await settled(server)  # the cancelled call closed its connection
    assert caught.value.code == "SEARCH_TIMEOUT" and "0.3 s" in str(caught.value)
    assert 0.25 < anyio.current_time() - started < 5


@pytest.mark.anyio
async def test_wall_clock_lets_a_fast_search_through() -> None:
    with SearchLimits(timeout=5).wall_clock():
        await anyio.lowlevel.checkpoint()
