"""OpenTelemetry with the real SDK: an in-memory span exporter, a span counter and a metric reader."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llmroute import telemetry
from tests.reliability.conftest import anyio_backend, server  # asyncio and trio; the 127.0.0.1 server
from tests.reliability.server import FaultServer

__all__ = ["anyio_backend", "server"]


class Counter(SpanProcessor):
    """Counts starts and ends per span: every started span must end, exactly once."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.ended: list[int] = []

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.started.append(span.context.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ended.append(span.context.span_id)


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    counter: Counter
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    _metrics: dict[str, list[Any]] = field(default_factory=dict)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def only(self, name_prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(name_prefix)]

    def all_ended_once(self) -> None:
        assert sorted(self.counter.started) == sorted(self.counter.ended)
        assert len(set(self.counter.ended)) == len(self.counter.ended)

    def points(self, name: str) -> list[Any]:
        """The data points of one metric (histograms: count, sum, attributes)."""
        data = self.reader.get_metrics_data()
        out: list[Any] = []
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        out.extend(metric.data.data_points)
        return out

    def metric(self, name: str) -> Any:
        data = self.reader.get_metrics_data()
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        return metric
        raise AssertionError(f"no metric {name}")


@pytest.fixture
def otel() -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    counter = Counter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(counter)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Otel(exporter, reader, counter, tracer_provider, meter_provider)
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()


@pytest.fixture
def upstream(server: FaultServer) -> FaultServer:
    """The gateway tests' name for the scripted upstream."""
    return server
