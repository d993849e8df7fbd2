"""Gateway server spans: with ``llmroute.telemetry`` instrumented, each HTTP request is a SERVER span
whose parent is the client's W3C ``traceparent``, and the upstream model calls are its children.

When telemetry is off (or was never imported) a request costs one dictionary lookup here and
OpenTelemetry is not imported.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["ServerSpans", "route_template"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_ROUTES = ("/v1/chat/completions", "/v1/responses", "/v1/models", "/health", "/metrics")


class ServerSpans:
    """ASGI middleware: one span per HTTP request while ``llmroute.telemetry`` is instrumented."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        telemetry = sys.modules.get("llmroute.telemetry")
        if scope["type"] != "http" or telemetry is None or not telemetry.is_instrumented():
            await self.app(scope, receive, send)
            return
        await telemetry.serve_traced(self.app, scope, receive, send, route_template(scope.get("path", "")))


def route_template(path: str) -> str:
    """A low-cardinality ``http.route``: the gateway's route template, never a model id or a query."""
    if path.startswith("/v1/models/"):
        return "/v1/models/{id}"
    if path.startswith("/health"):
        return path if path in ("/health", "/health/ready") else "/health"
    return path if path in _ROUTES else ""
