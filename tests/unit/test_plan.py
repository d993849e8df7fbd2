"""A model call is resolved once (``route.plan.Plan``): one model lookup and one merge of layered
options per step, however many attempts it takes and with telemetry on (issue #27). Counted with a
profiler on the two functions' code, so a lookup through any import path counts."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.route.model import model_of
from llmroute.route.plan import Plan
from llmroute.schema.options import GenerationOptions, merge_generation

pytestmark = pytest.mark.anyio


class City(msgspec.Struct):
    city: str


@llmroute.tool(description="Weather in a city.")
async def weather(args: City) -> str:
    return f"sunny in {args.city}"


def _sse(*chunks: dict[str, Any]) -> bytes:
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


CALL = _sse(
    {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                        }
                    ],
                },
            }
        ]
    },
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
)
TEXT = _sse(
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sunny."}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
)


def _client(*replies: tuple[int, bytes]) -> llmroute.Client:
    queue = list(replies)

    def handler(_request: httpx.Request) -> httpx.Response:
        status, body = queue.pop(0)
        return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return llmroute.Client(http=http, retry=llmroute.RetryPolicy(initial_backoff=0.0, jitter=0.0))


def _model() -> llmroute.Model:
    model = openai.configure(api_key="sk-test", base_url="http://llm.test/v1").chat("gpt-4o-mini")
    return model.with_(defaults=GenerationOptions(temperature=0.5))


@contextmanager
def _counting() -> Iterator[dict[str, int]]:
    codes = {model_of.__code__: "model_of", merge_generation.__code__: "merge_generation"}
    counts = dict.fromkeys(codes.values(), 0)

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            counts[codes[frame.f_code]] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


async def test_a_tool_loop_resolves_each_step_once() -> None:
    request = llmroute.request(_model(), prompt="Weather in Oslo?")
    async with _client((200, CALL), (200, TEXT)) as client:
        with _counting() as counts:
            response = await client.generate(request, tools=[weather])
    assert response.text == "Sunny." and len(response.steps) == 2
    assert counts == {"model_of": 2, "merge_generation": 2}  # one per step


async def test_a_retried_call_is_not_resolved_again() -> None:
    request = llmroute.request(_model(), prompt="hi")
    async with _client((529, b'{"error": {"message": "overloaded"}}'), (200, TEXT)) as client:
        with _counting() as counts:
            response = await client.generate(request)
    assert response.text == "Sunny."
    assert counts == {"model_of": 1, "merge_generation": 1}  # two attempts, one plan


async def test_telemetry_reads_the_plan_s_options() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from llmroute import telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    try:
        async with _client((200, TEXT)) as client:
            with _counting() as counts:
                await client.generate(llmroute.request(_model(), prompt="hi"))
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    assert counts == {"model_of": 1, "merge_generation": 1}
    (span,) = [
        s for s in exporter.get_finished_spans() if s.attributes and "gen_ai.request.model" in s.attributes
    ]
    assert span.attributes is not None and span.attributes["gen_ai.request.temperature"] == 0.5  # the model's


def test_a_plan_holds_the_layered_options_and_the_router_s_first_choice() -> None:
    model = _model()
    plan = Plan.of(llmroute.request(model, prompt="hi", generation=GenerationOptions(stream=False)))
    assert plan.model is model and plan.route is model.route
    assert plan.generation == GenerationOptions(temperature=0.5, stream=False)
    assert plan.resolved.generation == plan.generation and not plan.streaming
    assert plan.step is model.route.protocol.whole
    router = llmroute.Router([model, _model().with_(id="gpt-4o")])
    shown = Plan.of(llmroute.request(router, prompt="hi"))
    assert shown.model is router.models()[0] and shown.resolved.model is shown.model
    assert shown.request.model is router  # the request as built stays as it was
