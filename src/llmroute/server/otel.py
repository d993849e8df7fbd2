"""Telemetry for ``llmroute serve``: ``"telemetry": {"otel": true}`` in the config or ``--otel`` turns
``llmroute.telemetry`` on while the app runs (a SERVER span per request with the upstream calls'
GenAI spans beneath it, and the GenAI metrics).

Spans and metrics go to the global OpenTelemetry providers. When nothing has set them (no
``opentelemetry-instrument``, no embedding application), they are set up here from the standard
environment: ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` (``otlp``, the default, with
``OTEL_EXPORTER_OTLP_PROTOCOL`` ``http/protobuf`` or ``grpc``; ``console``; ``none``),
``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME`` (default ``llmroute-gateway``) and the rest of
the ``OTEL_*`` variables the SDK reads itself. OpenTelemetry is imported only when the switch is on;
a missing package is a ``ConfigError`` naming what to install.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from ..schema.errors import ConfigError

__all__ = ["check", "start"]

_OTLP = {
    "http/protobuf": "opentelemetry.exporter.otlp.proto.http",
    "grpc": "opentelemetry.exporter.otlp.proto.grpc",
}
_PACKAGES = {
    "http/protobuf": "opentelemetry-exporter-otlp-proto-http",
    "grpc": "opentelemetry-exporter-otlp-proto-grpc",
}


def check() -> None:
    """Raise ``ConfigError`` now (before the server starts) if ``start`` would fail."""
    _import_telemetry()
    from opentelemetry import trace

    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        _exporters()


def start(capture_content: bool = False) -> Callable[[], None]:
    """Instrument ``llmroute.telemetry`` (setting up the global providers from the environment when
    nothing has); returns the function that stops it and flushes what it set up."""
    telemetry = _import_telemetry()
    from opentelemetry import metrics, trace

    made: list[Any] = []
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        made = _providers()
        trace.set_tracer_provider(made[0])
        metrics.set_meter_provider(made[1])
    telemetry.instrument(capture_content=capture_content)

    def stop() -> None:
        telemetry.uninstrument()
        for provider in made:
            provider.shutdown()  # flushes the spans and metrics not yet exported

    return stop


def _import_telemetry() -> Any:
    try:
        from .. import telemetry
    except ModuleNotFoundError:
        raise ConfigError(
            "$.telemetry.otel: OpenTelemetry is not installed: pip install 'llmroute[otel]'"
        ) from None
    return telemetry


def _sdk(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise ConfigError(
            "$.telemetry.otel: no OpenTelemetry providers are set up and opentelemetry-sdk is not "
            "installed: pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http "
            "(or run the gateway under opentelemetry-instrument)"
        ) from None


def _exporters() -> tuple[Any, Any]:
    """The span and metric exporters the environment names (``None``: not exported)."""
    return _exporter(
        "TRACES", "trace_exporter", "OTLPSpanExporter", "ConsoleSpanExporter", "trace"
    ), _exporter("METRICS", "metric_exporter", "OTLPMetricExporter", "ConsoleMetricExporter", "metrics")


def _exporter(signal: str, otlp_module: str, otlp_class: str, console_class: str, sdk_package: str) -> Any:
    choice = os.environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower()
    if choice == "none":
        return None
    if choice == "console":
        return getattr(_sdk(f"opentelemetry.sdk.{sdk_package}.export"), console_class)
    if choice != "otlp":
        raise ConfigError(f"OTEL_{signal}_EXPORTER: expected otlp, console or none, got {choice!r}")
    protocol = os.environ.get(
        f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    ).strip()
    if protocol not in _OTLP:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_PROTOCOL: expected http/protobuf or grpc, got {protocol!r}")
    _sdk(f"opentelemetry.sdk.{sdk_package}")
    try:
        return getattr(importlib.import_module(f"{_OTLP[protocol]}.{otlp_module}"), otlp_class)
    except ModuleNotFoundError:
        raise ConfigError(
            f"$.telemetry.otel: OTLP over {protocol} needs pip install {_PACKAGES[protocol]} "
            f"(or OTEL_{signal}_EXPORTER=console / none)"
        ) from None


def _providers() -> list[Any]:
    """An SDK tracer provider and meter provider exporting as the environment says."""
    spans, points = _exporters()
    resources = _sdk("opentelemetry.sdk.resources")
    sdk_trace = _sdk("opentelemetry.sdk.trace")
    trace_export = _sdk("opentelemetry.sdk.trace.export")
    sdk_metrics = _sdk("opentelemetry.sdk.metrics")
    metrics_export = _sdk("opentelemetry.sdk.metrics.export")
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "llmroute-gateway"}
    resource = resources.Resource.create(attributes)
    tracer_provider = sdk_trace.TracerProvider(resource=resource)
    if spans is not None:
        tracer_provider.add_span_processor(trace_export.BatchSpanProcessor(spans()))
    readers = [metrics_export.PeriodicExportingMetricReader(points())] if points is not None else []
    return [tracer_provider, sdk_metrics.MeterProvider(resource=resource, metric_readers=readers)]
