"""The framework adapters' overhead, beside each framework's own OpenAI model on the same bytes.

    .venv/bin/python tests/bench/bench_adapters.py [events] [calls]

One recorded OpenAI Chat stream (``opencode/openai-chat/streams-text.yaml``, lengthened to
``events`` text deltas by ``_workloads``) is served from 127.0.0.1 by ``_loopback`` in its own
process, so the CPU time measured (``time.process_time``) is the client's alone. Each framework
streams it twice: through its native model (pydantic-ai ``OpenAIChatModel``, openai-agents
``OpenAIChatCompletionsModel``, langchain-openai ``ChatOpenAI``, all on the official ``openai``
SDK) and through llmroute's adapter over an OpenAI-compatible Chat route; llmroute's own
``Client.stream`` is the floor under every adapter. Per event: CPU microseconds per text delta on
the long stream. Per call: CPU microseconds per call of a 20-delta stream, ``calls`` times.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute.providers import compatible
from tests.bench._loopback import serve

KEY = "sk-bench-0123456789"
MODEL = "gpt-4o-mini"
SHORT = 20


def _llm(base: str) -> llmroute.Model:
    return compatible.configure(base_url=base, api_key=KEY).model(MODEL)


async def _cpu(fn: Callable[[], Awaitable[int]], runs: int) -> tuple[float, int]:
    """Median CPU seconds of ``fn`` over ``runs`` (after one warm-up), and its count."""
    await fn()
    times: list[float] = []
    count = 0
    for _ in range(runs):
        start = time.process_time()
        count = await fn()
        times.append(time.process_time() - start)
    return statistics.median(times), count


# -- one streamed call per framework, native and adapter --------------------------------------------


def llmroute_call(base: str, client: llmroute.Client) -> Callable[[], Awaitable[int]]:
    request = llmroute.request(model=_llm(base), prompt="hi")

    async def run() -> int:
        n = 0
        async for _ in client.stream(request):
            n += 1
        return n

    return run


def sdk_call(base: str) -> Callable[[], Awaitable[int]]:
    from openai import AsyncOpenAI

    sdk = AsyncOpenAI(base_url=base, api_key=KEY)

    async def run() -> int:
        n = 0
        stream = await sdk.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for _ in stream:
            n += 1
        return n

    return run


def pydantic_ai_calls(base: str, client: llmroute.Client) -> dict[str, Callable[[], Awaitable[int]]]:
    from openai import AsyncOpenAI
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from llmroute.adapters.pydantic_ai import LLMRouteModel

    native = OpenAIChatModel(
        MODEL, provider=OpenAIProvider(openai_client=AsyncOpenAI(base_url=base, api_key=KEY))
    )
    adapter = LLMRouteModel(_llm(base), client=client)
    messages: list[Any] = [ModelRequest(parts=[UserPromptPart("hi")])]

    def call(model: Any) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            n = 0
            async with model.request_stream(messages, None, ModelRequestParameters()) as stream:
                async for _ in stream:
                    n += 1
            return n

        return run

    return {"native": call(native), "adapter": call(adapter)}


def agents_calls(base: str, client: llmroute.Client) -> dict[str, Callable[[], Awaitable[int]]]:
    from agents import ModelSettings
    from agents.models.interface import ModelTracing
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    from llmroute.adapters.openai_agents import LLMRouteAgentsModel

    native = OpenAIChatCompletionsModel(MODEL, openai_client=AsyncOpenAI(base_url=base, api_key=KEY))
    adapter = LLMRouteAgentsModel(_llm(base), client=client)

    def call(model: Any) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            n = 0
            events = model.stream_response(
                None,
                "hi",
                ModelSettings(),
                [],
                None,
                [],
                ModelTracing.DISABLED,
                previous_response_id=None,
                conversation_id=None,
                prompt=None,
            )
            async for _ in events:
                n += 1
            return n

        return run

    return {"native": call(native), "adapter": call(adapter)}


def langchain_calls(base: str, client: llmroute.Client) -> dict[str, Callable[[], Awaitable[int]]]:
    from langchain_openai import ChatOpenAI

    from llmroute.adapters.langchain import ChatLLMRoute

    native = ChatOpenAI(model=MODEL, base_url=base, api_key=KEY, stream_usage=True)  # type: ignore[arg-type]
    adapter = ChatLLMRoute(model=_llm(base), client=client)

    def call(model: Any) -> Callable[[], Awaitable[int]]:
        async def run() -> int:
            n = 0
            async for _ in model.astream("hi"):
                n += 1
            return n

        return run

    return {"native": call(native), "adapter": call(adapter)}


FRAMEWORKS = {
    "pydantic-ai (OpenAIChatModel)": pydantic_ai_calls,
    "openai-agents (OpenAIChatCompletionsModel)": agents_calls,
    "langchain (ChatOpenAI)": langchain_calls,
}


async def _per_call(fn: Callable[[], Awaitable[int]], calls: int) -> float:
    async def many() -> int:
        for _ in range(calls):
            await fn()
        return calls

    seconds, _ = await _cpu(many, 3)
    return seconds / calls


async def main(events: int, calls: int) -> None:
    with serve() as origin:
        long_base = f"{origin}/chat/bulk/{events}/0/v1"
        short_base = f"{origin}/chat/bulk/{SHORT}/0/v1"
        async with llmroute.Client() as client:
            floor_event = (await _cpu(llmroute_call(long_base, client), 5))[0] / events
            floor_call = await _per_call(llmroute_call(short_base, client), calls)
            print(
                f"{events} text deltas per long stream; {calls} calls of {SHORT} deltas; CPU time of the client"
            )
            print(
                f"llmroute Client.stream (the floor): {floor_event * 1e6:.2f} us/event, {floor_call * 1e6:.0f} us/call"
            )
            sdk_event = (await _cpu(sdk_call(long_base), 5))[0] / events
            print(f"openai SDK stream (under every native model): {sdk_event * 1e6:.2f} us/event")
            print()
            print(f"{'framework':44} {'':8} {'us/event':>9} {'us/call':>9}")
            for name, make in FRAMEWORKS.items():
                long_calls, short_calls = make(long_base, client), make(short_base, client)
                results: dict[str, tuple[float, float]] = {}
                for kind in ("native", "adapter"):
                    per_event = (await _cpu(long_calls[kind], 5))[0] / events
                    per_call = await _per_call(short_calls[kind], calls)
                    results[kind] = (per_event, per_call)
                    print(f"{name:44} {kind:8} {per_event * 1e6:9.2f} {per_call * 1e6:9.0f}")
                (ne, nc), (ae, ac) = results["native"], results["adapter"]
                print(f"{'':44} {'ratio':8} {ae / ne:9.2f} {ac / nc:9.2f}   (adapter / native)")
                print(
                    f"{'':44} {'added':8} {(ae - floor_event) * 1e6:9.2f} {(ac - floor_call) * 1e6:9.0f}   (adapter - llmroute)"
                )


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    anyio.run(main, args[0] if args else 5000, args[1] if len(args) > 1 else 50)
