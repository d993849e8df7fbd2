"""Stop conditions for the tool loop: callables on the ``StepResult`` just finished.

The loop continues after a step only when the step ran local tool calls and none of the conditions
holds. Without ``stop_when`` the condition is ``step_count_is(DEFAULT_MAX_STEPS)`` (20 model
calls); ``stop_when=step_count_is(1)`` runs one step's tools without calling the model again.
"""

from __future__ import annotations

from collections.abc import Callable

from ..schema.content import ToolCallPart
from ..schema.response import StepResult

__all__ = ["StopCondition", "has_tool_call", "step_count_is"]

StopCondition = Callable[[StepResult], bool]


def step_count_is(n: int) -> StopCondition:
    """Stop once ``n`` model calls have run (``step_count_is(1)``: never continue)."""
    if n < 1:
        raise ValueError("step_count_is: n must be at least 1")

    def condition(step: StepResult) -> bool:
        return step.index + 1 >= n

    condition.__name__ = f"step_count_is({n})"
    return condition


def has_tool_call(*names: str) -> StopCondition:
    """Stop after a step in which the model called any of ``names`` (its tools still run)."""
    wanted = frozenset(names)

    def condition(step: StepResult) -> bool:
        return any(isinstance(p, ToolCallPart) and p.name in wanted for p in step.message.content)

    condition.__name__ = f"has_tool_call({', '.join(names)})"
    return condition
