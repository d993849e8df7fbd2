"""OpenAI-compatible servers. Known families are rows of data; anything else takes ``base_url=``.

compatible.configure("groq").model("llama-3.3-70b-versatile")            # GROQ_API_KEY
compatible.configure(base_url="http://127.0.0.1:8080/v1").model("local")  # no key needed
compatible.configure("mistral").embedding("mistral-embed")                # its /embeddings

A family's ``embeddings`` row says how its ``/embeddings`` differs from OpenAI's (``None``: it has
none): Mistral's ``output_dimension`` and 256-input cap, Together's fixed sizes, and floats (not
base64) wherever base64 is not documented.
"""

from __future__ import annotations

from ..protocols.embeddings.openai import MISTRAL_QUIRKS, EmbeddingQuirks
from ..protocols.openai_chat import ChatQuirks
from ..route.redact import Secret
from ..schema.errors import NoRouteError
from . import openrouter, xai
from ._facade import check_text
from ._family import Family, FamilyFacade

__all__ = ["FAMILIES", "Compatible", "Family", "configure"]


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("deepseek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
        Family("groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
        Family(
            "togetherai",
            "https://api.together.xyz/v1",
            ("TOGETHER_API_KEY", "TOGETHERAI_API_KEY"),
            ChatQuirks(supports_top_k=True),
            # ``model`` and ``input`` only: each model's vectors have one size
            embeddings=EmbeddingQuirks(dimensions_field=None, base64=False, max_tokens=None),
        ),
        Family(
            "fireworks",
            "https://api.fireworks.ai/inference/v1",
            ("FIREWORKS_API_KEY",),
            ChatQuirks(supports_top_k=True),
            embeddings=EmbeddingQuirks(base64=False, max_tokens=None),  # ``dimensions`` (nomic, Qwen3)
        ),
        Family("cerebras", "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",)),
        Family(
            "deepinfra",
            "https://api.deepinfra.com/v1/openai",
            ("DEEPINFRA_API_KEY",),
            ChatQuirks(supports_top_k=True),
            embeddings=EmbeddingQuirks(base64=False, max_tokens=None),
        ),
        Family("baseten", "https://inference.baseten.co/v1", ("BASETEN_API_KEY",)),
        # Mistral reports usage on the last chunk unasked, and ``stream_options`` is not in its API.
        Family(
            "mistral",
            "https://api.mistral.ai/v1",
            ("MISTRAL_API_KEY",),
            ChatQuirks(include_usage=False),
            embeddings=MISTRAL_QUIRKS,
        ),
        # Ollama's OpenAI endpoint on this machine: no key (OLLAMA_API_KEY when one is set).
        Family(
            "ollama",
            "http://localhost:11434/v1",
            ("OLLAMA_API_KEY",),
            embeddings=EmbeddingQuirks(base64=False, max_tokens=None),
            key_optional=True,
        ),
        # The rows the dedicated facades own; ``openrouter`` adds the provider's own options
        # (plugins, app headers, Responses, ...).
        xai.FAMILY,
        openrouter.FAMILY,
    )
}


class Compatible(FamilyFacade):
    """An OpenAI-compatible server (``configure`` is this class): a known family by name (its base
    URL, key variables and quirks), or any server at ``base_url=`` (``api_key=`` optional: local
    servers usually need none). ``.chat(id)``, also ``.model(id)``."""

    def __init__(
        self,
        family: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        headers: dict[str, str] | None = None,
        quirks: ChatQuirks | None = None,
        name: str | None = None,
    ) -> None:
        check_text("compatible", family=family, name=name)
        row = None
        if family is not None:
            row = FAMILIES.get(family)
            if row is None:
                known = ", ".join(sorted(FAMILIES))
                raise NoRouteError(
                    f"unknown OpenAI-compatible family {family!r}; known: {known}; or pass base_url="
                )
        super().__init__(
            row,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            quirks=quirks,
            name=name or family or "compatible",
        )

    def __repr__(self) -> str:
        return f"Compatible({self.name!r}, base_url={self.base_url!r})"


configure = Compatible
