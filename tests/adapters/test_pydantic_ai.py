"""pydantic-ai agents on llmroute routes: each feature that touches the model (tools, output modes,
run_stream, built-in web search, thinking round-trip, errors, cancellation, usage and cost) on the
five protocols, over fake upstreams on 127.0.0.1 (``upstream.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("pydantic_ai", reason="the [pydantic-ai] extra is not installed")

from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput
from pydantic_ai import exceptions as pai_errors
from pydantic_ai import messages as pai
from pydantic_ai.capabilities import NativeTool
from pydantic_ai.native_tools import CodeExecutionTool, WebSearchTool

import llmroute
from llmroute.adapters.pydantic_ai import LLMRouteModel

from .upstream import PROTOCOLS, Call, Cite, Reply, Search, Text, Think, Upstream, text

pytestmark = pytest.mark.anyio

NO_RETRY = llmroute.RetryPolicy(max_retries=0)


class Weather(BaseModel):
    city: str
    celsius: int


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"22C and sunny in {city}"


def sent(up: Upstream, n: int) -> str:
    return json.dumps(up.requests[n].body)


async def run_agent(up: Upstream, protocol: str, prompt: str = "Weather in Paris?", **agent: Any) -> Any:
    settings = agent.pop("model_settings", None)
    history = agent.pop("message_history", None)
    async with llmroute.Client(retry=NO_RETRY) as client:
        model = LLMRouteModel(up.model(protocol), client=client)
        return await Agent(model, **agent).run(prompt, model_settings=settings, message_history=history)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_tools_run_and_their_results_go_back(protocol: str) -> None:
    replies = [Reply((Call("get_weather", {"city": "Paris"}, id="call_w1"),)), text("Sunny, 22C.")]
    with Upstream(replies) as up:
        result = await run_agent(up, protocol, tools=[get_weather])
    assert result.output == "Sunny, 22C."
    first, second = sent(up, 0), sent(up, 1)
    assert "get_weather" in first and "The weather in a city." in first
    assert "22C and sunny in Paris" in second and "call_w1" in second
    calls = [p for m in result.all_messages() for p in m.parts if isinstance(p, pai.ToolCallPart)]
    assert [(c.tool_name, c.args_as_dict(), c.tool_call_id) for c in calls] == [
        ("get_weather", {"city": "Paris"}, "call_w1")
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_tool_output_mode(protocol: str) -> None:
    replies = [Reply((Call("final_result", {"city": "Paris", "celsius": 22}),))]
    with Upstream(replies) as up:
        result = await run_agent(up, protocol, output_type=ToolOutput(Weather))
    assert result.output == Weather(city="Paris", celsius=22)
    assert "final_result" in sent(up, 0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_native_output_mode_sends_the_schema(protocol: str) -> None:
    with Upstream([text('{"city": "Paris", "celsius": 22}')]) as up:
        result = await run_agent(up, protocol, output_type=NativeOutput(Weather))
    assert result.output == Weather(city="Paris", celsius=22)
    body = sent(up, 0)
    assert "celsius" in body  # the schema went upstream (response_format, responseSchema, output_config, ...)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_prompted_output_mode(protocol: str) -> None:
    with Upstream([text('{"city": "Oslo", "celsius": -3}')]) as up:
        result = await run_agent(up, protocol, output_type=PromptedOutput(Weather))
    assert result.output == Weather(city="Oslo", celsius=-3)
    assert "celsius" in sent(up, 0)  # the instructions carry the schema


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_run_stream_yields_text_as_it_arrives(protocol: str) -> None:
    reply = Reply((Text("Hello "), Text("there, Paris.")), input_tokens=30, output_tokens=7)
    with Upstream([reply]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(LLMRouteModel(up.model(protocol), client=client))
            async with agent.run_stream("hi") as run:
                deltas = [d async for d in run.stream_text(delta=True, debounce_by=None)]
            usage = run.usage
    assert "".join(deltas) == "Hello there, Paris."
    assert usage.input_tokens == 30 and usage.output_tokens == 7


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_run_stream_structured_output(protocol: str) -> None:
    with Upstream([Reply((Call("final_result", {"city": "Rome", "celsius": 30}),))]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(LLMRouteModel(up.model(protocol), client=client), output_type=Weather)
            async with agent.run_stream("weather") as run:
                output = await run.get_output()
    assert output == Weather(city="Rome", celsius=30)


SEARCH = Search("paris weather", (("https://weather.example/paris", "Paris forecast"),))
CITED = Text(
    "It is sunny in Paris.", (Cite("https://weather.example/paris", "Paris forecast", 6, 11, "sunny"),)
)


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "bedrock"])
async def test_web_search_is_a_hosted_tool_with_its_results_and_citations(protocol: str) -> None:
    with Upstream([Reply((SEARCH, CITED))]) as up:
        tool = WebSearchTool() if protocol == "gemini" else WebSearchTool(max_uses=2)
        result = await run_agent(up, protocol, capabilities=[NativeTool(tool)])
    assert result.output == "It is sunny in Paris."
    body = sent(up, 0)
    assert any(marker in body for marker in ("web_search", "googleSearch", "openrouter:web_search"))
    response = result.all_messages()[-1]
    calls = [p for p in response.parts if isinstance(p, pai.NativeToolCallPart)]
    returns = [p for p in response.parts if isinstance(p, pai.NativeToolReturnPart)]
    assert [c.tool_name for c in calls] == ["web_search"]
    assert returns and returns[0].tool_call_id == calls[0].tool_call_id
    assert "https://weather.example/paris" in json.dumps(returns[0].content)
    (answer,) = [p for p in response.parts if isinstance(p, pai.TextPart)]
    cites = answer.provider_details["llmroute"]["citations"]  # type: ignore[index]
    assert [c["url"] for c in cites] == ["https://weather.example/paris"]
    if hasattr(answer, "citations"):
        assert answer.citations[0].sources[0].url == "https://weather.example/paris"  # type: ignore[attr-defined]


async def test_web_search_on_bedrock_converse_is_refused_by_name() -> None:
    with Upstream([]) as up, pytest.raises(pai_errors.UserError, match="WebSearchTool"):
        await run_agent(up, "bedrock", capabilities=[NativeTool(WebSearchTool())])
    assert not up.requests


@pytest.mark.parametrize("protocol", ["responses", "anthropic", "gemini", "bedrock"])
async def test_code_execution_is_lowered(protocol: str) -> None:
    with Upstream([text("done")]) as up:
        await run_agent(up, protocol, capabilities=[NativeTool(CodeExecutionTool())])
    body = sent(up, 0)
    assert any(k in body for k in ("code_execution", "codeExecution", "code_interpreter")), body


THINKING = {
    "chat": '"reasoning": {"effort": "low"}',
    "responses": '"reasoning": {"effort": "low"',
    "anthropic": '"budget_tokens": 2048',
    "gemini": '"thinkingBudget": 2048',
    "bedrock": '"budget_tokens": 2048',
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_thinking_setting_and_its_signature_round_trip(protocol: str) -> None:
    signature = f"sig-{protocol}-Zm9vYmFy"
    replies = [Reply((Think("Paris is in France.", signature), Text("Paris."))), text("Still Paris.")]
    with Upstream(replies) as up:
        first = await run_agent(up, protocol, model_settings={"thinking": "low"})
        thinking = [p for p in first.all_messages()[-1].parts if isinstance(p, pai.ThinkingPart)]
        assert [t.content for t in thinking] == ["Paris is in France."]
        second = await run_agent(up, protocol, "And now?", message_history=first.all_messages())
    assert second.output == "Still Paris."
    assert THINKING[protocol] in sent(up, 0).replace(", ", ", ")
    assert signature in sent(up, 1)  # the next turn sends the signature (or encrypted reasoning) back


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_refused_request_is_a_model_http_error(protocol: str) -> None:
    with (
        Upstream([Reply(status=400, error="bad things happened")]) as up,
        pytest.raises(pai_errors.ModelHTTPError) as caught,
    ):
        await run_agent(up, protocol)
    assert caught.value.status_code == 400
    assert isinstance(caught.value.__cause__, llmroute.LLMError)
    rejected = getattr(pai_errors, "ModelRequestRejectedError", None)
    if rejected is not None:
        assert isinstance(caught.value, rejected)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_rate_limit_is_retryable_for_the_framework(protocol: str) -> None:
    with (
        Upstream([Reply(status=429, error="slow down")]) as up,
        pytest.raises(pai_errors.ModelHTTPError) as caught,
    ):
        await run_agent(up, protocol)
    assert caught.value.status_code == 429
    limited = getattr(pai_errors, "ModelRateLimitError", None)
    if limited is not None:
        assert isinstance(caught.value, limited)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_leaving_run_stream_early_closes_the_upstream_socket(protocol: str) -> None:
    with Upstream([Reply((Text("Hello"), Text(" world")), hang=True)]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(LLMRouteModel(up.model(protocol), client=client))
            async with agent.run_stream("hi") as run:
                async for _ in run.stream_text(delta=True, debounce_by=None):
                    break
        assert up.disconnected.wait(10)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_usage_carries_cache_and_reasoning_tokens_and_the_cost(protocol: str) -> None:
    reply = Reply(
        (Think("hm"), Text("ok")), input_tokens=1000, output_tokens=50, cache_read=400, reasoning=20
    )
    with Upstream([reply]) as up:
        result = await run_agent(up, protocol)
    response = result.all_messages()[-1]
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (1000, 50, 400)
    if protocol in ("chat", "responses", "gemini"):  # the protocols that report reasoning tokens
        assert usage.details["reasoning_tokens"] == 20
    assert response.finish_reason == "stop"
    assert response.provider_details is not None
    cost = response.provider_details["llmroute"].get("cost")
    assert cost is None or float(cost["total"]) > 0


async def test_a_router_is_a_model_too() -> None:
    with Upstream([Reply(status=500, error="down"), text("from the fallback")]) as up:
        router = llmroute.Router(
            [llmroute.Target(up.model("anthropic")), llmroute.Target(up.model("gemini"), priority=1)]
        )
        result = await run_agent_on(router)
    assert result.output == "from the fallback"
    assert [r.protocol for r in up.requests] == ["anthropic", "gemini"]


async def run_agent_on(target: Any) -> Any:
    async with llmroute.Client(retry=NO_RETRY) as client:
        return await Agent(LLMRouteModel(target, client=client)).run("hi")


async def test_a_wrong_model_is_named() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="model: expected an llmroute Model"):
        LLMRouteModel("gpt-4o")  # type: ignore[arg-type]


async def test_the_model_makes_and_closes_its_own_client() -> None:
    with Upstream([text("hello")]) as up:
        model = LLMRouteModel(up.model("anthropic"))
        async with model:
            result = await Agent(model).run("hi")
    assert result.output == "hello"
