"""What Anthropic Messages leaves out of a request (see ``route.support``); which reasoning and hosted
parts it keeps is the history lowering's own answer (``anthropic_messages.assistant_block``).

One gap depends on the whole request: with thinking on, Anthropic refuses a tool loop whose last
assistant turn does not start with its own signed thinking ("Expected `thinking` or
`redacted_thinking`, but found `tool_use`"). A turn another model answered (a router's other
target, a client of another API) has none Anthropic can verify, so thinking is left off for that
request, with a warning, instead of sending a request Anthropic rejects."""

from __future__ import annotations

from typing import Any

import msgspec

from ..route.support import ALWAYS_CONSTRAINED, Support, breakpoint_cache, hosted_parts, no_field
from ..schema.content import Part, ReasoningPart, ToolCallPart
from ..schema.notices import RequestWarning
from ..schema.request import LLMRequest

__all__ = ["SUPPORT"]

UNSENT = {
    **no_field("Anthropic Messages", "seed", "frequency_penalty", "presence_penalty"),
    "parts.reasoning": "Anthropic takes back only signed (or redacted) thinking",
    **hosted_parts("Anthropic takes back only its own hosted tool calls and results"),
    "output_schema.strict": ALWAYS_CONSTRAINED,
    **breakpoint_cache("Anthropic"),
}

_NAMESPACE = "anthropic"  # anthropic_messages.NAMESPACE (that package imports this module)
_UNSIGNED = (
    "the tool loop's last assistant turn has no thinking Anthropic signed (another model answered it), "
    "which Anthropic refuses with thinking on; this step runs without thinking"
)


def _replayable(part: Part) -> bool:
    """Whether the history lowering keeps ``part``: signed thinking and Anthropic's own hosted calls."""
    if not isinstance(part, ReasoningPart) and not getattr(part, "provider_executed", False):
        return True
    from .anthropic_messages.lower import assistant_block  # that module imports this one

    return assistant_block(part) is not None


def _thinks(value: Any) -> bool:
    if value is None or value == "disabled":
        return False
    return not (isinstance(value, dict) and value.get("type") == "disabled")  # pyright: ignore[reportUnknownMemberType]


def _unsigned_tool_turn(request: LLMRequest) -> bool:
    """The request continues a tool loop whose last assistant turn does not start with signed thinking."""
    messages = request.messages
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
    if last is None or not any(m.role == "tool" for m in messages[last + 1 :]):
        return False
    parts = messages[last].content
    if not any(isinstance(p, ToolCallPart) for p in parts):
        return False
    from .anthropic_messages.lower import assistant_block

    first = next((b for b in (assistant_block(p) for p in parts) if b is not None), None)
    return type(first).__name__ not in ("Thinking", "RedactedThinking")


def _check(request: LLMRequest, route: str) -> tuple[LLMRequest, tuple[RequestWarning, ...]]:
    options = request.provider_options
    if not options:
        return request, ()
    spaces = {_NAMESPACE, str(getattr(request.model, "provider", ""))}
    holding = [n for n in spaces if _thinks((options.get(n) or {}).get("thinking"))]
    if not holding or not _unsigned_tool_turn(request):
        return request, ()
    trimmed = {
        n: {k: v for k, v in o.items() if k != "thinking" or n not in holding} for n, o in options.items()
    }
    warnings = tuple(
        RequestWarning(f"provider_options.{n}.thinking", route, _UNSIGNED) for n in sorted(holding)
    )
    return msgspec.structs.replace(request, provider_options=trimmed), warnings


SUPPORT = Support(UNSENT, keeps_part=_replayable, check=_check)
