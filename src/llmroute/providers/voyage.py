"""Voyage AI's embeddings: ``voyage.configure(api_key=...).embedding("voyage-3.5")``.

The key defaults to ``VOYAGE_API_KEY`` (as the voyageai SDK), sent as a bearer token to
``https://api.voyageai.com/v1/embeddings``.
"""

from __future__ import annotations

from ..protocols.embeddings import voyage as voyage_embeddings
from ..route.auth import bearer
from ..route.embedding import EmbeddingRoute
from ..route.redact import Secret
from ._facade import EmbeddingFacade, check_headers, check_model_id, check_text

__all__ = ["Voyage", "configure"]

ENV = ("VOYAGE_API_KEY",)


class Voyage(EmbeddingFacade):
    """Voyage AI (``configure`` is this class): ``.embedding(id)`` (``voyage-3.5``,
    ``voyage-code-3``, ...; ``dimensions`` is ``output_dimension``; options are body fields:
    ``truncation``)."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("voyage", base_url=base_url)
        self.base_url = (base_url or voyage_embeddings.DEFAULT_BASE_URL).rstrip("/")
        self.auth = bearer(api_key, *ENV, provider="voyage")
        self.headers = check_headers("voyage", headers)

    model = EmbeddingFacade.embedding  # the recommended API: the only one

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("voyage", model_id)
        protocol = voyage_embeddings.protocol_for(model_id)  # the model's token cap per request
        return (
            "voyage",
            voyage_embeddings.route(self.base_url, self.auth, protocol, headers=self.headers),
            model_id,
        )

    def __repr__(self) -> str:
        return f"Voyage(base_url={self.base_url!r})"


configure = Voyage
