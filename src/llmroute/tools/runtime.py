"""The tool loop: call the model, run its tool calls, feed the results back, repeat.

Per step: ``step-start``, the model's events, then (for the step's local tool calls, run
concurrently under a ``CapacityLimiter``) ``tool-error`` / ``tool-result`` events in call order,
then ``step-finish`` with that model call's usage. After the last step, one ``finish`` whose usage
is the sum of the steps'.

- Recoverable failures (unknown tool, input that does not validate, a handler raising
  ``ToolFailure``) become a ``tool-error`` event plus an error ``tool-result`` the model reads.
  Any other exception from a handler cancels the step's other tools and fails the stream.
- Provider-executed calls (hosted web search, code execution, ...) are never dispatched; they and
  their results stay in the assistant message carried into the next request.
- Calls to schema-only tools (a ``ToolDefinition``, or a ``Tool`` without handler) and every call
  under ``tool_execution="none"`` are left to the caller: the loop stops after that step.
- The next request is the previous one plus the step's assistant message (text, reasoning with
  signatures, tool calls, provider-executed calls/results, as folded by ``ResponseBuilder``) and a
  tool message holding the results.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Literal

import anyio
import msgspec

from ..route.executor import ExecutionContext, run_step
from ..schema.events import Finish, LLMEvent, StepFinish, ToolCall, ToolError, ToolResult
from ..schema.request import LLMRequest
from ..schema.response import ResponseBuilder, StepResult
from ..schema.tools import HostedTool, ToolDefinition, ToolSpec
from ..schema.usage import Usage
from .tool import Tool, ToolFailure

__all__ = ["DEFAULT_CONCURRENCY", "dispatch", "execute_calls", "run_tools"]

DEFAULT_CONCURRENCY = 10

StopWhen = Callable[[StepResult], bool] | Sequence[Callable[[StepResult], bool]] | None


def _registry(tools: Iterable[Any]) -> tuple[dict[str, Tool], list[ToolSpec]]:
    """Executable tools by name, and every spec to advertise (in order)."""
    registry: dict[str, Tool] = {}
    specs: list[ToolSpec] = []
    for item in tools:
        if isinstance(item, Tool):
            if item.executable:
                registry[item.name] = item
            specs.append(item.definition)
        elif isinstance(item, ToolDefinition | HostedTool):
            specs.append(item)
        else:
            raise TypeError(f"not a tool: {item!r} (use llmroute.tool, a ToolDefinition or a hosted tool)")
    return registry, specs


def _with_tools(request: LLMRequest, specs: Sequence[ToolSpec]) -> LLMRequest:
    """Runtime tools replace same-named function tools (and same-kind hosted tools) of the request."""
    if not specs:
        return request
    names = {s.name for s in specs if isinstance(s, ToolDefinition)}
    kinds = {s.kind for s in specs if isinstance(s, HostedTool)}
    kept = tuple(
        t
        for t in request.tools
        if not (
            (isinstance(t, ToolDefinition) and t.name in names)
            or (isinstance(t, HostedTool) and t.kind in kinds)
        )
    )
    return msgspec.structs.replace(request, tools=kept + tuple(specs))


def _error(call: ToolCall, message: str) -> list[LLMEvent]:
    meta = call.provider_metadata
    return [
        ToolError(call.id, call.name, message, meta),
        ToolResult(call.id, call.name, message, True, False, meta),
    ]


async def dispatch(tools: Mapping[str, Tool], call: ToolCall) -> list[LLMEvent]:
    """Run one call: ``[tool-result]`` or ``[tool-error, error tool-result]``. Exceptions other
    than ``ToolFailure`` propagate."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return _error(call, f"Unknown tool: {call.name} (available: {known})")
    try:
        result = await tool.invoke(tool.parse(call.input))
    except ToolFailure as exc:
        return _error(call, exc.message)
    return [ToolResult(call.id, call.name, result, False, False, call.provider_metadata)]


async def _dispatch_all(
    tools: Mapping[str, Tool], calls: Sequence[ToolCall], limiter: anyio.CapacityLimiter
) -> list[LLMEvent]:
    if len(calls) == 1:
        async with limiter:
            return await dispatch(tools, calls[0])
    results: list[list[LLMEvent]] = [[] for _ in calls]
    failures: list[Exception] = []

    async def run(i: int, call: ToolCall) -> None:
        try:
            async with limiter:
                results[i] = await dispatch(tools, call)
        except Exception as exc:  # a bug in a handler: stop the others, fail the stream
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for i, call in enumerate(calls):
            tg.start_soon(run, i, call)
    if failures:
        raise failures[0]
    return [event for events in results for event in events]


async def execute_calls(
    tools: Iterable[Any], calls: Sequence[ToolCall], *, max_concurrency: int | None = None
) -> list[LLMEvent]:
    """Run tool calls outside the loop (e.g. calls left pending in a stored history), concurrently;
    events in call order. Provider-executed calls are skipped."""
    registry, _ = _registry(tools)
    local = [c for c in calls if not c.provider_executed]
    if not local:
        return []
    return await _dispatch_all(registry, local, anyio.CapacityLimiter(max_concurrency or DEFAULT_CONCURRENCY))


def _conditions(stop_when: StopWhen) -> list[Callable[[StepResult], bool]]:
    if stop_when is None:
        return []
    if callable(stop_when):
        return [stop_when]
    return list(stop_when)


async def run_tools(
    ctx: ExecutionContext,
    request: LLMRequest,
    *,
    tools: Iterable[Any] = (),
    stop_when: StopWhen = None,
    tool_execution: Literal["auto", "none"] = "auto",
    max_concurrency: int | None = None,
) -> AsyncGenerator[list[LLMEvent], None]:
    """The multi-step loop as batches of events (see the module docstring)."""
    registry, specs = _registry(tools)
    request = _with_tools(request, specs)
    conditions = _conditions(stop_when)
    limiter = anyio.CapacityLimiter(max_concurrency or DEFAULT_CONCURRENCY)
    total: Usage | None = None
    index = 0
    executed: set[str] = set()  # call ids already run: a call the provider repeats never runs twice
    while True:
        builder = ResponseBuilder(keep_events=False)
        finish: StepFinish | None = None
        async with aclosing(run_step(ctx, request, index)) as batches:
            async for batch in batches:
                if batch and type(batch[-1]) is StepFinish:
                    finish = batch.pop()  # type: ignore[assignment]
                for event in batch:
                    builder.add(event)
                if batch:
                    yield batch
        assert finish is not None, "run_step ends with step-finish"
        calls = [c for c in builder.tool_calls if not c.provider_executed]
        runnable: list[ToolCall] = []
        pending = False
        for call in calls:
            if call.id in executed:
                continue
            if tool_execution == "auto" and (call.name in registry or not _declared(request, call.name)):
                runnable.append(call)  # unknown names are dispatched so the model hears about them
                executed.add(call.id)
            else:
                pending = True
        if runnable:
            results = await _dispatch_all(registry, runnable, limiter)
            for event in results:
                builder.add(event)
            yield results
        builder.add(finish)
        yield [finish]
        if finish.usage is not None:
            total = finish.usage if total is None else total + finish.usage
        step = builder.build()
        if not runnable or pending or not conditions or any(c(step.steps[-1]) for c in conditions):
            break
        request = msgspec.structs.replace(request, messages=request.messages + step.messages)
        index += 1
    yield [Finish(finish.reason, total, finish.provider_metadata)]


def _declared(request: LLMRequest, name: str) -> bool:
    return any(isinstance(t, ToolDefinition) and t.name == name for t in request.tools)
