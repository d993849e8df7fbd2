"""What Anthropic Messages leaves out of a request (see ``route.support``); which reasoning and hosted
parts it keeps is the history lowering's own answer (``anthropic_messages.assistant_block``)."""

from __future__ import annotations

from ..route.support import ALWAYS_CONSTRAINED, Support, hosted_parts, no_field
from ..schema.content import Part, ReasoningPart

__all__ = ["SUPPORT"]

UNSENT = {
    **no_field("Anthropic Messages", "seed", "frequency_penalty", "presence_penalty"),
    "parts.reasoning": "Anthropic takes back only signed (or redacted) thinking",
    **hosted_parts("Anthropic takes back only its own hosted tool calls and results"),
    "output_schema.strict": ALWAYS_CONSTRAINED,
}


def _replayable(part: Part) -> bool:
    """Whether the history lowering keeps ``part``: signed thinking and Anthropic's own hosted calls."""
    if not isinstance(part, ReasoningPart) and not getattr(part, "provider_executed", False):
        return True
    from .anthropic_messages.lower import assistant_block  # that module imports this one

    return assistant_block(part) is not None


SUPPORT = Support(UNSENT, keeps_part=_replayable)
