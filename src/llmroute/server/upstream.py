"""What an inbound dialect needs to know of where a request goes: the protocols its model (or every
target of its route) speaks, so a field only one API has is carried where that API is the upstream
and reported, or refused, where it is not."""

from __future__ import annotations

from collections.abc import Iterable

from ..route.model import Model
from ..router import Router

__all__ = ["ANTHROPIC", "GEMINI", "Upstream"]

ANTHROPIC = frozenset({"anthropic-messages", "bedrock-anthropic-messages"})
"""The protocols that speak Anthropic Messages (their bodies take Anthropic's own fields)."""
GEMINI = frozenset({"gemini", "gemini-code-assist"})
"""The protocols that speak Gemini ``generateContent``."""


class Upstream:
    """The protocol names a model or a route's targets speak, and which providers they are."""

    __slots__ = ("models", "protocols")

    def __init__(self, models: Iterable[Model]) -> None:
        self.models = tuple(models)
        self.protocols = frozenset(m.route.protocol.name for m in self.models)

    @classmethod
    def of(cls, model: Model | Router) -> Upstream:
        return cls(model.models() if isinstance(model, Router) else (model,))

    def every(self, family: frozenset[str]) -> bool:
        """Every target speaks one of ``family``."""
        return bool(self.protocols) and self.protocols <= family

    def some(self, family: frozenset[str]) -> bool:
        """At least one target speaks one of ``family``."""
        return not self.protocols.isdisjoint(family)

    def others(self, family: frozenset[str]) -> str:
        """The protocols outside ``family``, for a message (``openai-chat, gemini``)."""
        return ", ".join(sorted(self.protocols - family))
