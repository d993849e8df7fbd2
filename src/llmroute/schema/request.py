"""The canonical request."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import msgspec

from .content import Message, TextPart
from .options import CachePolicy, GenerationOptions, HttpOverlay
from .tools import ToolChoice, ToolSpec

__all__ = ["LLMRequest", "ModelRef", "OutputSchema"]


class OutputSchema(msgspec.Struct, frozen=True, omit_defaults=True):
    """Ask for JSON matching ``schema``: the answer's text is that JSON, on every protocol. Lowered
    to the provider's JSON-schema mode (OpenAI ``response_format`` / ``text.format``, Gemini
    ``responseSchema``, Anthropic ``output_config.format`` and Bedrock ``outputConfig.textFormat``
    where the model has it), else to a forced tool whose input comes back as the answer's text
    (Anthropic and Bedrock models without the mode)."""

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
    """The caller's own notes (tool loops and server tools record decisions here): never sent."""
    json_mode: bool = False
    """The answer is one JSON object, without a schema (OpenAI ``json_object``, Gemini
    ``application/json``; Anthropic and Bedrock: a forced tool taking any object, answered as
    text). ``output_schema``, when set, says more and wins."""

    def options_for(self, namespace: str) -> dict[str, Any]:
        """Provider options under ``namespace`` (e.g. ``"openai"``), empty when none."""
        if not self.provider_options:
            return {}
        return self.provider_options.get(namespace) or {}
