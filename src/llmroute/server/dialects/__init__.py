"""The inbound APIs the gateway serves, one module each (``server.dialect`` says what a dialect
owns), and ``DIALECTS``: the table ``server/app.py`` builds its ``POST`` routes from. A new inbound
API is its module and one row here."""

from __future__ import annotations

from ..dialect import AnyDialect
from . import anthropic_messages, gemini, openai_chat, openai_responses

__all__ = ["DIALECTS"]

DIALECTS: tuple[AnyDialect, ...] = (
    openai_chat.DIALECT,
    openai_responses.DIALECT,
    anthropic_messages.DIALECT,
    gemini.DIALECT,
)
"""Every inbound dialect, in route order."""
