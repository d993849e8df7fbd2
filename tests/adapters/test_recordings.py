"""Real recorded provider streams from the corpus (``cassettes/``), replayed through each framework
and its adapter: what the framework ends up holding (text, reasoning, tool calls, hosted calls,
usage) equals llmroute's own response to the same bytes, on every protocol."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import llmroute
from llmroute.cli.demo import load_recording
from llmroute.providers.registry import PROTOCOLS as REGISTERED
from llmroute.testing import Cassette, ReplayTransport

from ..helpers import CASSETTES

pytestmark = pytest.mark.anyio

SAMPLES = {entry.name: entry.sample for entry in REGISTERED}

# (protocol, recording): a recording's path under cassettes/, or a bundled demo recording's name
RECORDINGS = [
    ("openai-chat", "opencode/openai-chat/streams-text.yaml"),
    ("openai-chat", "opencode/openai-chat/streams-tool-call.yaml"),
    ("openai-responses", "opencode/openai-responses/gpt-5-5-streams-tool-call.yaml"),
    ("openai-responses", "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml"),
    ("openai-responses", "vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml"),
    ("openai-responses", "vercel-ai/openai/responses/openai-reasoning-encrypted-content.1.chunks.yaml"),
    ("anthropic-messages", "opencode/anthropic-messages/streams-tool-call.yaml"),
    ("anthropic-messages", "vercel-ai/anthropic/anthropic-clear-thinking.1.chunks.yaml"),
    ("anthropic-messages", "demo:anthropic-web-search"),
    ("gemini", "opencode/gemini/streams-tool-call.yaml"),
    ("gemini", "vercel-ai/google/google-reasoning.chunks.yaml"),
    ("gemini", "demo:gemini-grounding"),
    ("bedrock-converse", "opencode/bedrock-converse/streams-a-tool-call.yaml"),
    ("bedrock-converse", "vercel-ai/amazon-bedrock/amazon-bedrock-reasoning.chunks.yaml"),
]
IDS = [f"{protocol}:{path.rsplit('/', 1)[-1]}" for protocol, path in RECORDINGS]


def cassette(path: str) -> Cassette:
    if path.startswith("demo:"):
        return load_recording(path[5:])
    return Cassette.load(CASSETTES / path)


def client_for(path: str) -> llmroute.Client:
    transport = ReplayTransport(cassette(path), check_url=False)
    return llmroute.Client(
        http=httpx.AsyncClient(transport=transport), retry=llmroute.RetryPolicy(max_retries=0)
    )


async def ours(protocol: str, path: str) -> tuple[llmroute.Model, llmroute.LLMResponse]:
    model = SAMPLES[protocol]("http://recorded.invalid")
    async with client_for(path) as client:
        return model, await client.generate(llmroute.request(model=model, prompt="hi"))


def expected(response: llmroute.LLMResponse) -> dict[str, Any]:
    usage = response.usage or llmroute.Usage()
    return {
        "text": response.text,
        "reasoning": response.reasoning,
        "calls": [(c.id, c.name, c.input) for c in response.tool_calls if not c.provider_executed],
        "hosted": [c.name for c in response.tool_calls if c.provider_executed],
        "usage": (usage.input_tokens or 0, usage.output_tokens or 0, usage.cache_read_tokens or 0),
    }


@pytest.mark.parametrize(("protocol", "path"), RECORDINGS, ids=IDS)
async def test_pydantic_ai_holds_what_llmroute_folds(protocol: str, path: str) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import messages as pai
    from pydantic_ai.models import ModelRequestParameters

    from llmroute.adapters.pydantic_ai import LLMRouteModel

    model, response = await ours(protocol, path)
    async with client_for(path) as client:
        got = await LLMRouteModel(model, client=client).request(
            [pai.ModelRequest(parts=[pai.UserPromptPart("hi")])], None, ModelRequestParameters()
        )
    parts = got.parts
    assert {
        "text": "".join(p.content for p in parts if isinstance(p, pai.TextPart)),
        "reasoning": "".join(p.content for p in parts if isinstance(p, pai.ThinkingPart)),
        "calls": [
            (p.tool_call_id, p.tool_name, p.args_as_dict()) for p in parts if isinstance(p, pai.ToolCallPart)
        ],
        "hosted": [p.tool_name for p in parts if isinstance(p, pai.NativeToolCallPart)],
        "usage": (got.usage.input_tokens, got.usage.output_tokens, got.usage.cache_read_tokens),
    } == expected(response)
    signatures = [e.signature or e.encrypted for e in response.events if e.type == "reasoning-end"]
    assert [p.signature for p in parts if isinstance(p, pai.ThinkingPart)] == signatures


@pytest.mark.parametrize(("protocol", "path"), RECORDINGS, ids=IDS)
async def test_openai_agents_holds_what_llmroute_folds(protocol: str, path: str) -> None:
    pytest.importorskip("agents")
    from agents import ModelSettings
    from agents.models.interface import ModelTracing

    from llmroute.adapters.openai_agents import LLMRouteAgentsModel

    model, response = await ours(protocol, path)
    async with client_for(path) as client:
        got = await LLMRouteAgentsModel(model, client=client).get_response(
            None, "hi", ModelSettings(), [], None, [], ModelTracing.DISABLED
        )
    items = got.output
    texts = [c.text for i in items if i.type == "message" for c in i.content if c.type == "output_text"]  # type: ignore[union-attr]
    summaries = [s.text for i in items if i.type == "reasoning" for s in i.summary]  # type: ignore[union-attr]
    calls = [(i.call_id, i.name, json.loads(i.arguments)) for i in items if i.type == "function_call"]  # type: ignore[union-attr]
    hosted = [
        i.provider_data["llmroute"]["call"]["name"]
        for i in items
        if hasattr(i, "provider_data") and "call" in i.provider_data.get("llmroute", {})
    ]  # type: ignore[attr-defined]
    usage = got.usage
    assert {
        "text": "".join(texts),
        "reasoning": "".join(summaries),
        "calls": calls,
        "hosted": hosted,
        "usage": (usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens),
    } == expected(response)


@pytest.mark.parametrize(("protocol", "path"), RECORDINGS, ids=IDS)
async def test_langchain_holds_what_llmroute_folds(protocol: str, path: str) -> None:
    pytest.importorskip("langchain_core")
    from llmroute.adapters.langchain import ChatLLMRoute

    model, response = await ours(protocol, path)
    async with client_for(path) as client:
        got = await ChatLLMRoute(model=model, client=client).ainvoke("hi")
    blocks = got.content_blocks
    usage = got.usage_metadata or {}
    assert {
        "text": got.text,
        "reasoning": "".join(str(b.get("reasoning", "")) for b in blocks if b["type"] == "reasoning"),
        "calls": [(c["id"], c["name"], c["args"]) for c in got.tool_calls],
        "hosted": [b["name"] for b in blocks if b["type"] == "server_tool_call"],  # type: ignore[typeddict-item]
        "usage": (
            usage.get("input_tokens", 0),
            usage.get("output_tokens", 0),
            usage.get("input_token_details", {}).get("cache_read", 0),
        ),
    } == expected(response)
