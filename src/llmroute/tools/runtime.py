"""The tool loop: call the model, run its tool calls, feed the results back, repeat.

Per step: ``step-start``, the model's events, then (for the step's local tool calls, run
concurrently under a ``CapacityLimiter``) ``tool-error`` / ``tool-result`` events in call order,
then ``step-finish`` with that model call's usage. After the last step, one ``finish`` whose usage
is the sum of the steps'.

- The loop continues while the model calls local tools, up to ``DEFAULT_MAX_STEPS`` model calls;
  ``stop_when`` replaces that cap with its own conditions (``step_count_is(1)``: run the tools of
  one step and stop).
- Failures become a ``tool-error`` event plus an error ``tool-result`` the model reads and may
  recover from: an unknown tool, input that does not validate, a handler raising ``ToolFailure``,
  and by default any other exception from a handler (``ToolError.exception`` holds it; the message
  names its type, credential-shaped text redacted). ``tool_errors="raise"`` instead cancels the
  step's other tools and fails the stream with ``ToolExecutionError`` (the handler's exception as
  ``__cause__``).
- Provider-executed calls (hosted web search, code execution, ...) are never dispatched; they and
  their results stay in the assistant message carried into the next request.
- Server tools (``tools.server.ServerTool``, e.g. the server-side ``web_search``) open a session
  per chain that prepares each step's request and executes its own calls (see ``tools.server``).
- Calls to schema-only tools (a ``ToolDefinition``, or a ``Tool`` without handler) and every call
  under ``tool_execution="none"`` are left to the caller: the loop stops after that step.
- The next request is the previous one plus the step's assistant message (text, reasoning with
  signatures, tool calls, provider-executed calls/results, as folded by ``ResponseBuilder``) and a
  tool message holding the results.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing
from functools import partial
from typing import Any, Literal

import anyio
import msgspec

from ..route.executor import ExecutionContext, run_step
from ..route.hooks import HookRunner, LoopInfo, ToolInfo
from ..route.redact import redact_text
from ..schema.errors import InvalidRequestError, ToolExecutionError
from ..schema.events import Finish, LLMEvent, StepFinish, ToolCall, ToolError, ToolResult
from ..schema.request import LLMRequest
from ..schema.response import ResponseBuilder, StepResult
from ..schema.tools import HostedTool, ToolDefinition, ToolSpec
from ..schema.usage import Usage
from .server import SERVER_STEPS, ServerTool, ServerToolSession
from .stop import step_count_is
from .tool import Tool, ToolFailure

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_STEPS",
    "ToolErrors",
    "dispatch",
    "error_events",
    "execute_calls",
    "run_tools",
]

DEFAULT_CONCURRENCY = 10
DEFAULT_MAX_STEPS = 20  # model calls per run when no ``stop_when`` is given

ToolErrors = Literal["return", "raise"]

StopWhen = Callable[[StepResult], bool] | Sequence[Callable[[StepResult], bool]] | None


def _registry(tools: Iterable[Any]) -> tuple[dict[str, Tool], list[ToolSpec], list[ServerTool]]:
    """Executable tools by name, every spec to advertise (in order), and the server tools."""
    registry: dict[str, Tool] = {}
    specs: list[ToolSpec] = []
    servers: list[ServerTool] = []
    for item in tools:
        if isinstance(item, ServerTool):
            servers.append(item)
        elif isinstance(item, Tool):
            if item.executable:
                registry[item.name] = item
            specs.append(item.definition)
        elif isinstance(item, ToolDefinition | HostedTool):
            specs.append(item)
        else:
            raise InvalidRequestError(
                f"tools: not a tool: {type(item).__name__} (use llmroute.tool, a ToolDefinition or a hosted tool)",
                param="tools",
            )
    return registry, specs, servers


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


def error_events(call: ToolCall, message: str, exception: BaseException | None = None) -> list[LLMEvent]:
    """A recoverable failure of ``call``: a ``tool-error`` event and the error result the model reads."""
    meta = call.provider_metadata
    return [
        ToolError(call.id, call.name, message, meta, exception),
        ToolResult(call.id, call.name, message, True, False, meta),
    ]


async def dispatch(
    tools: Mapping[str, Tool], call: ToolCall, *, errors: ToolErrors = "return"
) -> list[LLMEvent]:
    """Run one call: ``[tool-result]`` or ``[tool-error, error tool-result]``. With
    ``errors="raise"`` a handler exception other than ``ToolFailure`` raises ``ToolExecutionError``."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return error_events(call, f"Unknown tool: {call.name} (available: {known})")
    try:
        result = await tool.invoke(tool.parse(call.input))
    except ToolFailure as exc:
        return error_events(call, exc.message, exc)
    except Exception as exc:
        text = redact_text(f"{type(exc).__name__}: {exc}")
        if errors == "raise":
            raise ToolExecutionError(f"tool {call.name} raised {text}") from exc
        return error_events(call, f"Tool {call.name} failed: {text}", exc)
    return [ToolResult(call.id, call.name, result, False, False, call.provider_metadata)]


Runner = Callable[[ToolCall], Awaitable[Sequence[LLMEvent]]]


async def _dispatch_all(
    run_call: Runner, calls: Sequence[ToolCall], limiter: anyio.CapacityLimiter
) -> list[LLMEvent]:
    if len(calls) == 1:
        async with limiter:
            return list(await run_call(calls[0]))
    results: list[Sequence[LLMEvent]] = [[] for _ in calls]
    failures: list[Exception] = []

    async def run(i: int, call: ToolCall) -> None:
        try:
            async with limiter:
                results[i] = await run_call(call)
        except (
            Exception
        ) as exc:  # tool_errors="raise" (or a server tool failing): stop the others, fail the stream
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for i, call in enumerate(calls):
            tg.start_soon(run, i, call)
    if failures:
        raise failures[0]
    return [event for events in results for event in events]


async def execute_calls(
    tools: Iterable[Any],
    calls: Sequence[ToolCall],
    *,
    max_concurrency: int | None = None,
    tool_errors: ToolErrors = "return",
) -> list[LLMEvent]:
    """Run tool calls outside the loop (e.g. calls left pending in a stored history), concurrently;
    events in call order. Provider-executed calls are skipped."""
    registry, _, _ = _registry(tools)
    local = [c for c in calls if not c.provider_executed]
    if not local:
        return []
    limiter = anyio.CapacityLimiter(max_concurrency or DEFAULT_CONCURRENCY)
    return await _dispatch_all(partial(dispatch, registry, errors=tool_errors), local, limiter)


def _conditions(stop_when: StopWhen) -> list[Callable[[StepResult], bool]]:
    if stop_when is None:
        return [step_count_is(DEFAULT_MAX_STEPS)]
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
    tool_errors: ToolErrors = "return",
) -> AsyncGenerator[list[LLMEvent], None]:
    """The multi-step loop as batches of events (see the module docstring)."""
    registry, specs, servers = _registry(tools)
    request = _with_tools(request, specs)
    sessions = [server.session(ctx, request) for server in servers]
    owners: dict[str, ServerToolSession] = {name: s for s in sessions for name in s.names}
    conditions = _conditions(stop_when)
    limiter = anyio.CapacityLimiter(max_concurrency or DEFAULT_CONCURRENCY)

    async def run_call(call: ToolCall) -> Sequence[LLMEvent]:
        owner = owners.get(call.name)
        return await (
            owner.execute(call) if owner is not None else dispatch(registry, call, errors=tool_errors)
        )

    hooks = ctx.hooks
    loop = LoopInfo(request) if hooks is not None else None
    if hooks is not None and loop is not None:
        await hooks.loop_start(loop)
        run_call = partial(_traced_call, hooks, loop, registry, run_call)
    steps = _loop(
        ctx,
        request,
        run_call,
        owners,
        registry,
        sessions,
        conditions,
        limiter,
        stop_when,
        tool_execution,
        loop,
    )
    try:
        async with aclosing(steps):  # a ``break`` closes the model call's connection at once
            async for batch in steps:
                yield batch
    except BaseException as exc:
        if hooks is not None and loop is not None:
            await hooks.loop_end(loop, exc)
        raise
    if hooks is not None and loop is not None:
        await hooks.loop_end(loop, None)


async def _traced_call(
    hooks: HookRunner, loop: LoopInfo, registry: Mapping[str, Tool], run_call: Runner, call: ToolCall
) -> Sequence[LLMEvent]:
    tool = registry.get(call.name)
    info = ToolInfo(call, (tool.definition.description or None) if tool is not None else None, loop)
    await hooks.tool_start(info)
    try:
        events = await run_call(call)
    except BaseException as exc:
        await hooks.tool_end(info, (), exc)
        raise
    await hooks.tool_end(info, events, None)
    return events


async def _loop(
    ctx: ExecutionContext,
    request: LLMRequest,
    run_call: Runner,
    owners: Mapping[str, ServerToolSession],
    registry: Mapping[str, Tool],
    sessions: Sequence[ServerToolSession],
    conditions: Sequence[Callable[[StepResult], bool]],
    limiter: anyio.CapacityLimiter,
    stop_when: StopWhen,
    tool_execution: Literal["auto", "none"],
    loop: LoopInfo | None,
) -> AsyncGenerator[list[LLMEvent], None]:
    total: Usage | None = None
    index = 0
    executed: set[str] = set()  # call ids already run: a call the provider repeats never runs twice
    server_steps = 0
    while True:
        step_request = request
        for session in sessions:
            step_request = session.prepare(step_request)
        builder = ResponseBuilder(keep_events=False)
        finish: StepFinish | None = None
        async with aclosing(run_step(ctx, step_request, index, loop=loop)) as batches:
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
            if call.name in owners or (
                tool_execution == "auto" and (call.name in registry or not _declared(step_request, call.name))
            ):
                runnable.append(call)  # unknown names are dispatched so the model hears about them
                executed.add(call.id)
            else:
                pending = True
        if runnable:
            results = await _dispatch_all(run_call, runnable, limiter)
            for event in results:
                builder.add(event)
            yield results
        builder.add(finish)
        yield [finish]
        if finish.usage is not None:
            total = finish.usage if total is None else total + finish.usage
        step = builder.build()
        for session in sessions:
            session.step_finished(step.steps[-1])
        server_only = bool(runnable) and all(c.name in owners for c in runnable)
        server_steps += server_only
        if not runnable or pending or any(c(step.steps[-1]) for c in conditions):
            break
        if stop_when is None and server_only and server_steps > SERVER_STEPS:  # server tools' own cap
            break
        request = msgspec.structs.replace(request, messages=request.messages + step.messages)
        index += 1
    yield [Finish(finish.reason, total, finish.provider_metadata)]


def _declared(request: LLMRequest, name: str) -> bool:
    return any(isinstance(t, ToolDefinition) and t.name == name for t in request.tools)
