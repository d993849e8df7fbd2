"""Gateway server spans: with ``llmroute.telemetry`` instrumented, each HTTP request is a SERVER span
whose parent is the client's W3C ``traceparent``, and the upstream model calls are its children.

When telemetry is off (or was never imported) a request costs one dictionary lookup here and
OpenTelemetry is not imported.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["RouteTemplates", "ServerSpans"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_PARAM = re.compile(r"\{[^}]+\}")


class RouteTemplates:
    """A low-cardinality ``http.route`` for a request path: the gateway's route template that
    matches it (``/v1/models/{id}``), never a model id or a query; ``""`` for no route."""

    __slots__ = ("_exact", "_patterns")

    def __init__(self, templates: Iterable[str]) -> None:
        templates = tuple(templates)
        self._exact: frozenset[str] = frozenset(t for t in templates if "{" not in t)
        # named without their converter: /v1/models/{id:path} is /v1/models/{id}
        self._patterns = [
            (re.compile("".join(_pattern(t)) + "$"), re.sub(r":\w+\}", "}", t)) for t in templates if "{" in t
        ]

    def __call__(self, path: str) -> str:
        if path in self._exact:
            return path
        for pattern, template in self._patterns:
            if pattern.match(path):
                return template
        return "/health" if path.startswith("/health") else ""


def _pattern(template: str) -> Iterable[str]:
    """A route template as a regex: ``{name}`` one path segment, ``{name:path}`` any rest."""
    at = 0
    for param in _PARAM.finditer(template):
        yield re.escape(template[at : param.start()])
        yield ".+" if param.group().endswith(":path}") else "[^/]+"
        at = param.end()
    yield re.escape(template[at:])


class ServerSpans:
    """ASGI middleware: one span per HTTP request while ``llmroute.telemetry`` is instrumented."""

    def __init__(self, app: ASGIApp, templates: RouteTemplates) -> None:
        self.app = app
        self.route_template = templates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        telemetry = sys.modules.get("llmroute.telemetry")
        if scope["type"] != "http" or telemetry is None or not telemetry.is_instrumented():
            await self.app(scope, receive, send)
            return
        route = self.route_template(scope.get("path", ""))
        await telemetry.serve_traced(self.app, scope, receive, send, route)
