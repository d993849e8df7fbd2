"""Every protocol's hosted-tool registry (issue #15 item 6): ``PROTOCOL.hosted_kinds`` is exactly the
set of ``HostedTool`` kinds its ``build_body`` lowers, and any other kind is an ``InvalidRequestError``
naming the kinds it offers, for each protocol in ``llmroute.providers.registry``."""

from __future__ import annotations

from types import ModuleType

import pytest

import llmroute
from llmroute.providers import registry
from llmroute.route.auth import NoAuth
from llmroute.route.model import Model
from llmroute.schema.errors import InvalidRequestError
from llmroute.schema.tools import HostedTool

PROTOCOLS: list[ModuleType] = [entry.load() for entry in registry.PROTOCOLS]

# options a kind cannot lower without (an MCP server's address); every other kind is sent bare
OPTIONS: dict[str, dict[str, str]] = {
    "mcp": {"server_url": "https://mcp.example.invalid/sse", "server_label": "docs"},
}
UNKNOWN = "no_such_tool"
# the kinds each protocol offers, written out (not read from the table under test): dropping or
# adding one is a visible change here
OFFERED: dict[str, frozenset[str]] = {
    "anthropic-messages": frozenset({"web_search", "web_fetch", "code_execution", "mcp"}),
    "bedrock-converse": frozenset({"code_execution"}),
    "gemini": frozenset({"web_search", "url_context", "code_execution", "file_search"}),
    "openai-chat": frozenset(),  # hosted tools come with a server's ChatQuirks (test_hosted_tables.py)
    "openai-responses": frozenset(
        {"web_search", "code_execution", "shell", "file_search", "image_generation", "mcp"}
    ),
}
# every kind some protocol offers, plus kinds of other providers and one nobody has: each protocol
# is asked about all of them
KINDS = sorted(
    {kind for module in PROTOCOLS for kind in module.HOSTED_TOOLS}
    | {"file_search", "google_search", "image_generation", "x_search", UNKNOWN}
)


def _build(module: ModuleType, kind: str) -> object:
    model = Model("test-model", module.route("https://llm.example.invalid/v1", NoAuth()), "test")
    request = llmroute.request(
        model=model,
        messages=[llmroute.Message("user", (llmroute.TextPart("hi"),))],
        tools=[HostedTool(kind, dict(OPTIONS.get(kind, {})))],
        generation=llmroute.GenerationOptions(),
    )
    return module.PROTOCOL.build_body(request, model)


def _lowers(module: ModuleType, kind: str) -> bool:
    try:
        _build(module, kind)
    except InvalidRequestError:
        return False
    return True


@pytest.mark.parametrize("module", PROTOCOLS, ids=lambda module: module.NAME)
def test_hosted_kinds_are_exactly_the_kinds_that_lower(module: ModuleType) -> None:
    lowered = frozenset(kind for kind in KINDS if _lowers(module, kind))
    assert module.PROTOCOL.hosted_kinds == frozenset(module.HOSTED_TOOLS) == lowered == OFFERED[module.NAME]


@pytest.mark.parametrize("module", PROTOCOLS, ids=lambda module: module.NAME)
def test_an_unsupported_kind_names_the_kinds_offered(module: ModuleType) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        _build(module, UNKNOWN)
    message = str(raised.value)
    assert module.NAME in message
    assert repr(UNKNOWN) in message
    for kind in module.HOSTED_TOOLS:
        assert kind in message


@pytest.mark.parametrize("module", PROTOCOLS, ids=lambda module: module.NAME)
def test_route_takes_a_base_url_and_defaults_its_name(module: ModuleType) -> None:
    route = module.route("https://llm.example.invalid/v1", NoAuth())
    assert route.name == module.NAME
    assert route.protocol.hosted_kinds == module.PROTOCOL.hosted_kinds
    assert module.route("https://llm.example.invalid/v1", NoAuth(), name="mine").name == "mine"
