"""An OpenAI-compatible family (a row of data: name, base URL, key variables, Chat quirks) and the
facade built from one. Shared by ``compatible`` and the facades that own their rows (``xai``,
``openrouter``), without an import cycle between them."""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any, ClassVar, cast

import msgspec

from ..protocols import openai_chat, openai_responses
from ..protocols.embeddings import openai as embeddings
from ..protocols.embeddings.openai import COMPATIBLE_QUIRKS, EmbeddingQuirks
from ..protocols.openai_chat import ChatQuirks
from ..protocols.openai_responses import ResponsesQuirks
from ..route.auth import Auth, NoAuth, bearer
from ..route.embedding import EmbeddingRoute
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError, NoRouteError
from ..schema.options import GenerationOptions
from ._facade import EmbeddingFacade, check_headers, check_model_id, check_text, make_model

__all__ = ["Family", "FamilyFacade", "FamilyWithResponses", "embedding_families"]


class Family(msgspec.Struct, frozen=True):
    """One OpenAI-compatible provider, as data."""

    name: str
    """The family's name (``compatible.configure("groq")``, the gateway's ``"provider"``)."""
    base_url: str
    """Its API's base URL (``.../v1``)."""
    env: tuple[str, ...]
    """The variables its key is read from, in order."""
    quirks: ChatQuirks = ChatQuirks()
    """How its Chat Completions differ from OpenAI's."""
    embeddings: EmbeddingQuirks | None = None
    """How its ``/embeddings`` differs from OpenAI's; ``None``: it serves no embeddings."""
    key_optional: bool = False
    """Without a key (none passed, none in ``env``) requests go unauthenticated (a local server)."""


class FamilyFacade(EmbeddingFacade):
    """Chat Completions at a family's base URL with its quirks and a bearer key from its variables
    (no family: ``base_url=`` is required and, without ``api_key=``, no auth); ``.embedding(id)``
    over its ``/embeddings`` (a family that serves none: ``NoRouteError``)."""

    def __init__(
        self,
        family: Family | None,
        *,
        base_url: str | None,
        api_key: str | Secret | None,
        headers: dict[str, str] | None,
        quirks: ChatQuirks | None,
        name: str,
    ) -> None:
        check_text(name, base_url=base_url)
        if quirks is not None and not isinstance(cast(object, quirks), ChatQuirks):
            raise InvalidRequestError(
                f"{name}: quirks must be a ChatQuirks, got {type(quirks).__name__}",
                param="quirks",
                provider=name,
            )
        headers = check_headers(name, headers)
        self.name = name
        self.base_url = (base_url or (family.base_url if family else "")).rstrip("/")
        if not self.base_url:
            raise NoRouteError("compatible: pass a known family name or base_url=")
        auth: Auth
        if family is not None and (not family.key_optional or api_key is not None or _key_set(family)):
            auth = bearer(api_key, *family.env, provider=name)
        elif api_key is not None:
            auth = bearer(api_key, provider=name)
        else:
            auth = NoAuth()  # local servers usually need no key
        self.auth = auth
        self.headers = headers
        self.family = family
        self._chat = openai_chat.route(
            self.base_url,
            auth,
            quirks=quirks or (family.quirks if family else ChatQuirks()),
            name=f"{name}-chat",
            headers=headers,
        )

    def chat(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Chat Completions model. Extra keyword options become body fields."""
        return make_model(model_id, self._chat, self.name, generation, options)

    model = chat

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id(self.name, model_id)
        return self.name, self._embeddings, model_id

    @cached_property
    def _embeddings(self) -> EmbeddingRoute:
        family = self.family
        if family is not None and family.embeddings is None:
            raise NoRouteError(
                f"{self.name} serves no embeddings API; families that do: {', '.join(embedding_families())}"
            )
        quirks = family.embeddings if family is not None and family.embeddings else COMPATIBLE_QUIRKS
        return embeddings.route(
            self.base_url,
            self.auth,
            name=f"{self.name}-embeddings",
            headers=self.headers,
            protocol=embeddings.make_protocol(quirks),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"


class FamilyWithResponses(FamilyFacade):
    """A family that also serves the Responses API at the same base URL (built on first use)."""

    responses_quirks: ClassVar[ResponsesQuirks | None] = None

    def responses(
        self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A model over the provider's Responses API. Extra keyword options become body fields."""
        return make_model(model_id, self._responses, self.name, generation, options)

    @cached_property
    def _responses(self) -> Route:
        return openai_responses.route(
            self.base_url,
            self.auth,
            name=f"{self.name}-responses",
            quirks=self.responses_quirks,
            headers=self.headers,
        )


def _key_set(family: Family) -> bool:
    return any(os.environ.get(name, "").strip() for name in family.env)


def embedding_families() -> list[str]:
    """The known families that serve ``/embeddings``, sorted."""
    from .compatible import FAMILIES

    return sorted(name for name, family in FAMILIES.items() if family.embeddings is not None)
