"""Per-call cost of hooks and of ``llmroute.telemetry`` (OpenTelemetry SDK, spans dropped by a no-op
exporter, metrics into an in-memory reader), over ``httpx.MockTransport`` (no sockets).

    .venv/bin/python tests/bench/bench_telemetry.py [--calls 2000] [--events 20] [--rounds 5]
    .venv/bin/python tests/bench/bench_telemetry.py --callgrind   # instructions per call (valgrind)

Runs the same short streamed chat call ``--calls`` times per variant, interleaved over ``--rounds``,
and reports the median microseconds per call and the overhead against no hooks at all; with
``--callgrind``, each variant runs 50 and 150 calls under ``valgrind --tool=callgrind`` and the
report is the instructions one more call costs (load-independent, unlike time):

- ``off``: no hook (the executor skips every hook call);
- ``hook``: one ``Hook`` overriding ``on_finish`` only (the runner, no per-event dispatch);
- ``events``: one hook overriding ``on_event`` (called for every event);
- ``otel``: ``telemetry.instrument()`` with the SDK, a no-op span exporter behind a
  ``SimpleSpanProcessor`` and an ``InMemoryMetricReader``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _body(events: int) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        data = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(data)}\n\n"

    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": f"w{i} "}) for i in range(events)]
    parts.append(chunk({}, "stop"))
    usage = {
        "id": "c1",
        "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": events},
    }
    parts.append(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n")
    return "".join(parts).encode()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "CALLS"))
    args = parser.parse_args()
    if args.callgrind:
        _callgrind(args.events)
        return

    import anyio
    import httpx
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    import llmroute
    from llmroute import telemetry
    from llmroute.providers import openai

    body = _body(args.events)

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    class NoOp(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class Finish(llmroute.Hook):
        def on_finish(self, call: llmroute.CallInfo, result: llmroute.CallResult) -> None:
            pass

    class Events(llmroute.Hook):
        def on_event(self, call: llmroute.CallInfo, event: llmroute.LLMEvent) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(NoOp()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    model = openai.configure(api_key="sk-bench", base_url="http://bench.test/v1").chat("gpt-4o-mini")
    request = llmroute.request(model=model, prompt="hi")

    async def run(hooks: list[Any]) -> float:
        async with llmroute.Client(
            httpx.AsyncClient(transport=httpx.MockTransport(handler)), hooks=hooks
        ) as client:
            await client.generate(request)  # warm up
            began = time.perf_counter()
            for _ in range(args.calls):
                await client.generate(request)
            return (time.perf_counter() - began) / args.calls * 1e6

    def hooks_of(variant: str) -> list[Any]:
        return {"hook": [Finish()], "events": [Events()]}.get(variant, [])

    if args.child:
        variant, calls = args.child[0], int(args.child[1])
        if variant == "otel":
            telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        args.calls = calls
        anyio.run(run, hooks_of(variant))
        return

    variants: dict[str, list[float]] = {"off": [], "hook": [], "events": [], "otel": []}
    for _ in range(args.rounds):
        variants["off"].append(anyio.run(run, []))
        variants["hook"].append(anyio.run(run, [Finish()]))
        variants["events"].append(anyio.run(run, [Events()]))
        telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        try:
            variants["otel"].append(anyio.run(run, []))
        finally:
            telemetry.uninstrument()
    base = statistics.median(variants["off"])
    print(f"{args.calls} calls x {args.rounds} rounds, {args.events} text events per call")
    for name, times in variants.items():
        median = statistics.median(times)
        print(f"{name:7} {median:8.1f} us/call  {median - base:+7.1f} us  x{median / base:.3f}")


def _callgrind(events: int) -> None:
    from tests.bench.bench_callgrind import _instructions  # valgrind --tool=callgrind, at the repo root

    def instructions(variant: str, calls: int) -> int:
        child = ["-m", "tests.bench.bench_telemetry", "--events", str(events), "--child", variant, str(calls)]
        return _instructions(child)

    base = 0.0
    for variant in ("off", "hook", "events", "otel"):
        per_call = (instructions(variant, 150) - instructions(variant, 50)) / 100
        base = base or per_call
        print(f"{variant:7} {per_call:12,.0f} instructions/call  x{per_call / base:.3f}", flush=True)


if __name__ == "__main__":
    main()
