"""Anthropic's server tools (run by Anthropic: web search, web fetch, code execution, MCP servers),
both ways: the declarations a request sends (``lower_*``, the entries of
``anthropic_messages.HOSTED_TOOLS``; each takes the tool and the request's MCP servers list) and
the ``*_tool_result`` blocks a response carries (``on_*``, the entries of
``anthropic_messages.HOSTED_ITEMS``), read into provider-executed ``ToolResult`` events whose
metadata keeps what the lowering sends back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from ..hosted import SearchResult, search_result
from ..schema.events import LLMEvent, ToolResult
from ..schema.tools import HostedTool
from ._websearch import hit_pairs

if TYPE_CHECKING:
    from .anthropic_messages.state import AnthropicState

__all__ = [
    "lower_code_execution",
    "lower_mcp",
    "lower_web_fetch",
    "lower_web_search",
    "on_server_tool_result",
    "on_web_search_tool_result",
]

NAMESPACE = "anthropic"  # anthropic_messages.NAMESPACE: the provider_metadata key


class _ResultBlock(Protocol):
    """The fields of a ``content_block_start`` block that a result reads."""

    type: str
    tool_use_id: str | None
    content: Any
    is_error: bool | None
    caller: Any


# -- declarations ---------------------------------------------------------------------------------


def _hosted_options(tool: HostedTool) -> tuple[str | None, dict[str, Any]]:
    """The wire ``type`` (given as ``type`` or ``version``) and the other options."""
    options = dict(tool.options)
    return options.pop("type", None) or options.pop("version", None), options


def lower_web_search(tool: HostedTool, _servers: list[dict[str, Any]]) -> dict[str, Any]:
    version, options = _hosted_options(tool)
    options.pop("search_context_size", None)  # OpenAI's knob; Anthropic has none
    location = options.get("user_location")
    if isinstance(location, dict) and "type" not in location:
        options["user_location"] = {"type": "approximate", **location}
    return {"type": version or "web_search_20250305", "name": "web_search", **options}


def lower_web_fetch(tool: HostedTool, _servers: list[dict[str, Any]]) -> dict[str, Any]:
    version, options = _hosted_options(tool)
    return {"type": version or "web_fetch_20250910", "name": "web_fetch", **options}


def lower_code_execution(tool: HostedTool, _servers: list[dict[str, Any]]) -> dict[str, Any]:
    version, options = _hosted_options(tool)
    return {"type": version or "code_execution_20250825", "name": "code_execution", **options}


def lower_mcp(tool: HostedTool, servers: list[dict[str, Any]]) -> None:
    """An MCP server is a top-level ``mcp_servers`` entry, not a tool."""
    _, options = _hosted_options(tool)
    server = {"type": "url", "url": options.pop("server_url"), "name": options.pop("server_label")}
    servers.append({**server, **options})


# -- result blocks --------------------------------------------------------------------------------


def on_server_tool_result(state: AnthropicState, block: _ResultBlock, out: list[LLMEvent]) -> None:
    """A server tool's ``*_tool_result`` block -> a provider-executed ``ToolResult`` carrying the
    block's content as is (the block type rides in the metadata, for the round-trip)."""
    id, name, info = _result_info(state, block)
    out.append(ToolResult(id, name, block.content, _is_error(block), True, {NAMESPACE: info}))


def on_web_search_tool_result(state: AnthropicState, block: _ResultBlock, out: list[LLMEvent]) -> None:
    """The canonical search result; the block's own content (``encrypted_content``, ``page_age``,
    ``error_code``) rides in the metadata and is what the lowering sends back."""
    id, name, info = _result_info(state, block)
    info["content"] = block.content
    result = _search_result(block.content, state.server_inputs.get(id))
    out.append(ToolResult(id, name, result, _is_error(block), True, {NAMESPACE: info}))


def _result_info(state: AnthropicState, block: _ResultBlock) -> tuple[str, str, dict[str, Any]]:
    """The result's call id, its call's name and the metadata every result block keeps."""
    id = block.tool_use_id or ""
    name = state.server_names.get(id) or block.type.removesuffix("_tool_result")
    info: dict[str, Any] = {"type": block.type}
    if block.caller is not None:
        info["caller"] = block.caller
    return id, name, info


def _is_error(block: _ResultBlock) -> bool:
    content = block.content
    kind = content.get("type") if isinstance(content, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return bool(block.is_error) or (isinstance(kind, str) and kind.endswith("_error"))


def _search_result(content: Any, call_input: Any) -> SearchResult:
    """``web_search_tool_result`` content (a list of ``web_search_result``, or an error object)
    -> the canonical result; the query is the ``server_tool_use`` input's."""
    query = cast("dict[str, Any]", call_input).get("query") if isinstance(call_input, dict) else None
    return search_result(hit_pairs(content), [query])
