"""Provider built-in tools that the caller runs, for ``request(tools=[...])``.

Unlike ``llmroute.hosted`` (the provider runs those), these are declared with the provider's own
tool type but executed by the caller: their calls come back as ordinary ``tool-call`` events
(``provider_executed=False``) named as below, the tool runtime hands them to a registered handler
(``llmroute.Tool(client_tools.shell(), run_shell)``) or stops for the caller, and the results go
back as the provider's matching output items. Each is a ``ToolDefinition`` whose ``kind`` names
the built-in; only protocols that declare the kind (``Protocol.tool_kinds``: OpenAI Responses
takes them all, OpenAI Chat Completions takes ``custom``) accept it, others refuse it with an
``InvalidRequestError``.

| constructor | call name | call input | result to send back |
|---|---|---|---|
| ``custom(name, ...)`` | ``name`` | the model's free text (``str``) | text |
| ``shell()`` | ``shell`` | ``{"commands": [...], "timeout_ms", "max_output_length"}`` | text (stdout), or the ``output`` list as the API takes it |
| ``local_shell()`` | ``local_shell`` | ``{"type": "exec", "command": [...], "env", ...}`` | text |
| ``apply_patch()`` | ``apply_patch`` | ``{"type": "create_file" / "update_file" / "delete_file", "path", "diff"}`` | text (``is_error`` marks a failed patch) |
| ``computer_use(...)`` | ``computer_use`` | the action (``{"type": "click", ...}``) | a screenshot ``MediaPart`` (or the output object) |
| ``tool_search()`` | ``tool_search`` | the search arguments | the list of tool definitions found |
"""

from __future__ import annotations

from typing import Any, Literal

from .schema.errors import InvalidRequestError
from .schema.tools import ToolDefinition

__all__ = ["KINDS", "apply_patch", "computer_use", "custom", "local_shell", "shell", "tool_search"]

# every client-executed built-in kind (``ToolDefinition.kind``) besides ``"function"``
KINDS = frozenset({"custom", "shell", "local_shell", "apply_patch", "computer_use", "tool_search"})

_ANY_INPUT: dict[str, Any] = {}  # the provider defines the input; the runtime passes it through as is


def _builtin(
    kind: str, name: str, description: str = "", options: dict[str, Any] | None = None
) -> ToolDefinition:
    kept = {k: v for k, v in (options or {}).items() if v is not None}
    return ToolDefinition(name, description, dict(_ANY_INPUT), kind=kind, options=kept or None)


def custom(
    name: str,
    description: str = "",
    *,
    grammar: str | None = None,
    syntax: Literal["lark", "regex"] = "lark",
) -> ToolDefinition:
    """A freeform tool: the model writes plain text (a SQL query, a script) instead of JSON,
    optionally constrained by a Lark or regex ``grammar``."""
    if not name:
        raise InvalidRequestError("client_tools.custom: a tool name is required")
    fmt = {"type": "grammar", "syntax": syntax, "definition": grammar} if grammar is not None else None
    return _builtin("custom", name, description, {"format": fmt})


def shell(**provider_specific: Any) -> ToolDefinition:
    """The model asks the caller to run shell commands (OpenAI ``shell``)."""
    return _builtin("shell", "shell", options=provider_specific)


def local_shell(**provider_specific: Any) -> ToolDefinition:
    """Codex-style local shell (OpenAI ``local_shell``): one command as an argv list."""
    return _builtin("local_shell", "local_shell", options=provider_specific)


def apply_patch(**provider_specific: Any) -> ToolDefinition:
    """The model edits files with create/update/delete operations (OpenAI ``apply_patch``)."""
    return _builtin("apply_patch", "apply_patch", options=provider_specific)


def computer_use(
    *,
    display_width: int,
    display_height: int,
    environment: str = "browser",
    **provider_specific: Any,
) -> ToolDefinition:
    """The model drives a screen the caller controls (OpenAI ``computer_use_preview``)."""
    options = {
        "display_width": display_width,
        "display_height": display_height,
        "environment": environment,
        **provider_specific,
    }
    return _builtin("computer_use", "computer_use", options=options)


def tool_search(description: str = "", **provider_specific: Any) -> ToolDefinition:
    """The model asks the caller to find more tools (OpenAI ``tool_search`` with client execution)."""
    return _builtin("tool_search", "tool_search", description, provider_specific)
