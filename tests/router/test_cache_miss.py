"""The cache miss explained: over generated sessions, the second call's ``cache_miss`` names the
one thing planted between the two calls (a tool, a system part or an earlier message changed,
the cache's lifetime passed, the target failed so the session moved, the provider evicted the
prefix), and nothing when nothing was planted. Upstreams: fake Anthropic servers with prompt
caches (``tests/prompt_cache.py``), in memory."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import CachePolicy, Message, RetryPolicy, Router, Target, TextPart, ToolDefinition
from llmroute.router.affinity import Affinity

from ..prompt_cache import CachingUpstream

PLANTS = ("tools", "system", "message", "ttl", "target", "provider", "none")
TTL = 300.0

_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=8, max_size=160)


@st.composite
def sessions(draw: st.DrawFn) -> dict[str, Any]:
    tools = draw(st.lists(_text, min_size=0, max_size=3))
    system = draw(st.lists(_text, min_size=1, max_size=3))
    turns = draw(st.integers(min_value=1, max_value=4))
    texts = draw(st.lists(_text, min_size=2 * turns + 1, max_size=2 * turns + 1))
    plant = draw(st.sampled_from(PLANTS))
    spot = draw(st.integers(min_value=0, max_value=1_000))
    return {"tools": tools, "system": system, "texts": texts, "plant": plant, "spot": spot}


def _tools(descriptions: list[str]) -> tuple[ToolDefinition, ...]:
    schema = {"type": "object", "properties": {}}
    return tuple(ToolDefinition(f"tool_{i}", d, schema) for i, d in enumerate(descriptions))


def _conversation(texts: list[str]) -> tuple[Message, ...]:
    return tuple(Message("user" if i % 2 == 0 else "assistant", (TextPart(t),)) for i, t in enumerate(texts))


def _request(router: Router, session: dict[str, Any], messages: tuple[Message, ...], tools: Any) -> Any:
    return llmroute.LLMRequest(
        model=router,
        system=tuple(TextPart(t) for t in session["system"]),
        messages=messages,
        tools=tools,
        cache=CachePolicy(),
        session="generated",
    )


async def _run(session: dict[str, Any]) -> tuple[llmroute.LLMResponse, str | None]:
    """Two calls of one session with ``plant`` between them; the second's response, and the
    region the plant changed."""
    clock = [10_000.0]
    up = CachingUpstream(ttl=TTL, clock=lambda: clock[0])
    router = Router(
        [Target(up.model("a"), name="a"), Target(up.model("b"), name="b")],
        affinity=Affinity(),
        seed=session["spot"],
    )
    from llmroute.router import affinity

    affinity.now = lambda: clock[0]  # restored by the fixture below
    tools = _tools(session["tools"])
    messages = _conversation(session["texts"])
    plant, spot = session["plant"], session["spot"]
    region: str | None = None
    async with up.client(retry=RetryPolicy(max_retries=0)) as client:
        first = await client.generate(_request(router, session, messages, tools))
        pinned = first.steps[0].target
        assert pinned is not None
        grown = (
            *messages,
            Message("assistant", (TextPart("an answer"),)),
            Message("user", (TextPart("more"),)),
        )
        if plant == "tools":
            descriptions = list(session["tools"]) or [""]
            i = spot % len(descriptions)
            descriptions[i] += " (changed)"
            tools, region = _tools(descriptions), "tools"
        elif plant == "system":
            i = spot % len(session["system"])
            session = {
                **session,
                "system": [t + " (changed)" if k == i else t for k, t in enumerate(session["system"])],
            }
            region = f"system[{i}]"
        elif plant == "message":
            j = spot % len(messages)
            edited = Message(messages[j].role, (TextPart(session["texts"][j] + " (changed)"),))
            grown = (*grown[:j], edited, *grown[j + 1 :])
            region = f"messages[{j}]"
        elif plant == "ttl":
            clock[0] += TTL + 1 + spot % 600
        elif plant == "target":
            up.fail(pinned)
        elif plant == "provider":
            up.target(pinned).cache.clear()  # evicted before its time
        else:
            clock[0] += spot % 60
        second = await client.generate(_request(router, session, grown, tools))
    return second, region


@pytest.fixture
def restore_clock() -> Any:
    from llmroute.router import affinity

    saved = affinity.now
    yield
    affinity.now = saved


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=sessions())
def test_the_miss_names_what_was_planted(session: dict[str, Any], restore_clock: Any) -> None:
    import anyio

    second, region = anyio.run(_run, session)
    miss = second.cache_miss
    plant = session["plant"]
    if plant == "none":
        assert miss is None, miss
        assert second.cache.cache_read_tokens > 0
        return
    assert miss is not None, (plant, second.steps[0].usage)
    want = {"tools": "changed", "system": "changed", "message": "changed"}.get(plant, plant)
    assert miss.reason == want, (plant, miss)
    assert miss.region == region
    assert miss.read < miss.expected
    if plant == "target":
        assert second.attempts[0].pinned and miss.previous_target != miss.target
