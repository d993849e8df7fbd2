"""Azure OpenAI: deployments over Chat Completions, and the v1 Responses API.

    azure.configure("my-resource").chat("gpt-4o-prod")        # AZURE_OPENAI_API_KEY in the api-key header
    azure.configure(base_url="https://my-resource.openai.azure.com", token_provider=entra_token).chat("prod")
    azure.configure("my-resource").responses("gpt-5-prod")      # /openai/v1/responses

The resource comes from ``resource=`` / ``base_url=``, else ``AZURE_OPENAI_ENDPOINT`` /
``AZURE_OPENAI_RESOURCE``. Without ``api_key=``, ``token_provider=`` or ``AZURE_OPENAI_API_KEY``,
Microsoft Entra ID tokens come from azure-identity's ``DefaultAzureCredential`` when it is installed
(``pip install 'llmroute[azure]'``; see ``credentials.azure_identity``). ``api_version`` from ``OPENAI_API_VERSION`` (as in the openai SDK's
``AzureOpenAI``), else ``DEFAULT_API_VERSION``. Model ids are deployment names. With ``token_provider`` (an async callable
returning a Microsoft Entra access token, e.g. from ``azure.identity.aio``) requests carry
``Authorization: Bearer``; otherwise the key goes in ``api-key``.
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from ..protocols import openai_chat, openai_responses
from ..protocols.embeddings import openai as embeddings
from ..protocols.openai_chat import ChatQuirks
from ..route.auth import ApiKey, Auth, HeaderAuth, TokenProvider, TokenProviderAuth
from ..route.embedding import EmbeddingRoute
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError, NoRouteError
from ..schema.options import GenerationOptions
from ._facade import (
    EmbeddingFacade,
    check_callable,
    check_headers,
    check_model_id,
    check_text,
    env_default,
    make_model,
)
from .credentials import azure_identity, has_azure_identity

__all__ = ["DEFAULT_API_VERSION", "Azure", "configure"]

DEFAULT_API_VERSION = "2024-10-21"
_KEY_ENV = ("AZURE_OPENAI_API_KEY",)
# Azure may open a stream with a chunk whose ``choices`` is empty (prompt-filter results): declared.
_QUIRKS = ChatQuirks(empty_choices_ok=True)


def _root(base_url: str) -> str:
    """``https://x.openai.azure.com`` from any of its spellings (``/``, ``/openai``, ``/openai/v1``)."""
    root = base_url.rstrip("/")
    for suffix in ("/openai/v1", "/openai"):
        if root.endswith(suffix):
            return root[: -len(suffix)]
    return root


class Azure(EmbeddingFacade):
    """Azure OpenAI (``configure`` is this class): ``.chat(deployment)`` (also ``.model(...)``),
    ``.responses(deployment)`` and ``.embedding(deployment)``
    (``/openai/deployments/{deployment}/embeddings``). Resource, key and API version: see the module doc."""

    def __init__(
        self,
        resource: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        token_provider: TokenProvider | None = None,
        api_version: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("azure", resource=resource, base_url=base_url, api_version=api_version)
        check_callable("azure", "token_provider", token_provider)
        headers = check_headers("azure", headers)
        api_version = env_default(api_version, "OPENAI_API_VERSION")
        if api_version is None:
            api_version = DEFAULT_API_VERSION
        if resource and "://" in resource:
            resource, base_url = None, base_url or resource  # a URL passed positionally
        if base_url is None and resource is None:
            base_url = os.environ.get("AZURE_OPENAI_ENDPOINT") or None
            resource = None if base_url else os.environ.get("AZURE_OPENAI_RESOURCE") or None
        if base_url:
            self.root = _root(base_url)
        elif resource:
            self.root = f"https://{resource}.openai.azure.com"
        else:
            raise NoRouteError(
                "azure: no resource; pass resource= or base_url=, or set AZURE_OPENAI_RESOURCE or AZURE_OPENAI_ENDPOINT"
            )
        if token_provider is not None and api_key is not None:
            raise InvalidRequestError("azure: pass api_key= or token_provider=, not both")
        if not api_version:
            raise InvalidRequestError("azure: api_version must not be empty")
        self.api_version = api_version
        key = ApiKey(
            api_key,
            _KEY_ENV,
            "azure",
            other="pass token_provider=, or pip install 'llmroute[azure]' for Microsoft Entra ID tokens",
        )
        if token_provider is None and api_key is None and key.peek() is None and has_azure_identity():
            token_provider = azure_identity()
        self.auth: Auth = (
            TokenProviderAuth(token_provider) if token_provider is not None else HeaderAuth("api-key", key)
        )
        self.headers = headers
        endpoint = Endpoint(
            f"{self.root}/openai", "/deployments/{model}/chat/completions", {"api-version": api_version}
        )
        self._chat = openai_chat.route(
            endpoint, self.auth, quirks=_QUIRKS, name="azure-chat", headers=headers
        )
        # Reasoning deployments want ``max_completion_tokens``; deployment names often echo the model name.
        self._chat_reasoning = self._chat.with_(
            protocol=openai_chat.make_protocol(openai_chat.REASONING_QUIRKS)
        )

    def chat(
        self,
        deployment: str,
        *,
        reasoning: bool | None = None,
        generation: GenerationOptions | None = None,
        **options: Any,
    ) -> Model:
        """A Chat Completions deployment. ``reasoning`` (default: guessed from the deployment name)
        sends ``max_completion_tokens``; extra keyword options become body fields."""
        is_reasoning = (
            openai_chat.REASONING_MODEL.match(deployment) is not None if reasoning is None else reasoning
        )
        route = self._chat_reasoning if is_reasoning else self._chat
        return make_model(deployment, route, "azure", generation, options)

    def responses(
        self, deployment: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A deployment over the v1 Responses API (``{resource}/openai/v1/responses``)."""
        return make_model(deployment, self._responses, "azure", generation, options)

    model = chat

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("azure", model_id)
        return "azure", self._embeddings, model_id

    @cached_property
    def _embeddings(self) -> EmbeddingRoute:
        endpoint = Endpoint(
            f"{self.root}/openai", "/deployments/{model}/embeddings", {"api-version": self.api_version}
        )
        return embeddings.route(
            endpoint,
            self.auth,
            name="azure-embeddings",
            headers=self.headers,
        )

    @cached_property
    def _responses(self) -> Route:
        return openai_responses.route(
            f"{self.root}/openai/v1", self.auth, name="azure-responses", headers=self.headers
        )

    def __repr__(self) -> str:
        return f"Azure({self.root!r}, api_version={self.api_version!r}, auth={self.auth!r})"


configure = Azure
