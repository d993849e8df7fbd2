"""What Anthropic Messages leaves out of a request (see ``route.support``); which reasoning and hosted
parts it keeps is the history lowering's own test (``anthropic_messages._replayable``)."""

from __future__ import annotations

from ..route.support import hosted_parts, no_field

__all__ = ["UNSENT"]

UNSENT = {
    **no_field("Anthropic Messages", "seed", "frequency_penalty", "presence_penalty"),
    "parts.reasoning": "Anthropic takes back only signed (or redacted) thinking",
    **hosted_parts("Anthropic takes back only its own hosted tool calls and results"),
}
