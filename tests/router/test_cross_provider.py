"""A tool loop that starts on an Anthropic-shaped upstream and, after a fallback, continues on an
OpenAI-shaped one: the history it sends holds nothing only Anthropic may receive."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target

from ..reliability.server import FaultServer
from .upstreams import (
    anthropic_overloaded,
    anthropic_text,
    anthropic_thinking_tool_call,
    chat_model,
    claude_model,
    error,
    gemini_model,
    gemini_thinking_tool_call,
    ok,
)

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]


@llmroute.tool
def lookup(q: str) -> str:
    """Look a word up."""
    return f"definition of {q}"


def _router(claude: FaultServer, gpt: FaultServer) -> Router:
    return Router(
        [Target(claude_model(claude), name="claude"), Target(chat_model(gpt), name="gpt", priority=1)]
    )


async def test_tool_loop_continues_on_openai_after_anthropic_fails(servers: Servers) -> None:
    claude, gpt = servers(), servers()
    claude.add(anthropic_thinking_tool_call("toolu_01", "lookup", {"q": "router"}), anthropic_overloaded())
    gpt.add(ok("final answer"))
    request = llmroute.request(model=_router(claude, gpt), prompt="What is a router?")
    async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
        response = await client.generate(request, tools=[lookup])

    assert response.text == "final answer"
    assert [s.target for s in response.steps] == ["claude", "gpt"]
    assert [(a.target, a.error, a.status) for a in response.attempts] == [
        ("claude", "ProviderInternalError", 529)
    ]

    sent = gpt.received[0].body.decode()
    assert "SIG-ANTHROPIC-ONLY" not in sent and "I should look it up" not in sent
    assert "llmroute" not in sent  # the router's own marks never go on the wire
    messages = json.loads(sent)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    call = messages[1]["tool_calls"][0]
    assert call["id"] == "toolu_01" and call["function"]["name"] == "lookup"
    assert json.loads(call["function"]["arguments"]) == {"q": "router"}
    assert messages[2] == {"role": "tool", "tool_call_id": "toolu_01", "content": "definition of router"}


async def test_the_same_provider_keeps_its_signature(servers: Servers) -> None:
    claude, gpt = servers(), servers()
    claude.add(anthropic_thinking_tool_call("toolu_01", "lookup", {"q": "router"}))
    claude.add(anthropic_thinking_tool_call("toolu_02", "lookup", {"q": "again"}))
    request = llmroute.request(model=_router(claude, gpt), prompt="What is a router?")
    async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
        await client.generate(request, tools=[lookup], stop_when=llmroute.step_count_is(2))
    body = json.loads(claude.received[1].body)
    thinking = body["messages"][1]["content"][0]
    assert thinking == {
        "type": "thinking",
        "thinking": "I should look it up.",
        "signature": "SIG-ANTHROPIC-ONLY",
    }
    assert "llmroute" not in claude.received[1].body.decode()
    assert gpt.received == []


async def test_a_gemini_signature_never_reaches_anthropic(servers: Servers) -> None:
    # Anthropic's lowering would send any signature it is given: the router must drop Gemini's
    gemini, claude = servers(), servers()
    gemini.add(gemini_thinking_tool_call("lookup", {"q": "router"}), error(503))
    claude.add(anthropic_text("final from claude"))
    router = Router(
        [Target(gemini_model(gemini), name="gemini"), Target(claude_model(claude), name="claude", priority=1)]
    )
    request = llmroute.request(model=router, prompt="What is a router?")
    async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
        response = await client.generate(request, tools=[lookup])
    assert response.text == "final from claude"
    sent = claude.received[0].body.decode()
    assert "SIG-GEMINI" not in sent and "Gemini thinks." not in sent and "llmroute" not in sent
    messages = json.loads(sent)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use"]
    assert messages[1]["content"][0]["input"] == {"q": "router"}
    assert messages[2]["content"][0]["type"] == "tool_result"
