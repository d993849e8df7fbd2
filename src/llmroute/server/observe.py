"""What the gateway tells its operator about each request: one JSON access-log line, one line per
upstream failure, and the Prometheus metrics (``metrics.py``) when they are on.

Log lines carry the key's id, never the key; the public model name and the upstream target
(``provider/model``), never the upstream URL; never a prompt or an answer.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from .record import Record
from .tracing import ASGIApp, Message, Receive, RouteTemplates, Scope, Send

if TYPE_CHECKING:
    from .metrics import Metrics

__all__ = ["ACCESS_LOG", "Observer", "Preflights"]

ACCESS_LOG = "llmroute.server.access"
_access = logging.getLogger(ACCESS_LOG)
_log = logging.getLogger("llmroute.server")
_encode = msgspec.json.Encoder().encode


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


class Observer:
    """Writes each finished ``Record`` to the access log and the metrics."""

    def __init__(self, metrics: Metrics | None, access_log: bool = True) -> None:
        self.metrics = metrics
        self.access_log = access_log

    def done(self, record: Record) -> None:
        if record.done:  # a stream that failed and was then closed: counted once
            return
        record.done = True
        latency = time.perf_counter() - record.start
        if self.metrics is not None:
            self.metrics.observe(record, latency)
        if self.access_log and _access.isEnabledFor(logging.INFO):
            line: dict[str, Any] = {
                "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
                "method": record.method,
                "route": record.route,
                "key": record.key,
                "model": record.model,
                "target": record.target,
                "stream": record.stream,
                "status": record.status,
                "latency_ms": _ms(latency),
                "ttft_ms": _ms(record.ttft),
                "input_tokens": record.input_tokens,
                "output_tokens": record.output_tokens,
                "cost_usd": record.cost,
                "error": record.error,
            }
            if record.session is not None:
                line["session"] = record.session
            line.update(record.cache.fields())
            _access.info(_encode(line).decode())

    def upstream_failure(self, record: Record, error: str, status: int, attempts: int, message: str) -> None:
        """One line per failed upstream call (message already scrubbed of secrets and URLs)."""
        if self.metrics is not None:
            self.metrics.upstream_error(record, error)
        line = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "event": "upstream_error",
            "key": record.key,
            "model": record.model,
            "target": record.target,
            "error": error,
            "status": status,
            "attempts": attempts,
            "message": message,
        }
        _log.warning(_encode(line).decode())

    def client_gone(self, record: Record, where: str) -> None:
        """A client that hung up: one line, no traceback; the upstream call is already cancelled."""
        record.status, record.error = 499, "client_disconnected"
        _log.info("gateway: client disconnected %s (%s, key %s)", where, record.route, record.key)


class Preflights:
    """ASGI middleware in front of Starlette's ``CORSMiddleware``, which answers a CORS preflight
    (``OPTIONS`` with ``Access-Control-Request-Method``) itself: each preflight still gets its
    access-log line and its count in the metrics (``method`` ``OPTIONS``)."""

    def __init__(self, app: ASGIApp, observer: Observer, templates: RouteTemplates) -> None:
        self.app = app
        self.observer = observer
        self.route_template = templates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        if not any(name == b"access-control-request-method" for name, _ in scope["headers"]):
            await self.app(scope, receive, send)
            return
        record = Record(self.route_template(scope["path"]) or "-", "OPTIONS")

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            self.observer.done(record)
