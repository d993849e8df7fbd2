"""openai-agents runs on llmroute routes: tools, handoffs, structured output, Runner.run_streamed,
hosted web search, reasoning round-trip, errors with retry advice, cancellation and tracing, on
the five protocols over fake upstreams on 127.0.0.1 (``upstream.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("agents", reason="the [agents] extra is not installed")

from agents import Agent, ModelSettings, RunConfig, Runner, WebSearchTool, function_tool
from agents.models.interface import ModelTracing
from agents.retry import ModelRetryAdviceRequest
from agents.tracing import TracingProcessor, set_trace_processors
from openai.types.responses import ResponseTextDeltaEvent
from openai.types.shared import Reasoning

import llmroute
from llmroute.adapters.openai_agents import LLMRouteAgentsModel, LLMRouteModelProvider

from .upstream import PROTOCOLS, Call, Cite, Reply, Search, Text, Think, Upstream, text

pytestmark = pytest.mark.anyio

NO_RETRY = llmroute.RetryPolicy(max_retries=0)


class Collector(TracingProcessor):
    def __init__(self) -> None:
        self.spans: list[Any] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self.spans.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@pytest.fixture(autouse=True)
def collector() -> Iterator[Collector]:
    # no span leaves the process: the default exporter is replaced for these tests
    spans = Collector()
    set_trace_processors([spans])
    yield spans
    set_trace_processors([])


class Weather(BaseModel):
    city: str
    celsius: int


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"22C and sunny in {city}"


def sent(up: Upstream, n: int) -> str:
    return json.dumps(up.requests[n].body)


async def run(up: Upstream, protocol: str, prompt: Any = "Weather in Paris?", **agent: Any) -> Any:
    async with llmroute.Client(retry=NO_RETRY) as client:
        model = LLMRouteAgentsModel(up.model(protocol), client=client)
        return await Runner.run(Agent(name="assistant", model=model, **agent), prompt)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_tools_run_and_their_results_go_back(protocol: str) -> None:
    replies = [Reply((Call("get_weather", {"city": "Paris"}, id="call_w1"),)), text("Sunny, 22C.")]
    with Upstream(replies) as up:
        result = await run(up, protocol, tools=[get_weather])
    assert result.final_output == "Sunny, 22C."
    assert "The weather in a city." in sent(up, 0)
    assert "22C and sunny in Paris" in sent(up, 1) and "call_w1" in sent(up, 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_handoffs_are_tools_and_the_other_agent_answers(protocol: str) -> None:
    replies = [Reply((Call("transfer_to_weather_desk", {}, id="call_h1"),)), text("Weather desk here.")]
    with Upstream(replies) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            model = LLMRouteAgentsModel(up.model(protocol), client=client)
            desk = Agent(name="weather desk", model=model, instructions="You are the weather desk.")
            triage = Agent(name="triage", model=model, handoffs=[desk])
            result = await Runner.run(triage, "weather?")
    assert result.final_output == "Weather desk here."
    assert result.last_agent.name == "weather desk"
    assert "transfer_to_weather_desk" in sent(up, 0)
    assert "You are the weather desk." in sent(up, 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_structured_output(protocol: str) -> None:
    with Upstream([text('{"city": "Paris", "celsius": 22}')]) as up:
        result = await run(up, protocol, output_type=Weather)
    assert result.final_output == Weather(city="Paris", celsius=22)
    assert "celsius" in sent(up, 0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_run_streamed_yields_text_deltas_then_the_result(protocol: str) -> None:
    reply = Reply((Text("Hello there."),), input_tokens=30, output_tokens=7, cache_read=10)
    with Upstream([reply]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(name="a", model=LLMRouteAgentsModel(up.model(protocol), client=client))
            streamed = Runner.run_streamed(agent, "hi")
            deltas = [
                e.data.delta
                async for e in streamed.stream_events()
                if e.type == "raw_response_event" and isinstance(e.data, ResponseTextDeltaEvent)
            ]
    assert "".join(deltas) == "Hello there."
    assert streamed.final_output == "Hello there."
    usage = streamed.context_wrapper.usage
    assert (usage.input_tokens, usage.output_tokens) == (30, 7)
    assert usage.input_tokens_details.cached_tokens == 10


SEARCH = Search("paris weather", (("https://weather.example/paris", "Paris forecast"),))
CITED = Text(
    "It is sunny in Paris.", (Cite("https://weather.example/paris", "Paris forecast", 6, 11, "sunny"),)
)


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "bedrock"])
async def test_web_search_is_hosted_and_cited(protocol: str) -> None:
    with Upstream([Reply((SEARCH, CITED)), text("Still sunny.")]) as up:
        first = await run(up, protocol, tools=[WebSearchTool()])
        items = [i.raw_item for i in first.new_items]
        searches = [i for i in items if getattr(i, "type", None) == "web_search_call"]
        assert searches and searches[0].action.sources[0].url == "https://weather.example/paris"  # type: ignore[union-attr]
        messages = [i for i in items if getattr(i, "type", None) == "message"]
        annotations = messages[-1].content[0].annotations  # type: ignore[union-attr]
        assert [a.url for a in annotations] == ["https://weather.example/paris"]
        await run(up, protocol, [*first.to_input_list(), {"role": "user", "content": "And now?"}])
    assert first.final_output == "It is sunny in Paris."
    assert any(m in sent(up, 0) for m in ("web_search", "googleSearch", "openrouter:web_search"))
    if protocol == "anthropic":  # the hosted call and its encrypted results go back as they came
        assert "EqgfCioIARgB" in sent(up, 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_reasoning_round_trips_with_its_signature(protocol: str) -> None:
    signature = f"sig-{protocol}-Zm9vYmFy"
    with Upstream([Reply((Think("Paris is in France.", signature), Text("Paris."))), text("Yes.")]) as up:
        settings = ModelSettings(reasoning=Reasoning(effort="low"))
        first = await run(up, protocol, model_settings=settings)
        await run(up, protocol, [*first.to_input_list(), {"role": "user", "content": "Sure?"}])
    reasoning = [i.raw_item for i in first.new_items if getattr(i.raw_item, "type", None) == "reasoning"]
    assert reasoning and reasoning[0].summary[0].text == "Paris is in France."  # type: ignore[union-attr]
    assert signature in sent(up, 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_errors_stay_typed_and_advise_the_retry_policy(protocol: str) -> None:
    with Upstream([Reply(status=429, error="slow down"), Reply(status=400, error="bad")]) as up:
        with pytest.raises(llmroute.RateLimitError) as limited:
            await run(up, protocol)
        with pytest.raises(llmroute.InvalidRequestError) as refused:
            await run(up, protocol)
    model = LLMRouteAgentsModel(up.model(protocol))
    advice = model.get_retry_advice(ModelRetryAdviceRequest(error=limited.value, attempt=1, stream=False))
    assert advice is not None and advice.suggested is True
    advice = model.get_retry_advice(ModelRetryAdviceRequest(error=refused.value, attempt=1, stream=False))
    assert advice is not None and advice.suggested is False


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_cancelling_a_streamed_run_closes_the_upstream_socket(protocol: str) -> None:
    with Upstream([Reply((Text("Hello"), Text(" world")), hang=True)]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(name="a", model=LLMRouteAgentsModel(up.model(protocol), client=client))
            streamed = Runner.run_streamed(agent, "hi")
            async for event in streamed.stream_events():
                if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
                    streamed.cancel()
        assert up.disconnected.wait(10)


async def test_generation_spans_carry_model_input_output_and_usage(collector: Collector) -> None:
    with Upstream([text("traced", input_tokens=12, output_tokens=3)]) as up:
        await run(up, "anthropic")
    (span,) = [s for s in collector.spans if s.span_data.type == "generation"]
    assert span.span_data.model == "claude-sonnet-4-5"
    assert span.span_data.usage["input_tokens"] == 12
    assert span.span_data.output[0]["content"][0]["text"] == "traced"


async def test_disabled_tracing_records_no_generation_span(collector: Collector) -> None:
    with Upstream([text("quiet")]) as up:
        async with llmroute.Client(retry=NO_RETRY) as client:
            agent = Agent(name="a", model=LLMRouteAgentsModel(up.model("gemini"), client=client))
            await Runner.run(agent, "hi", run_config=RunConfig(tracing_disabled=True))
    assert not [s for s in collector.spans if s.span_data.type == "generation"]


async def test_the_provider_hands_out_models_by_name() -> None:
    with Upstream([text("from fast")]) as up:
        provider = LLMRouteModelProvider(
            {"fast": up.model("gemini"), "smart": up.model("anthropic")}, default="fast"
        )
        result = await Runner.run(Agent(name="a"), "hi", run_config=RunConfig(model_provider=provider))
        await provider.aclose()
    assert result.final_output == "from fast"
    assert up.requests[0].protocol == "gemini"
    with pytest.raises(Exception, match="serves"):
        provider.get_model("missing")


async def test_server_state_is_refused_by_name() -> None:
    model = LLMRouteAgentsModel(llmroute.Router([llmroute.Target(Upstream().model("chat"))]))
    with pytest.raises(Exception, match="previous_response_id"):
        await model.get_response(
            None, "hi", ModelSettings(), [], None, [], ModelTracing.DISABLED, previous_response_id="resp_1"
        )
