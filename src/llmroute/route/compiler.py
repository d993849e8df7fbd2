"""``prepare(request)``: compile an ``LLMRequest`` into a ``PreparedRequest``, the exact bytes to send
(no I/O beyond credential lookup; the value itself is ``route.prepared``)."""

from __future__ import annotations

from typing import Any

import msgspec

from .._version import __version__
from ..schema.errors import InvalidRequestError
from ..schema.request import LLMRequest
from ..schema.tools import ToolDefinition
from ..schema.validate import validate_request
from .endpoint import check_base_url
from .model import Route
from .plan import Plan
from .prepared import PreparedRequest
from .support import apply_support

__all__ = ["prepare"]

_encoder = msgspec.json.Encoder()
_USER_AGENT = f"llmroute/{__version__}"


def _check_whole(route: Route) -> None:
    if route.protocol.whole is None:
        raise InvalidRequestError(f"{route.protocol.name} has no non-streaming mode; drop stream=False")
    transport = route.transport
    if transport is not None and transport.streams_only:
        raise InvalidRequestError(
            f"{route.name}: the {transport.name} transport always streams; "
            "use the HTTP route for stream=False"
        )


def _check_tool_kinds(request: LLMRequest, route: Route) -> None:
    kinds = route.protocol.tool_kinds
    for tool in request.tools:
        if isinstance(tool, ToolDefinition) and tool.kind not in kinds:
            raise InvalidRequestError(
                f"{route.protocol.name}: {tool.kind!r} tools ({tool.name!r}) are not available on this "
                f"protocol (it takes {', '.join(sorted(kinds))})"
            )


def _overlay_body(body: Any, extra: dict[str, Any]) -> bytes:
    data: dict[str, Any] = msgspec.json.decode(_encoder.encode(body), type=dict[str, Any])
    clash = sorted(k for k in extra if k in data)
    if clash:
        raise InvalidRequestError(
            f"http.body overlay may not overwrite protocol-owned field(s): {', '.join(clash)}"
        )
    data.update(extra)
    return _encoder.encode(data)


async def prepare(request: LLMRequest, plan: Plan | None = None) -> PreparedRequest:
    """``request`` compiled: checked, then lowered by its route. ``plan``: ``Plan.of(request)``
    when the caller has it (the executor, on every attempt of a call), so it is not resolved again;
    a router's request is shown on its first choice."""
    validate_request(request)
    if plan is None:
        plan = Plan.of(request)
    request, model, route = plan.resolved, plan.model, plan.route
    check_base_url(route.endpoint.base_url)  # an Endpoint checks it when built; a replaced one too
    stream = plan.streaming
    if not stream:
        _check_whole(route)
    _check_tool_kinds(request, route)
    request, warnings = apply_support(
        request, route.protocol.support, route.name, route.protocol.hosted_kinds
    )
    overlay = request.http
    try:
        body = route.protocol.build_body(request, model)
        body_bytes = _overlay_body(body, overlay.body) if overlay and overlay.body else _encoder.encode(body)
    except (UnicodeEncodeError, RecursionError, TypeError) as exc:
        # Text and options were checked; what is left is a value inside the history (a tool call's
        # input, a tool result) that has no JSON form.
        if isinstance(exc, TypeError) and "Encoding objects of type" not in str(exc):
            raise
        reason = "it contains itself" if isinstance(exc, RecursionError) else str(exc)
        raise InvalidRequestError(
            f"messages: a value in the conversation cannot be encoded as JSON ({reason})", param="messages"
        ) from None
    url = route.endpoint.url(model.id, overlay.query if overlay else None, stream=stream)
    headers = {
        "content-type": "application/json",
        "accept": route.protocol.accept if stream else "application/json",
        "user-agent": _USER_AGENT,
    }
    if route.headers:
        headers.update({k.lower(): v for k, v in route.headers.items()})
    if overlay and overlay.headers:
        for k, v in overlay.headers.items():
            key = k.lower()
            if key in ("authorization", "content-type", "content-length", "host"):
                raise InvalidRequestError(f"http.headers overlay may not set {key!r}")
            headers[key] = v
    prepared = await route.auth.apply(PreparedRequest("POST", url, headers, body_bytes))
    prepared.warnings = warnings
    return prepared
