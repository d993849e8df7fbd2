"""Hosted-tool registries of protocol values built with quirks or an envelope (the modules' own
``PROTOCOL`` values are in ``test_hosted_registry.py``): ``hosted_kinds`` is exactly the set of
``HostedTool`` kinds ``build_body`` lowers, and any other kind is an ``InvalidRequestError`` naming the
kinds offered. Chat has no table of its own: the servers that have hosted tools (OpenRouter, GLM)
bring theirs as ``ChatQuirks.hosted_tools``; xAI's Responses quirks add ``x_search``; Code Assist is
Gemini in an envelope."""

from __future__ import annotations

from typing import Any

import pytest

import llmroute
from llmroute.protocols import gemini, gemini_code_assist, openai_chat, openai_responses
from llmroute.providers import glm, openrouter, xai
from llmroute.route.auth import NoAuth
from llmroute.route.model import Model, Route
from llmroute.route.protocol import Protocol
from llmroute.schema.errors import InvalidRequestError
from llmroute.schema.tools import HostedTool

BASE_URL = "https://llm.example.invalid/v1"

# options a kind cannot lower without (an MCP server's address); every other kind is sent bare
OPTIONS: dict[str, dict[str, str]] = {
    "mcp": {"server_url": "https://mcp.example.invalid/sse", "server_label": "docs"},
}
UNKNOWN = "no_such_tool"
# every kind these protocols offer, plus other providers' kinds and one nobody has
KINDS = sorted(
    {*gemini.HOSTED_TOOLS, *openai_responses.HOSTED_TOOLS}
    | {"web_search", "code_execution", "google_search", "web_fetch", "x_search", UNKNOWN}
)

# (id, the route to build with, the kinds it offers: written out, not read from the code under test)
ROUTES: list[tuple[str, Route, dict[str, Any]]] = [
    (
        "openai-chat+openrouter",
        openai_chat.route(BASE_URL, NoAuth(), quirks=openrouter.QUIRKS),
        {"web_search": None},
    ),
    (
        "openai-chat+glm",
        glm.configure(api_key="k").chat("glm-4.6").route,
        {"web_search": None},
    ),
    (
        "openai-responses+xai",
        openai_responses.route(BASE_URL, NoAuth(), quirks=xai.RESPONSES_QUIRKS),
        dict.fromkeys(
            ["web_search", "code_execution", "shell", "file_search", "image_generation", "mcp", "x_search"]
        ),
    ),
    (
        "gemini-code-assist",
        gemini_code_assist.route(BASE_URL, NoAuth(), project="p"),
        dict.fromkeys(["web_search", "url_context", "code_execution", "file_search"]),
    ),
]


def _build(protocol: Protocol, route: Route, kind: str) -> object:
    model = Model("test-model", route, "test")
    request = llmroute.request(
        model=model,
        prompt="hi",
        tools=[HostedTool(kind, dict(OPTIONS.get(kind, {})))],
        generation=llmroute.GenerationOptions(),
    )
    return protocol.build_body(request, model)


def _lowers(route: Route, kind: str) -> bool:
    try:
        _build(route.protocol, route, kind)
    except InvalidRequestError:
        return False
    return True


@pytest.mark.parametrize(("route", "table"), [r[1:] for r in ROUTES], ids=[r[0] for r in ROUTES])
def test_hosted_kinds_are_exactly_the_kinds_that_lower(route: Route, table: dict[str, Any]) -> None:
    lowered = frozenset(kind for kind in KINDS if _lowers(route, kind))
    assert route.protocol.hosted_kinds == frozenset(table) == lowered


@pytest.mark.parametrize(("route", "table"), [r[1:] for r in ROUTES], ids=[r[0] for r in ROUTES])
def test_an_unsupported_kind_names_the_kinds_offered(route: Route, table: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        _build(route.protocol, route, UNKNOWN)
    message = str(raised.value)
    assert repr(UNKNOWN) in message
    for kind in table:
        if kind not in ("x_search",):  # xAI's own kinds are sent as given, outside the table
            assert kind in message
    if not table:
        assert "none" in message
