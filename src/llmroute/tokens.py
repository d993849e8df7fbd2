"""Counting a request's input tokens, and the pre-flight context-window check.

``client.count_tokens(request)`` asks the provider where it has an endpoint for it (Anthropic
``/v1/messages/count_tokens``, Gemini ``:countTokens``, OpenAI ``/responses/input_tokens``) and
otherwise estimates locally: one token per 4 bytes of the request body's UTF-8 JSON, rounded up (a
documented over-estimate for English text and JSON; code and non-Latin scripts run closer to one token
per 2-3 bytes). ``client.check_context(request)`` raises ``ContextOverflowError`` before sending when the
input plus the output the request allows cannot fit the model's context window.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from .route.classify import from_response
from .route.prepared import PreparedRequest
from .schema.errors import ContextOverflowError, InvalidProviderOutputError
from .schema.request import LLMRequest

if TYPE_CHECKING:
    import httpx

__all__ = ["Counter", "TokenCount", "check_context", "count_tokens", "estimate"]


class Counter(Protocol):
    """What counting needs from a ``Client``: its ``prepare`` and its HTTP client (so this module
    does not import the client, which imports it)."""

    async def prepare(self, request: LLMRequest) -> PreparedRequest: ...

    @property
    def http(self) -> httpx.AsyncClient: ...


BYTES_PER_TOKEN = 4


class TokenCount(msgspec.Struct, frozen=True):
    """A request's input tokens and how they were counted."""

    input_tokens: int
    """Tokens the request's input (system, messages, tools) takes."""
    source: Literal["provider", "estimate"]
    """``"provider"``: the provider's counting endpoint; ``"estimate"``: the local estimate."""


def estimate(body: bytes) -> int:
    """The local estimate: one token per ``BYTES_PER_TOKEN`` bytes of the request body, rounded up."""
    return math.ceil(len(body) / BYTES_PER_TOKEN)


# protocol name -> (how the generation URL becomes the counting URL, the body keys the endpoint takes)
_ANTHROPIC_KEYS = ("model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers")
_RESPONSES_DROP = ("stream", "max_output_tokens", "store", "stream_options", "include", "background")


def _beside(prepared: PreparedRequest, suffix: str, sub: str) -> str:
    """The counting URL next to the generation one (``.../messages`` -> ``.../messages/count_tokens``),
    its query kept (Azure's ``api-version``)."""
    url, sep, query = prepared.url.partition("?")
    if not url.endswith(suffix):
        raise _unsupported
    return url + sub + sep + query


def _anthropic(prepared: PreparedRequest, body: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    url = _beside(prepared, "/messages", "/count_tokens")
    return url, {k: body[k] for k in _ANTHROPIC_KEYS if k in body}, "input_tokens"


def _gemini(prepared: PreparedRequest, body: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    url, _, _ = prepared.url.partition("?")
    head, sep, _ = url.rpartition(":")
    if not sep or "/models/" not in head:
        raise _unsupported
    model = "models/" + head.rsplit("/models/", 1)[1]
    inner = {k: v for k, v in body.items() if k in ("contents", "systemInstruction", "tools", "toolConfig")}
    return head + ":countTokens", {"generateContentRequest": {"model": model, **inner}}, "totalTokens"


def _responses(prepared: PreparedRequest, body: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    url = _beside(prepared, "/responses", "/input_tokens")
    return url, {k: v for k, v in body.items() if k not in _RESPONSES_DROP}, "input_tokens"


class _Unsupported(Exception):
    pass


_unsupported = _Unsupported()
_ENDPOINTS = {"anthropic-messages": _anthropic, "gemini": _gemini, "openai-responses": _responses}


async def count_tokens(client: Counter, request: LLMRequest) -> TokenCount:
    """The request's input tokens (see the module doc)."""
    prepared = await client.prepare(request)
    model = getattr(request.model, "route", None)
    protocol = getattr(getattr(model, "protocol", None), "name", None)
    endpoint = _ENDPOINTS.get(protocol or "")
    if endpoint is None or prepared.method != "POST":
        return TokenCount(estimate(prepared.body), "estimate")
    try:
        url, body, field = endpoint(prepared, json.loads(prepared.body))
    except (_Unsupported, ValueError):
        return TokenCount(estimate(prepared.body), "estimate")
    headers = {k: v for k, v in prepared.headers.items() if k.lower() not in ("content-length", "accept")}
    data = json.dumps(body).encode()
    response = await client.http.post(url, headers=headers, content=data)
    provider = getattr(request.model, "provider", None)
    if response.status_code >= 300:
        raise from_response(
            response.status_code,
            response.headers,
            response.content,
            method="POST",
            url=url,
            provider=provider,
            secrets=prepared.secrets,
        )
    try:
        count = json.loads(response.content)[field]
    except (ValueError, KeyError, TypeError):
        count = None
    if type(count) is not int:
        raise InvalidProviderOutputError(f"{provider}: the token count answer has no integer {field!r}")
    return TokenCount(count, "provider")


async def check_context(client: Counter, request: LLMRequest) -> TokenCount | None:
    """Raise ``ContextOverflowError`` when the request's input plus the output it allows
    (``max_tokens``, else the model's output limit) exceeds the model's context window. ``None`` (and
    no check) when the catalog does not know the model's window; else the count it checked."""
    info = getattr(request.model, "info", None)
    window = getattr(info, "context_window", None)
    if not isinstance(window, int):
        return None
    counted = await count_tokens(client, request)
    generation = request.generation
    max_out = generation.max_tokens if generation is not None else None
    if max_out is None:
        max_out = getattr(info, "max_output_tokens", None) or 0
    if counted.input_tokens + max_out > window:
        model_id = getattr(request.model, "id", "?")
        raise ContextOverflowError(
            f"{model_id}: {counted.input_tokens} input tokens ({counted.source}) + {max_out} output "
            f"tokens exceed the {window}-token context window",
            provider=getattr(request.model, "provider", None),
        )
    return counted
