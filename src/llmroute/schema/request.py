"""The canonical request."""

from __future__ import annotations

from typing import Any

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
    """A name for the schema (OpenAI's ``json_schema.name``, the forced tool's name)."""
    schema: dict[str, Any]
    """The JSON Schema the answer must match."""
    description: str | None = None
    """What the answer is, for the model."""
    strict: bool = True
    """Ask the provider to enforce the schema exactly, where it can (OpenAI strict mode); the
    schema must then meet the provider's strict rules."""


class ModelRef:
    """The typed base of what ``LLMRequest.model`` holds: a ``route.Model`` (from a provider
    facade) or a model group (``llmroute.Router``), both of which extend it. The schema imports
    nothing from the rest of the package, so it knows a model by these two attributes;
    ``prepare()`` resolves the rest, and refuses anything else with a typed error."""

    __slots__ = ()  # a mixin of the msgspec Struct ``route.Model``: it adds no storage

    id: str
    """The model id as the provider knows it (a router: its name)."""
    provider: str
    """The provider's name: ``openai``, ``anthropic``, ``openrouter``, ... (a router: ``router``)."""


class LLMRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """One model call, provider-neutral. Build with ``llmroute.request(...)``; update with
    ``msgspec.structs.replace``."""

    model: ModelRef  # held as given: msgspec checks field types when decoding, never on init
    """The model to call: a ``route.Model`` (``openai.configure().chat("gpt-4o-mini")``) or a
    ``Router``."""
    system: tuple[TextPart, ...] = ()
    """System instructions, sent the way each protocol takes them."""
    messages: tuple[Message, ...] = ()
    """The conversation so far, oldest first."""
    tools: tuple[ToolSpec, ...] = ()
    """Tools the model may call: function tools (``ToolDefinition``) and provider-hosted ones
    (``HostedTool``)."""
    tool_choice: ToolChoice | None = None
    """Whether and which tool the model must call (``None``: the provider's default, ``auto``)."""
    generation: GenerationOptions | None = None
    """Sampling and length options; merged over the model's and route's defaults."""
    provider_options: dict[str, dict[str, Any]] | None = None
    """Provider-specific body keys by namespace (``{"openai": {"service_tier": "flex"}}``): added
    to the body of a route of that provider, never replacing a key built from the request."""
    http: HttpOverlay | None = None
    """Extra headers, query parameters and body keys for this call."""
    cache: CachePolicy | None = None
    """The prompt-cache policy (``CachePolicy``), lowered by every route in its own terms."""
    output_schema: OutputSchema | None = None
    """Structured output: the answer's text is JSON matching this schema."""
    metadata: dict[str, Any] | None = None
    """The caller's own notes (tool loops and server tools record decisions here): never sent."""
    json_mode: bool = False
    """The answer is one JSON object, without a schema (OpenAI ``json_object``, Gemini
    ``application/json``; Anthropic and Bedrock: a forced tool taking any object, answered as
    text). ``output_schema``, when set, says more and wins."""
    tool_handlers: tuple[Any, ...] = ()
    """The ``llmroute.tool`` tools given to ``llmroute.request(tools=...)`` whose handlers run the
    calls: ``stream``/``generate`` run them in the tool loop as if passed as ``tools=``. Never sent
    (``tools`` holds their definitions)."""

    session: str | None = None
    """The conversation this call belongs to (the gateway: ``X-Claude-Code-Session-Id``,
    ``x-session-id``, ...). A ``Router`` with ``affinity`` keeps a session on one target; routes
    send it as the provider's own affinity hint where there is one and ``cache.key`` is unset
    (OpenAI ``prompt_cache_key``, OpenRouter ``x-session-id``, xAI ``x-grok-conv-id``)."""

    def options_for(self, namespace: str) -> dict[str, Any]:
        """Provider options under ``namespace`` (e.g. ``"openai"``), empty when none."""
        if not self.provider_options:
            return {}
        return self.provider_options.get(namespace) or {}
