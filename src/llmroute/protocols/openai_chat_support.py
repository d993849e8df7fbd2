"""What a Chat Completions server leaves out of a request (see ``route.support``): its table is
built from the server's ``ChatQuirks``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..route.support import AUTO_CACHE, Support, hosted_parts, no_field
from ..schema.content import ApprovalRequestPart, Part, ReasoningPart

if TYPE_CHECKING:
    from .openai_chat.wire import ChatQuirks

__all__ = ["chat_support"]


def chat_support(quirks: ChatQuirks) -> Support:
    """``top_k`` unless the quirks say the server takes one, cache breakpoints (caching is
    automatic), earlier reasoning unless the quirks echo it, approval requests, and hosted calls
    another API ran."""
    unsent = {
        "cache": AUTO_CACHE,
        "parts.approval-request": "Chat Completions has no tool approvals",
        **hosted_parts(),
    }
    if not quirks.supports_top_k:
        unsent.update(no_field("Chat Completions", "top_k"))
    if not (quirks.send_reasoning or quirks.send_reasoning_details):
        unsent["parts.reasoning"] = "this server does not take earlier reasoning back"
    return Support(unsent, keeps_part=_replayable)


def _replayable(part: Part) -> bool:
    """Whether the history lowering keeps a part of a type the table lists: function calls and
    their results only (no reasoning, approval requests or hosted calls)."""
    return not isinstance(part, ReasoningPart | ApprovalRequestPart) and not getattr(
        part, "provider_executed", False
    )
