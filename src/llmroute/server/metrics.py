"""The gateway's Prometheus metrics (extra ``llmroute[metrics]``: ``prometheus-client``), served at
``GET /metrics``. Imported only when the app is created with metrics on.

Labels are bounded: ``model`` is a configured public name (``-`` before one is known), ``key`` a
configured key id, ``route`` one of the gateway's routes. With ``--workers N`` each worker writes
to ``PROMETHEUS_MULTIPROC_DIR`` and any worker's ``/metrics`` serves the sum.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from ..route.hooks import HealthChange, Hook

if TYPE_CHECKING:
    from .record import Record

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    """Counters, histograms and the in-flight gauge, on a registry of their own."""

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = registry = CollectorRegistry()
        kw: dict[str, Any] = {"registry": None if self.multiprocess else registry}
        self.requests = Counter(
            "llmroute_gateway_requests",
            "Requests answered (CORS preflights too), by route, method, public model, status and key id.",
            ["route", "method", "model", "status", "key"],
            **kw,
        )
        self.latency = Histogram(
            "llmroute_gateway_request_duration_seconds",
            "Time from request to the last byte of the answer.",
            ["route", "model"],
            buckets=_LATENCY,
            **kw,
        )
        self.ttft = Histogram(
            "llmroute_gateway_time_to_first_token_seconds",
            "Streamed requests: time from request to the first upstream event.",
            ["route", "model"],
            buckets=_LATENCY,
            **kw,
        )
        self.upstream_errors = Counter(
            "llmroute_gateway_upstream_errors",
            "Failed upstream calls by public model and error type.",
            ["model", "type"],
            **kw,
        )
        self.tokens = Counter(
            "llmroute_gateway_tokens",
            "Tokens reported by upstreams, by key id, public model and direction (input/output).",
            ["key", "model", "direction"],
            **kw,
        )
        self.cost = Counter(
            "llmroute_gateway_cost_usd",
            "Cost in USD of the answered requests (catalog prices), by key id and public model.",
            ["key", "model"],
            **kw,
        )
        self.target_health = Counter(
            "llmroute_gateway_target_health_changes",
            "Route targets' health changes (cooling, healthy, rate-limited), by route and target.",
            ["route", "target", "state"],
            **kw,
        )
        self.cache_tokens = Counter(
            "llmroute_gateway_cache_tokens",
            "Input tokens of answered requests (kind input: all of them, cached or not) and of them read "
            "from (cache_read) and written to (cache_write) the prompt cache, by public model and target.",
            ["model", "target", "kind"],
            **kw,
        )
        self.in_flight = Gauge(
            "llmroute_gateway_streams_in_flight",
            "Streamed answers being relayed now.",
            ["route"],
            multiprocess_mode="livesum",
            **kw,
        )
        source = MultiProcessCollector(registry) if self.multiprocess else self.cache_tokens
        registry.register(_HitRatio(source))
        # label values -> child: ``labels()`` validates and joins its values on every call (a few
        # microseconds each, up to six per request); the label sets are few (bounded, see above)
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *values: str) -> Any:
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def observe(self, record: Record, latency: float) -> None:
        model, key, route = record.model or "-", record.key or "-", record.route
        self._child(self.requests, route, record.method, model, str(record.status), key).inc()
        if record.method == "OPTIONS":  # a CORS preflight: counted, not timed with the real requests
            return
        self._child(self.latency, route, model).observe(latency)
        if record.ttft is not None:
            self._child(self.ttft, route, model).observe(record.ttft)
        if record.input_tokens:
            self._child(self.tokens, key, model, "input").inc(record.input_tokens)
        if record.output_tokens:
            self._child(self.tokens, key, model, "output").inc(record.output_tokens)
        if record.cost:
            self._child(self.cost, key, model).inc(record.cost)
        seen = record.cache
        if seen.input:
            target = seen.target or record.target or "-"
            self._child(self.cache_tokens, model, target, "input").inc(seen.input)
            self._child(self.cache_tokens, model, target, "cache_read").inc(seen.read)
            self._child(self.cache_tokens, model, target, "cache_write").inc(seen.write)

    def upstream_error(self, record: Record, error: str) -> None:
        self._child(self.upstream_errors, record.model or "-", error).inc()

    def health_hook(self) -> _HealthCounter:
        """The hook the gateway's client runs: each route target's health change, counted."""
        return _HealthCounter(self)

    def stream_started(self, route: str) -> None:
        self._child(self.in_flight, route).inc()

    def stream_ended(self, route: str) -> None:
        self._child(self.in_flight, route).dec()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _HitRatio(Collector):
    """``llmroute_gateway_cache_hit_ratio{model,target}``: cache reads over all input, from the
    cache token counters at scrape time (summed over workers first, so the ratio is the whole
    gateway's, not an average of the workers')."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        totals: dict[tuple[str, str], dict[str, float]] = {}
        for metric in self.source.collect():
            if metric.name != "llmroute_gateway_cache_tokens":
                continue
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    labels = sample.labels
                    kinds = totals.setdefault((labels["model"], labels["target"]), {})
                    kinds[labels["kind"]] = kinds.get(labels["kind"], 0.0) + sample.value
        ratio = GaugeMetricFamily(
            "llmroute_gateway_cache_hit_ratio",
            "Prompt-cache reads over all input tokens (input includes reads and writes), by public model and target.",
            labels=["model", "target"],
        )
        for (model, target), kinds in sorted(totals.items()):
            if kinds.get("input"):
                ratio.add_metric([model, target], kinds.get("cache_read", 0.0) / kinds["input"])
        yield ratio


class _HealthCounter(Hook):
    __slots__ = ("metrics",)

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def on_health(self, change: HealthChange) -> None:
        metrics = self.metrics
        metrics._child(metrics.target_health, change.router, change.target, change.state).inc()  # pyright: ignore[reportPrivateUsage]
