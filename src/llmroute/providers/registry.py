"""The one list of native protocols and provider facades.

The ``llmroute`` command's ``--model PROVIDER:ID``, the gateway's ``"provider"`` names and the test
suites (protocol shape, hosted tools, facades, fuzz, hostile bytes, telemetry, protocol properties)
all read these two tuples instead of keeping lists of their own.

Adding a native protocol: write its module in ``llmroute/protocols/`` (the six sections, ``NAME``,
``PROTOCOL``, ``route``), then add one ``ProtocolEntry`` below with a sample model and a real
recording of its stream under ``cassettes/``, and its stream generators to
``tests/conformance/stream_generators.py``. ``tests/unit/test_registry.py`` fails, naming the
module or the protocol, while either is missing. Names are dotted module paths, imported only when asked
for, so reading the registry loads no facade and no protocol.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from ..route.model import Model

__all__ = [
    "FACADES",
    "PROTOCOLS",
    "SAMPLE_KEY",
    "Facade",
    "ProtocolEntry",
    "facade_names",
    "named_facades",
]

SAMPLE_KEY = "sk-test-0123456789abcdef"
"""The placeholder API key of every sample model (not a credential: nothing accepts it)."""


# -- facades --------------------------------------------------------------------------------------


class Facade(msgspec.Struct, frozen=True):
    """One provider facade module."""

    name: str
    """The provider name ``llmroute chat --model NAME:ID`` and the gateway's ``"provider"`` take."""
    module: str
    """The facade's dotted module path; its ``configure`` is the facade class."""
    chat: str = "model"
    """The facade method ``llmroute chat`` calls with the model id (the gateway calls ``model``)."""
    aliases: tuple[str, ...] = ()
    """Other names ``llmroute chat --model`` accepts for this facade."""
    by_name: bool = True
    """Chosen by name in the CLI and the gateway config. ``compatible`` is reached by its own rules
    (``base_url`` or a family name); Vertex needs a project and location, so neither takes part."""

    def load(self) -> ModuleType:
        """The facade module (imported now, not before)."""
        return importlib.import_module(self.module)


FACADES: tuple[Facade, ...] = (
    Facade("openai", "llmroute.providers.openai"),
    Facade("anthropic", "llmroute.providers.anthropic", chat="messages"),
    Facade("google", "llmroute.providers.google", chat="gemini", aliases=("gemini",)),
    Facade("glm", "llmroute.providers.glm", chat="chat"),
    Facade("xai", "llmroute.providers.xai", chat="chat"),
    Facade("openrouter", "llmroute.providers.openrouter", chat="chat"),
    Facade("azure", "llmroute.providers.azure", chat="chat"),
    Facade("bedrock", "llmroute.providers.bedrock", chat="converse"),
    Facade("vertex", "llmroute.providers.vertex", chat="gemini", by_name=False),
    Facade("compatible", "llmroute.providers.compatible", by_name=False),
)


def named_facades(*, aliases: bool = False) -> dict[str, Facade]:
    """The facades chosen by name, keyed by that name (and by their aliases, when asked)."""
    named = {f.name: f for f in FACADES if f.by_name}
    if aliases:
        named.update({alias: f for f in FACADES if f.by_name for alias in f.aliases})
    return named


def facade_names(*, aliases: bool = False) -> list[str]:
    """Every provider name a user may give, sorted: the named facades, ``compatible`` and its
    families (the list an "unknown provider" error shows)."""
    from .compatible import FAMILIES

    return sorted({*named_facades(aliases=aliases), "compatible", *FAMILIES})


# -- protocols ------------------------------------------------------------------------------------


class ProtocolEntry(msgspec.Struct, frozen=True):
    """One native wire protocol and how the tests reach it."""

    name: str
    """The protocol's ``NAME`` (routes, errors and recorded metadata carry it)."""
    module: str
    """Its dotted module path under ``llmroute.protocols``."""
    sample: Callable[[str], Model]
    """Origin (``http://127.0.0.1:PORT``) -> a Model speaking this protocol to that origin, built by
    its facade with ``SAMPLE_KEY``."""
    stream: str
    """A real recorded streamed answer (a tool call), as a path under ``cassettes/``."""
    whole: str
    """A real recorded non-streamed answer, as a path under ``cassettes/``."""
    content_type: str = "text/event-stream"
    """The streamed answer's content type (its framing)."""

    def load(self) -> ModuleType:
        """The protocol module (imported now, not before)."""
        return importlib.import_module(self.module)


def _openai_chat(origin: str) -> Model:
    from . import compatible

    return compatible.configure(base_url=f"{origin}/v1", api_key=SAMPLE_KEY).model("test-model")


def _openai_responses(origin: str) -> Model:
    from . import openai

    return openai.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1").responses("gpt-5.5")


def _anthropic_messages(origin: str) -> Model:
    from . import anthropic

    return anthropic.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1").messages("claude-haiku-4-5")


def _gemini(origin: str) -> Model:
    from . import google

    return google.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1beta").gemini("gemini-2.5-flash")


def _bedrock_converse(origin: str) -> Model:
    from . import bedrock

    provider = bedrock.configure(region="us-east-1", api_key=SAMPLE_KEY, base_url=origin)
    return provider.converse("us.amazon.nova-micro-v1:0")


# Gemini Code Assist is not an entry: it is the Gemini protocol inside an envelope (its parsing and
# state are gemini's), covered by gemini's entry and tests/conformance/test_gemini.py.
PROTOCOLS: tuple[ProtocolEntry, ...] = (
    ProtocolEntry(
        "openai-chat",
        "llmroute.protocols.openai_chat",
        _openai_chat,
        stream="opencode/openai-chat/streams-tool-call.yaml",
        whole="vercel-ai/openai/chat/openai-text.json.yaml",
    ),
    ProtocolEntry(
        "openai-responses",
        "llmroute.protocols.openai_responses",
        _openai_responses,
        stream="opencode/openai-responses/gpt-5-5-streams-tool-call.yaml",
        whole="vercel-ai/openai/responses/openai-web-search-tool.1.json.yaml",
    ),
    ProtocolEntry(
        "anthropic-messages",
        "llmroute.protocols.anthropic_messages",
        _anthropic_messages,
        stream="opencode/anthropic-messages/streams-tool-call.yaml",
        whole="vercel-ai/anthropic/anthropic-json-tool.1.json.yaml",
    ),
    ProtocolEntry(
        "gemini",
        "llmroute.protocols.gemini",
        _gemini,
        stream="opencode/gemini/streams-tool-call.yaml",
        whole="vercel-ai/google/google-tool-call.json.yaml",
    ),
    ProtocolEntry(
        "bedrock-converse",
        "llmroute.protocols.bedrock_converse",
        _bedrock_converse,
        stream="opencode/bedrock-converse/streams-a-tool-call.yaml",
        whole="vercel-ai/amazon-bedrock/amazon-bedrock-json-tool.1.json.yaml",
        content_type="application/vnd.amazon.eventstream",
    ),
)
