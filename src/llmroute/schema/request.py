"""The canonical request."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from .content import Message, TextPart
from .options import CachePolicy, GenerationOptions, HttpOverlay
from .tools import ToolChoice, ToolSpec

__all__ = ["LLMRequest", "ModelRef", "OutputSchema"]


class OutputSchema(msgspec.Struct, frozen=True, omit_defaults=True):
    """Ask for JSON matching ``schema``. Protocols with a native JSON-schema mode lower it (OpenAI
    ``response_format`` / ``text.format``, Gemini ``responseSchema``); ``generate_object`` falls
    back to a forced tool elsewhere."""

    name: str
    schema: dict[str, Any]
    description: str | None = None
    strict: bool = True


@runtime_checkable
class ModelRef(Protocol):
    """What the schema needs of a model: its id and provider name (``route.Model`` satisfies it)."""

    @property
    def id(self) -> str: ...

    @property
    def provider(self) -> str: ...


class LLMRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """One model call, provider-neutral. Build with ``llmroute.request(...)``; update with
    ``msgspec.structs.replace``."""

    model: Any  # a route.Model; typed loosely because schema imports nothing from the package
    system: tuple[TextPart, ...] = ()
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    generation: GenerationOptions | None = None
    provider_options: dict[str, dict[str, Any]] | None = None
    http: HttpOverlay | None = None
    cache: CachePolicy | None = None
    output_schema: OutputSchema | None = None
    metadata: dict[str, Any] | None = None

    def options_for(self, namespace: str) -> dict[str, Any]:
        """Provider options under ``namespace`` (e.g. ``"openai"``), empty when none."""
        if not self.provider_options:
            return {}
        return self.provider_options.get(namespace) or {}
