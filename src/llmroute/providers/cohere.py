"""Cohere's embeddings: ``cohere.configure(api_key=...).embedding("embed-v4.0")``.

As in the cohere SDK, the key defaults to ``CO_API_KEY`` (then ``COHERE_API_KEY``) and the base URL
to ``CO_API_URL``; requests go to ``/v2/embed`` with a bearer key. Cohere's chat models are not
routed here (use its OpenAI-compatible endpoint through ``compatible``).
"""

from __future__ import annotations

from functools import cached_property

from ..protocols.embeddings import cohere as cohere_embeddings
from ..route.auth import bearer
from ..route.embedding import EmbeddingRoute
from ..route.redact import Secret
from ._facade import EmbeddingFacade, check_headers, check_model_id, check_text, env_base_url

__all__ = ["Cohere", "configure"]

ENV = ("CO_API_KEY", "COHERE_API_KEY")


class Cohere(EmbeddingFacade):
    """Cohere (``configure`` is this class): ``.embedding(id)`` (``embed-v4.0``,
    ``embed-english-v3.0``, ...; ``dimensions`` is ``output_dimension`` (v4), ``input_type``
    defaults to documents; options are body fields: ``truncate``)."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("cohere", base_url=base_url)
        self.base_url = env_base_url(base_url, "CO_API_URL", cohere_embeddings.DEFAULT_BASE_URL)
        self.auth = bearer(api_key, *ENV, provider="cohere")
        self.headers = check_headers("cohere", headers)

    model = EmbeddingFacade.embedding  # the recommended API: the only one

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("cohere", model_id)
        return "cohere", self._embeddings, model_id

    @cached_property
    def _embeddings(self) -> EmbeddingRoute:
        return cohere_embeddings.route(self.base_url, self.auth, headers=self.headers)

    def __repr__(self) -> str:
        return f"Cohere(base_url={self.base_url!r})"


configure = Cohere
