"""Provider-executed (hosted) tools for ``request(tools=[...])``.

Each is a ``HostedTool(kind, options)``; every protocol maps the kinds it supports to its own wire
definition and rejects the rest with a clear ``InvalidRequestError``. Their calls and results come
back as ``tool-call`` / ``tool-result`` events with ``provider_executed=True`` and are never run
locally.
"""

from __future__ import annotations

from typing import Any

from .schema.tools import HostedTool

__all__ = [
    "code_execution",
    "computer_use",
    "file_search",
    "image_generation",
    "mcp",
    "url_context",
    "web_fetch",
    "web_search",
]


def _tool(kind: str, options: dict[str, Any]) -> HostedTool:
    return HostedTool(kind, {k: v for k, v in options.items() if v is not None})


def web_search(
    *,
    max_uses: int | None = None,
    allowed_domains: list[str] | None = None,
    blocked_domains: list[str] | None = None,
    user_location: dict[str, Any] | None = None,
    search_context_size: str | None = None,
    **provider_specific: Any,
) -> HostedTool:
    """Web search run by the provider (OpenAI ``web_search``, Anthropic ``web_search_2025…``,
    Gemini ``googleSearch``, OpenRouter ``web``)."""
    return _tool(
        "web_search",
        {
            "max_uses": max_uses,
            "allowed_domains": allowed_domains,
            "blocked_domains": blocked_domains,
            "user_location": user_location,
            "search_context_size": search_context_size,
            **provider_specific,
        },
    )


def web_fetch(*, max_uses: int | None = None, **provider_specific: Any) -> HostedTool:
    return _tool("web_fetch", {"max_uses": max_uses, **provider_specific})


def url_context(**provider_specific: Any) -> HostedTool:
    return _tool("url_context", provider_specific)


def code_execution(**provider_specific: Any) -> HostedTool:
    return _tool("code_execution", provider_specific)


def file_search(*, vector_store_ids: list[str] | None = None, **provider_specific: Any) -> HostedTool:
    return _tool("file_search", {"vector_store_ids": vector_store_ids, **provider_specific})


def image_generation(**provider_specific: Any) -> HostedTool:
    return _tool("image_generation", provider_specific)


def mcp(*, server_label: str, server_url: str, **provider_specific: Any) -> HostedTool:
    return _tool("mcp", {"server_label": server_label, "server_url": server_url, **provider_specific})


def computer_use(**provider_specific: Any) -> HostedTool:
    return _tool("computer_use", provider_specific)
