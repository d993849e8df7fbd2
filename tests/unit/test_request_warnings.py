"""Options a route leaves out are reported, not dropped in silence (issue #21): on
``PreparedRequest.warnings``, on the ``step-start`` event of ``client.stream`` and on
``LLMResponse.warnings``; options whose absence would change the answer are refused before sending."""

from __future__ import annotations

import httpx
import pytest

import llmroute
from llmroute import hosted
from llmroute.providers import anthropic, bedrock, google, openai, vertex
from llmroute.testing import ReplayTransport

from ..helpers import load

pytestmark = pytest.mark.anyio

TEXT = "opencode/anthropic-messages/streams-text.yaml"


def _claude() -> llmroute.Model:
    return anthropic.configure(api_key="sk-ant-test").messages("claude-haiku-4-5")


async def test_prepare_reports_what_it_left_out() -> None:
    model = openai.configure(api_key="sk-test").responses("gpt-5")
    generation = llmroute.GenerationOptions(seed=7, stop=("END",), top_k=5, temperature=0.5)
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model, prompt="hi", generation=generation))
    body = prepared.json()
    assert body["temperature"] == 0.5
    assert not {"seed", "stop", "top_k"} & set(body)
    assert [w.option for w in prepared.warnings] == ["generation.top_k", "generation.seed", "generation.stop"]
    assert all(w.route == "openai-responses" for w in prepared.warnings)
    assert str(prepared.warnings[1]) == "openai-responses: generation.seed not sent: Responses has no seed"


async def test_openai_chat_top_k_and_anthropic_penalties() -> None:
    chat = openai.configure(api_key="sk-test").chat("gpt-4.1")
    async with llmroute.Client() as client:
        prepared = await client.prepare(
            llmroute.request(chat, prompt="hi", generation=llmroute.GenerationOptions(top_k=3, seed=1))
        )
        assert "top_k" not in prepared.json() and prepared.json()["seed"] == 1
        assert [w.option for w in prepared.warnings] == ["generation.top_k"]
        generation = llmroute.GenerationOptions(frequency_penalty=0.5, presence_penalty=0.1, seed=3)
        prepared = await client.prepare(llmroute.request(_claude(), prompt="hi", generation=generation))
        assert [w.option for w in prepared.warnings] == [
            "generation.frequency_penalty",
            "generation.presence_penalty",
            "generation.seed",
        ]


async def test_stream_and_response_carry_the_warnings() -> None:
    request = llmroute.request(_claude(), prompt="hi", generation=llmroute.GenerationOptions(seed=7))
    transport = ReplayTransport(load(TEXT))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        events = [e async for e in client.stream(request)]
        start = events[0]
        assert isinstance(start, llmroute.StepStart)
        assert [w.option for w in start.warnings] == ["generation.seed"]
    async with llmroute.Client(http=httpx.AsyncClient(transport=ReplayTransport(load(TEXT)))) as client:
        response = await client.generate(request)
    assert [w.option for w in response.warnings] == ["generation.seed"]
    assert response.text  # the answer itself is untouched


async def test_gemini_cache_policy_is_warned_not_sent() -> None:
    model = google.configure(api_key="k").gemini("gemini-2.5-flash")
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model, prompt="hi", cache=llmroute.CachePolicy()))
    assert [w.option for w in prepared.warnings] == ["cache"]


async def test_vertex_refuses_file_search_and_bedrock_refuses_mcp() -> None:
    gemini = vertex.configure(project="p", location="us-central1", access_token="t").gemini(
        "gemini-2.5-flash"
    )
    claude = bedrock.configure("us-east-1", api_key="k").anthropic(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    mcp = hosted.mcp(server_label="docs", server_url="https://mcp.example.invalid/sse")
    async with llmroute.Client() as client:
        with pytest.raises(llmroute.InvalidRequestError, match=r"vertex-gemini has no hosted 'file_search'"):
            await client.prepare(llmroute.request(gemini, prompt="hi", tools=[hosted.file_search()]))
        with pytest.raises(
            llmroute.InvalidRequestError, match=r"bedrock-anthropic-messages has no hosted 'mcp'"
        ):
            await client.prepare(llmroute.request(claude, prompt="hi", tools=[mcp]))
        with pytest.raises(
            llmroute.InvalidRequestError, match=r"provider_options.mcp_servers.*MCP connector"
        ):
            servers = {"bedrock": {"mcp_servers": [{"type": "url", "url": "https://m.invalid", "name": "m"}]}}
            await client.prepare(llmroute.request(claude, prompt="hi", provider_options=servers))
        # the same hosted tool on the Gemini API and Anthropic's own API is lowered
        google_model = google.configure(api_key="k").gemini("gemini-2.5-flash")
        assert "fileSearch" in str(
            (
                await client.prepare(
                    llmroute.request(
                        google_model, prompt="hi", tools=[hosted.file_search(vector_store_ids=["s"])]
                    )
                )
            ).json()
        )
        assert (await client.prepare(llmroute.request(_claude(), prompt="hi", tools=[mcp]))).json()[
            "mcp_servers"
        ]
