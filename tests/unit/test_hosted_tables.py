"""Hosted-tool registries of protocol values built with quirks or an envelope (the modules' own
``PROTOCOL`` values are in ``test_hosted_registry.py``): ``hosted_kinds`` is exactly the set of
``HostedTool`` kinds ``build_body`` lowers, and any other kind is an ``InvalidRequestError`` naming the
kinds offered. Chat has no table of its own: the servers that have hosted tools (OpenRouter, GLM)
bring theirs as ``ChatQuirks.hosted_tools``; xAI's Responses quirks add ``x_search`` and remove the
OpenAI kind xAI does not run (``shell``); Code Assist is Gemini in an envelope."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import llmroute
from llmroute.protocols import gemini, gemini_code_assist, openai_chat, openai_responses
from llmroute.providers import glm, openrouter, xai
from llmroute.route.auth import NoAuth
from llmroute.route.model import Model, Route
from llmroute.route.protocol import Protocol
from llmroute.route.support import apply_support
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
        # xAI's server-side tools (docs.x.ai/docs/guides/tools/overview; vercel/ai packages/xai/src/tool)
        # plus image_generation (recorded: vercel-ai xai-image-generation-tool): no hosted ``shell``
        "openai-responses+xai",
        openai_responses.route(BASE_URL, NoAuth(), quirks=xai.RESPONSES_QUIRKS),
        dict.fromkeys(["web_search", "code_execution", "file_search", "image_generation", "mcp", "x_search"]),
    ),
    (
        # a Google Cloud backend: like Vertex AI, no Gemini API File Search stores (issue #42)
        "gemini-code-assist",
        gemini_code_assist.route(BASE_URL, NoAuth(), project="p"),
        dict.fromkeys(["web_search", "url_context", "code_execution"]),
    ),
    (
        "gemini-vertex",
        gemini.route(BASE_URL, NoAuth(), protocol=gemini.VERTEX_PROTOCOL),
        dict.fromkeys(["web_search", "url_context", "code_execution"]),
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
    # as ``prepare`` does: the route's support table first (a kind it lacks is refused there)
    request, _ = apply_support(request, protocol.support, route.name, protocol.hosted_kinds)
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


def test_a_kind_the_quirks_remove_is_refused_naming_tool_and_route() -> None:
    """Through the client, before anything is sent: the route's name, the tool and what it offers."""
    model = xai.configure(api_key="xai-test").responses("grok-4")
    request = llmroute.request(model=model, prompt="hi", tools=[llmroute.hosted.shell()])
    with pytest.raises(InvalidRequestError, match=r"xai-responses has no hosted 'shell' tool") as raised:
        anyio.run(_prepare, request)
    assert raised.value.param == "tools[0]"
    assert "x_search" in str(raised.value) and "code_execution" in str(raised.value)


def test_removing_a_kind_leaves_the_other_routes_alone() -> None:
    """OpenAI's own Responses route keeps every kind, hosted ``shell`` included."""
    assert "shell" in openai_responses.PROTOCOL.hosted_kinds
    quirks = openai_responses.ResponsesQuirks(hosted_remove=("shell", "mcp"))
    protocol = openai_responses.route(BASE_URL, NoAuth(), quirks=quirks).protocol
    assert protocol.hosted_kinds == frozenset(openai_responses.HOSTED_TOOLS) - {"shell", "mcp"}


async def _prepare(request: llmroute.LLMRequest) -> object:
    async with llmroute.Client() as client:
        return await client.prepare(request)
