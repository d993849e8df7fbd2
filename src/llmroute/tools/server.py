"""Server tools: tools the runtime runs itself, with per-call-chain state.

A ``ServerTool`` (the server-side ``web_search`` is one) is handed to ``client.stream`` /
``client.generate`` in ``tools=[...]`` like any tool. For each call chain (one ``stream`` /
``generate`` call with its tool steps) the runtime opens a ``ServerToolSession`` and, per step:

1. ``prepare(request)`` returns the request this step sends (the session adds, narrows or removes
   its own tool definitions, and may record why in ``request.metadata``);
2. calls to a name in ``names`` are executed by ``execute(call)`` (never left to the caller, also
   under ``tool_execution="none"``); a step whose only calls are server calls continues the chain
   even without ``stop_when``, up to ``SERVER_STEPS`` such steps;
3. ``step_finished(step)`` sees the folded step (its finish reason, its calls).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..route.executor import ExecutionContext
from ..schema.events import LLMEvent, ToolCall
from ..schema.request import LLMRequest
from ..schema.response import StepResult

__all__ = ["SERVER_STEPS", "ServerTool", "ServerToolSession"]

SERVER_STEPS = 8
"""Steps a chain without ``stop_when`` continues for server calls alone (a model that keeps
searching still ends)."""


class ServerToolSession(ABC):
    """One call chain's view of a server tool (see the module docstring)."""

    names: frozenset[str] = frozenset()

    @abstractmethod
    def prepare(self, request: LLMRequest) -> LLMRequest:
        """The request the next step sends."""

    @abstractmethod
    async def execute(self, call: ToolCall) -> Sequence[LLMEvent]:
        """``[tool-result]`` or ``[tool-error, error tool-result]`` for one call; recoverable
        failures are results, never exceptions."""

    def step_finished(self, step: StepResult) -> None:  # noqa: B027 - optional hook
        """Called after each step with its folded result."""


class ServerTool(ABC):
    """A tool the runtime executes itself; ``session`` opens its per-chain state."""

    @abstractmethod
    def session(self, ctx: ExecutionContext, request: LLMRequest) -> ServerToolSession:
        """State for one call chain; ``ctx`` runs any model calls the tool makes (same HTTP
        client, timeouts and retry policy as the chain)."""
