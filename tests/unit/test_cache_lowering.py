"""One ``CachePolicy``, lowered by each route in its provider's terms (prepared bytes, no network):
breakpoints with their TTL where caching is explicit; a warning naming each part a route cannot
honour."""

from __future__ import annotations

import json
from typing import Any

import pytest

import llmroute
from llmroute import CachePolicy
from llmroute.providers import anthropic, bedrock

pytestmark = pytest.mark.anyio


def _claude() -> llmroute.Model:
    return anthropic.configure(api_key="sk-ant-test").messages("claude-sonnet-4-5")


def _converse() -> llmroute.Model:
    return bedrock.configure("us-east-1", api_key="k").converse(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )


def _bedrock_claude() -> llmroute.Model:
    """Anthropic's own Messages body on Bedrock (``invoke``)."""
    return bedrock.configure("us-east-1", api_key="k").anthropic(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )


async def _prepare(model: llmroute.Model, cache: CachePolicy, **kw: Any) -> tuple[dict[str, Any], list[str]]:
    kw.setdefault("prompt", "hi")
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model, system="Be brief.", cache=cache, **kw))
    return json.loads(prepared.body), [f"{w.option}: {w.message}" for w in prepared.warnings]


@pytest.mark.parametrize("model", [_claude, _bedrock_claude], ids=["anthropic", "bedrock-invoke"])
async def test_anthropic_breakpoints_carry_the_ttl(model: Any) -> None:
    body, warnings = await _prepare(model(), CachePolicy(ttl="1h"))
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert warnings == []


async def test_a_day_on_anthropic_is_its_longest_hour_and_says_so() -> None:
    body, warnings = await _prepare(_claude(), CachePolicy(ttl="24h"))
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert warnings == ["cache.ttl: Anthropic keeps a cached prefix at most an hour: sent as 1h"]


async def test_anthropic_has_no_cache_key_nor_explicit_cache_to_create() -> None:
    body, warnings = await _prepare(_claude(), CachePolicy(key="team-7", explicit=True))
    assert "team-7" not in json.dumps(body)
    assert warnings == [
        "cache.key: Anthropic caches by breakpoints, not by a key",
        "cache.explicit: Anthropic caches what its breakpoints mark; there is no separate cache to create",
    ]


async def test_bedrock_cache_points_carry_the_ttl() -> None:
    body, warnings = await _prepare(_converse(), CachePolicy(ttl="24h"))
    assert body["system"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert body["messages"][-1]["content"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert warnings == ["cache.ttl: Bedrock Converse keeps a cached prefix at most an hour: sent as 1h"]


async def test_a_session_is_never_sent_where_the_provider_has_no_affinity_hint() -> None:
    plain, _ = await _prepare(_claude(), CachePolicy())
    with_session, warnings = await _prepare(_claude(), CachePolicy(), session="conv-42")
    assert with_session == plain and warnings == []
