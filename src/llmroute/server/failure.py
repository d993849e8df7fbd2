"""What the gateway answers when a request fails, before any dialect words it: a ``Failure`` (status,
message, OpenAI-style ``type`` and ``code``, headers), from the gateway's own refusals (``Refused``:
auth, size, unknown model, limits) or from an upstream ``LLMError`` (``upstream_failure``, scrubbed
of every secret, URL and upstream host). Each dialect renders a ``Failure`` in its own error shape;
``openai_error`` is the OpenAI one, also used where no dialect applies (``/v1/models``, 404s).
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from ..route.redact import redact_text
from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidRequestError,
    LLMError,
    NoRouteError,
    QuotaExceededError,
    RateLimitError,
    TimeoutError,
)

__all__ = [
    "INTERNAL",
    "Failure",
    "Refused",
    "error_body",
    "openai_error",
    "openai_error_json",
    "scrub",
    "upstream_failure",
]

_encode = msgspec.json.Encoder().encode
# Upstream URLs say where the gateway's providers live: never echoed to a client.
_URL = re.compile(r"\b(?:https?|wss?)://[^\s\"'<>]+")


class Failure(msgspec.Struct, frozen=True):
    """One failed request, dialect-neutral: each dialect's ``error`` renders it."""

    status: int
    """The HTTP status (in a stream: the status the failure would have had)."""
    message: str
    """What went wrong, for the client: already scrubbed of secrets, URLs and upstream hosts."""
    type: str
    """The OpenAI error ``type``: ``invalid_request_error``, ``rate_limit_error``,
    ``insufficient_quota``, ``permission_error``, ``upstream_error``, ``server_error``."""
    code: str | None = None
    """A machine-readable reason (``invalid_api_key``, ``model_not_found``, ``context_length_exceeded``)."""
    param: str | None = None
    """The request field at fault, when one is."""
    headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    """Response headers that go with it (``retry-after``, ``x-should-retry``)."""


INTERNAL = Failure(500, "internal server error", "server_error")
"""A bug in the gateway: the client gets this, the log gets the details."""


class Refused(Exception):
    """A request the gateway refuses itself (auth, size, unknown model, limits)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def error_body(message: str, type: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error object: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def openai_error(failure: Failure) -> dict[str, Any]:
    """A ``Failure`` as OpenAI's error body (Chat Completions, Responses, ``/v1/models``)."""
    return error_body(failure.message, failure.type, failure.code, failure.param)


def openai_error_json(failure: Failure) -> bytes:
    """A ``Failure`` as OpenAI's error body, encoded."""
    return _encode(openai_error(failure))


def scrub(text: str, secrets: tuple[str, ...], hosts: tuple[str, ...] = ()) -> str:
    """``text`` without any secret, URL or upstream ``host:port`` (an upstream error body that
    echoes the request's headers names its host)."""
    text = _URL.sub("<upstream>", redact_text(text, secrets))
    for host in hosts:
        if host in text:
            text = text.replace(host, "<upstream>")
    return text


def upstream_failure(exc: LLMError, secrets: tuple[str, ...], hosts: tuple[str, ...] = ()) -> Failure:
    """The failure of an upstream call, as the client sees it."""
    failure = _classify(exc, scrub(exc.message, secrets, hosts))
    if exc.attempts > 1 and (failure.status == 429 or failure.status >= 500):
        # the gateway already retried: an SDK retrying too would multiply the upstream's load
        failure.headers["x-should-retry"] = "false"
    return failure


def _classify(exc: LLMError, message: str) -> Failure:
    if isinstance(exc, InvalidRequestError) and exc.http is not None and exc.http.status == 404:
        # the upstream does not know the path or model: the operator's config, not the client's request
        text = f"the upstream answered 404 Not Found (check the model entry's base_url and model): {message}"
        return Failure(502, text, "upstream_error", "upstream_not_found")
    if isinstance(exc, ContextOverflowError):
        return Failure(400, message, "invalid_request_error", "context_length_exceeded")
    if isinstance(exc, ContentPolicyError):
        return Failure(400, message, "invalid_request_error", "content_filter")
    if isinstance(exc, NoRouteError) and exc.code == "no_target_available":
        # a route whose every target is cooling down or rate-limited: try again later
        headers: dict[str, str] = {}
        if exc.retry_after is not None:
            headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
        return Failure(503, message, "server_error", "no_target_available", headers=headers)
    if isinstance(exc, NoRouteError) and exc.code == "no_capable_target":
        # no target of the route could ever take this request (too big, a tool none carries)
        return Failure(
            400, message, "invalid_request_error", "no_capable_target", headers={"x-should-retry": "false"}
        )
    if isinstance(exc, NoRouteError):
        return Failure(500, message, "server_error", "no_route")
    if isinstance(exc, InvalidRequestError):
        return Failure(400, message, "invalid_request_error", exc.code)
    if isinstance(exc, QuotaExceededError):
        return Failure(
            429, message, "insufficient_quota", "insufficient_quota", headers={"x-should-retry": "false"}
        )
    if isinstance(exc, RateLimitError):
        headers = {} if exc.retry_after is None else {"retry-after": str(max(1, round(exc.retry_after)))}
        return Failure(429, message, "rate_limit_error", "rate_limit_exceeded", headers=headers)
    if isinstance(exc, AuthenticationError):
        # the gateway's own upstream credentials: not the client's fault, and retrying will not help
        return Failure(
            502,
            "upstream authentication failed",
            "upstream_error",
            "upstream_auth",
            headers={"x-should-retry": "false"},
        )
    if isinstance(exc, TimeoutError):
        return Failure(504, message, "upstream_error", "upstream_timeout")
    return Failure(502, message, "upstream_error", exc.code)
