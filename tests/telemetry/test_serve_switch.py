"""The gateway's telemetry switch: ``"telemetry": {"otel": true}`` in the config turns
``llmroute.telemetry`` on while the app runs (spans to the global providers, here the real SDK with
an in-memory exporter) and off at shutdown; ``llmroute serve --otel`` sets the SDK up from the
``OTEL_*`` environment, and names what to install when a package is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from opentelemetry.util._once import Once

from llmroute import telemetry
from tests.gateway.processes import GatewayProcess
from tests.gateway.test_gateway import GATEWAY_KEY, UPSTREAM_KEY, answer, config, serve
from tests.reliability.server import FaultServer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def _reset_globals() -> None:
    # the API lets a process set its global providers once; tests put them back as they found them
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # pyright: ignore[reportPrivateUsage]
    trace._TRACER_PROVIDER = None  # pyright: ignore[reportPrivateUsage]
    metrics._internal._METER_PROVIDER_SET_ONCE = Once()  # pyright: ignore[reportPrivateUsage]
    metrics._internal._METER_PROVIDER = None  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def global_sdk() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[reader])
    _reset_globals()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    try:
        yield exporter, reader
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()
        _reset_globals()


def post(base_url: str) -> httpx.Response:
    return httpx.post(
        base_url + "/chat/completions",
        headers={
            "authorization": f"Bearer {GATEWAY_KEY}",
            "traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01",
        },
        json={"model": "main", "messages": [{"role": "user", "content": "hi"}]},
        timeout=20,
    )


def test_the_config_switch_traces_served_requests_while_the_app_runs(
    upstream: FaultServer, global_sdk: tuple[InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    exporter, reader = global_sdk
    upstream.add(answer("hello"), answer("again"))
    with serve(upstream) as served:  # the switch off: nothing is traced
        assert post(served.base_url).status_code == 200
        assert not telemetry.is_instrumented()
    assert exporter.get_finished_spans() == ()
    with serve(upstream, telemetry={"otel": True}) as served:
        assert telemetry.is_instrumented()
        assert post(served.base_url).status_code == 200
    assert not telemetry.is_instrumented()  # off again once the app has shut down
    spans = exporter.get_finished_spans()
    [server] = [s for s in spans if s.kind == SpanKind.SERVER]
    [chat] = [s for s in spans if s.name.startswith("chat ")]
    assert server.name == "POST /v1/chat/completions" and f"{server.context.trace_id:032x}" == TRACE_ID
    by_id = {s.context.span_id: s for s in spans}
    ancestor = chat  # beneath the request span (through the web-search loop's invoke_agent)
    while ancestor.parent is not None and ancestor.parent.span_id in by_id:
        ancestor = by_id[ancestor.parent.span_id]
    assert ancestor is server
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert "gen_ai.client.operation.duration" in names


def test_a_bad_telemetry_entry_names_its_field(upstream: FaultServer) -> None:
    from llmroute.schema.errors import ConfigError

    with pytest.raises(ConfigError, match="otle"):
        serve(upstream, telemetry={"otle": True})


def _cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "UPSTREAM_KEY": UPSTREAM_KEY, **extra}


def test_serve_otel_sets_the_sdk_up_from_the_environment(upstream: FaultServer) -> None:
    upstream.add(answer("hello"))
    gateway = GatewayProcess(
        config(upstream, "always"),
        "--otel",
        env=_cli_env(
            OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none", OTEL_SERVICE_NAME="gw-test"
        ),
    )
    try:
        gateway.wait_ready()
        assert post(gateway.base_url).status_code == 200
        gateway.stop()  # the spans are flushed at shutdown
        out = gateway.output()
    finally:
        gateway.close()
    assert '"name": "POST /v1/chat/completions"' in out and '"kind": "SpanKind.SERVER"' in out
    assert '"name": "chat m"' in out and '"service.name": "gw-test"' in out
    assert TRACE_ID in out


def test_serve_otel_names_what_is_missing(upstream: FaultServer) -> None:
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config(upstream, "always"), f)
    try:
        command = ["serve", "--config", f.name, "--port", "0", "--otel"]
        # the [otel] extra missing: OpenTelemetry cannot be imported at all
        blocked = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, runpy; sys.modules['opentelemetry'] = None; "
                f"sys.argv = ['llmroute', *{command!r}]; runpy.run_module('llmroute', run_name='__main__')",
            ],
            capture_output=True,
            text=True,
            env=_cli_env(),
            timeout=60,
        )
        # the SDK is there but not the OTLP exporter the environment asks for (the default)
        no_exporter = subprocess.run(
            [sys.executable, "-m", "llmroute", *command],
            capture_output=True,
            text=True,
            env=_cli_env(OTEL_EXPORTER_OTLP_PROTOCOL="grpc"),
            timeout=60,
        )
    finally:
        os.unlink(f.name)
    assert blocked.returncode == 2, blocked.stderr
    assert "pip install 'llmroute[otel]'" in blocked.stderr and "Traceback" not in blocked.stderr
    assert no_exporter.returncode == 2, no_exporter.stderr
    assert "pip install opentelemetry-exporter-otlp-proto-grpc" in no_exporter.stderr
