"""Check the ordering rules every protocol must keep (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Sequence

from ..schema.events import (
    Finish,
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
)

__all__ = ["event_order_problems"]


def event_order_problems(events: Sequence[LLMEvent]) -> list[str]:
    """Every violation found, as readable sentences; an empty list means the stream is well formed."""
    problems: list[str] = []
    open_blocks: dict[tuple[str, str], int] = {}
    closed: set[tuple[str, str]] = set()
    tool_inputs: dict[str, int] = {}
    calls: dict[str, int] = {}
    finishes = 0
    in_step = False
    for n, event in enumerate(events):
        if finishes:
            problems.append(f"#{n} {event.__class__.__name__} after finish")
        if isinstance(event, StepStart):
            if in_step:
                problems.append(f"#{n} step-start inside an open step")
            in_step = True
        elif isinstance(event, TextStart | ReasoningStart):
            key = ("text" if isinstance(event, TextStart) else "reasoning", event.id)
            if key in open_blocks or key in closed:
                problems.append(f"#{n} {key[0]} block {event.id!r} started twice")
            open_blocks[key] = n
        elif isinstance(event, TextDelta | ReasoningDelta):
            key = ("text" if isinstance(event, TextDelta) else "reasoning", event.id)
            if key not in open_blocks:
                problems.append(f"#{n} {key[0]} delta for block {event.id!r} that is not open")
        elif isinstance(event, TextEnd | ReasoningEnd):
            key = ("text" if isinstance(event, TextEnd) else "reasoning", event.id)
            if key not in open_blocks:
                problems.append(f"#{n} {key[0]} end for block {event.id!r} that is not open")
            open_blocks.pop(key, None)
            closed.add(key)
        elif isinstance(event, ToolInputStart):
            if event.id in tool_inputs:
                problems.append(f"#{n} tool input {event.id!r} started twice")
            tool_inputs[event.id] = 0
        elif isinstance(event, ToolInputDelta):
            if event.id not in tool_inputs:
                problems.append(f"#{n} tool input delta for {event.id!r} before its start")
            elif tool_inputs[event.id]:
                problems.append(f"#{n} tool input delta for {event.id!r} after its end")
        elif isinstance(event, ToolInputEnd):
            if event.id not in tool_inputs:
                problems.append(f"#{n} tool input end for {event.id!r} before its start")
            else:
                tool_inputs[event.id] += 1
        elif isinstance(event, ToolCall):
            calls[event.id] = calls.get(event.id, 0) + 1
            if calls[event.id] > 1:
                problems.append(f"#{n} tool call {event.id!r} emitted twice")
        elif isinstance(event, StepFinish):
            if open_blocks:
                problems.append(f"#{n} step-finish with open blocks {sorted(open_blocks)}")
            pending = [i for i, ends in tool_inputs.items() if ends == 0]
            if pending:
                problems.append(f"#{n} step-finish with unfinished tool input {pending}")
            missing = [i for i in tool_inputs if i not in calls]
            if missing:
                problems.append(f"#{n} streamed tool input without a tool-call: {missing}")
            open_blocks.clear()
            in_step = False
        elif isinstance(event, Finish):
            finishes += 1
            if in_step:
                problems.append(f"#{n} finish inside an open step")
    if events and finishes != 1:
        problems.append(f"expected exactly one finish, saw {finishes}")
    return problems
