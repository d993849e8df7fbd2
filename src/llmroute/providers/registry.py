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
    from ..route.embedding import EmbeddingModel
    from ..route.model import Model

__all__ = [
    "EMBEDDINGS",
    "EMBEDDING_FACADES",
    "FACADES",
    "PROTOCOLS",
    "SAMPLE_KEY",
    "EmbeddingEntry",
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
# Facades with embedding models only (``.embedding(id)``): no chat, so not in ``FACADES``.
EMBEDDING_FACADES: tuple[Facade, ...] = (
    Facade("cohere", "llmroute.providers.cohere", chat="embedding"),
    Facade("voyage", "llmroute.providers.voyage", chat="embedding"),
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


# -- embedding protocols --------------------------------------------------------------------------


class EmbeddingEntry(msgspec.Struct, frozen=True):
    """One embedding wire protocol (``llmroute.protocols.embeddings``) and how the tests reach it."""

    name: str
    """The protocol's ``name`` (its routes, errors and telemetry carry it)."""
    module: str
    """Its dotted module path."""
    sample: Callable[[str], EmbeddingModel]
    """Origin -> an ``EmbeddingModel`` speaking this protocol to that origin (``SAMPLE_KEY``)."""
    answer: str
    """An answer to ``inputs`` texts (a recording, or the provider's documented example), under
    ``cassettes/``."""
    inputs: int
    """How many inputs that answer holds vectors for."""
    dimensions: int
    """Floats per vector in that answer."""


def _openai_embedding(origin: str) -> EmbeddingModel:
    from . import openai

    return openai.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1").embedding("text-embedding-3-small")


def _gemini_embedding(origin: str) -> EmbeddingModel:
    from . import google

    return google.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1beta").embedding("gemini-embedding-001")


def _vertex_embedding(origin: str) -> EmbeddingModel:
    from . import vertex

    facade = vertex.configure(project="p", location="us-central1", access_token=SAMPLE_KEY, base_url=origin)
    return facade.embedding("text-embedding-005")


def _titan_embedding(origin: str) -> EmbeddingModel:
    from . import bedrock

    facade = bedrock.configure(region="us-east-1", api_key=SAMPLE_KEY, base_url=origin)
    return facade.embedding("amazon.titan-embed-text-v2:0")


def _bedrock_cohere_embedding(origin: str) -> EmbeddingModel:
    from . import bedrock

    facade = bedrock.configure(region="us-east-1", api_key=SAMPLE_KEY, base_url=origin)
    return facade.embedding("cohere.embed-english-v3")


def _cohere_embedding(origin: str) -> EmbeddingModel:
    from . import cohere

    return cohere.configure(api_key=SAMPLE_KEY, base_url=origin).embedding("embed-v4.0")


def _voyage_embedding(origin: str) -> EmbeddingModel:
    from . import voyage

    return voyage.configure(api_key=SAMPLE_KEY, base_url=f"{origin}/v1").embedding("voyage-3.5")


EMBEDDINGS: tuple[EmbeddingEntry, ...] = (
    EmbeddingEntry(
        "openai-embeddings",
        "llmroute.protocols.embeddings.openai",
        _openai_embedding,
        answer="vercel-ai/openai/embedding/openai-embedding.json.yaml",
        inputs=2,
        dimensions=5,
    ),
    EmbeddingEntry(
        "gemini-embeddings",
        "llmroute.protocols.embeddings.gemini",
        _gemini_embedding,
        answer="embeddings/gemini-batch-embed-contents.yaml",
        inputs=3,
        dimensions=8,
    ),
    EmbeddingEntry(
        "vertex-embeddings",
        "llmroute.protocols.embeddings.vertex",
        _vertex_embedding,
        answer="embeddings/vertex-predict.yaml",
        inputs=2,
        dimensions=8,
    ),
    EmbeddingEntry(
        "bedrock-titan-embeddings",
        "llmroute.protocols.embeddings.bedrock",
        _titan_embedding,
        answer="embeddings/bedrock-titan-v2.yaml",
        inputs=1,
        dimensions=8,
    ),
    EmbeddingEntry(
        "bedrock-cohere-embeddings",
        "llmroute.protocols.embeddings.bedrock",
        _bedrock_cohere_embedding,
        answer="embeddings/bedrock-cohere-v3.yaml",
        inputs=2,
        dimensions=8,
    ),
    EmbeddingEntry(
        "cohere-embeddings",
        "llmroute.protocols.embeddings.cohere",
        _cohere_embedding,
        answer="embeddings/cohere-v2-embed.yaml",
        inputs=3,
        dimensions=8,
    ),
    EmbeddingEntry(
        "voyage-embeddings",
        "llmroute.protocols.embeddings.voyage",
        _voyage_embedding,
        answer="embeddings/voyage-embeddings.yaml",
        inputs=2,
        dimensions=8,
    ),
)
"""Every embedding protocol; ``tests/conformance/test_embeddings.py`` checks each one's request
and decodes its answer, and fails naming a module of ``protocols/embeddings`` missing here."""
