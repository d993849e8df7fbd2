"""OpenAI: ``openai.configure(api_key=...).chat("gpt-4o-mini")``.

As in the openai SDK, unset arguments come from ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID``; explicit arguments win."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

from ..protocols import openai_chat, openai_responses
from ..protocols.embeddings import openai as embeddings
from ..route.auth import bearer
from ..route.embedding import EmbeddingRoute
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError
from ..schema.options import GenerationOptions
from ._facade import (
    EmbeddingFacade,
    check_headers,
    check_model_id,
    check_text,
    env_base_url,
    env_default,
    make_model,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAI", "configure"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAI(EmbeddingFacade):
    """The OpenAI API (``configure`` is this class): ``.responses(id)`` (also ``.model(id)``),
    ``.chat(id)`` and ``.embedding(id)`` (``/embeddings``: ``dimensions`` on the
    ``text-embedding-3`` models, base64 answers). Unset arguments come from the openai SDK's variables (module doc)."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("openai", base_url=base_url, organization=organization, project=project)
        self.base_url = env_base_url(base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        self.auth = bearer(api_key, "OPENAI_API_KEY", provider="openai")
        organization = env_default(organization, "OPENAI_ORG_ID")
        project = env_default(project, "OPENAI_PROJECT_ID")
        extra = check_headers("openai", headers) or {}
        if organization:
            extra["openai-organization"] = organization
        if project:
            extra["openai-project"] = project
        self.headers = extra or None
        self._chat = openai_chat.route(self.base_url, self.auth, headers=self.headers)
        self._chat_reasoning = self._chat.with_(
            protocol=openai_chat.make_protocol(openai_chat.REASONING_QUIRKS)
        )
        self._responses = openai_responses.route(self.base_url, self.auth, headers=self.headers)

    def chat(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Chat Completions model. Extra keyword options become body fields (``reasoning_effort``, ...)."""
        check_model_id("openai", model_id)
        if "transport" in options:  # else it would go out as a body field and the call would run on HTTP
            raise InvalidRequestError(
                "transport: WebSocket is a Responses API transport: use .responses(model_id, transport=...)",
                param="transport",
            )
        route = self._chat_reasoning if openai_chat.REASONING_MODEL.match(model_id) else self._chat
        return make_model(model_id, route, "openai", generation, options)

    def responses(
        self,
        model_id: str,
        *,
        transport: Literal["http", "websocket"] = "http",
        generation: GenerationOptions | None = None,
        **options: Any,
    ) -> Model:
        """A Responses API model. Extra keyword options become body fields (``reasoning_effort``,
        ``reasoning_summary``, ``verbosity``, ``store``, ``include``, ``service_tier``, ...).
        ``transport="websocket"`` streams over ``wss://.../responses`` (extra ``llmroute[websocket]``)."""
        if transport == "websocket":
            route = self._responses_ws
        elif transport == "http":
            route = self._responses
        else:
            raise InvalidRequestError(f"openai: unknown transport {transport!r} (use 'http' or 'websocket')")
        return make_model(model_id, route, "openai", generation, options)

    model = responses  # the recommended API

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("openai", model_id)
        return "openai", self._embeddings, model_id

    @cached_property
    def _embeddings(self) -> EmbeddingRoute:
        return embeddings.route(self.base_url, self.auth, headers=self.headers)

    @cached_property
    def _responses_ws(self) -> Route:
        from ..protocols.openai_responses_socket import DIALECT
        from ..route.websocket import MessageFraming, WebSocketTransport

        return self._responses.with_(
            name="openai-responses-websocket",
            framing=MessageFraming(),
            transport=WebSocketTransport(openai_responses.websocket_message, dialect=DIALECT),
        )

    def __repr__(self) -> str:
        return f"OpenAI(base_url={self.base_url!r})"


configure = OpenAI
