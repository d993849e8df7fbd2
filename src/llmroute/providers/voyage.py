"""Voyage AI's embeddings: ``voyage.configure(api_key=...).embedding("voyage-3.5")``.

The key defaults to ``VOYAGE_API_KEY`` (as the voyageai SDK), sent as a bearer token to
``https://api.voyageai.com/v1/embeddings``.
"""

from __future__ import annotations

from typing import Any

from ..protocols.embeddings import voyage as voyage_embeddings
from ..route.auth import bearer
from ..route.embedding import EmbeddingModel
from ..route.redact import Secret
from ..schema.embedding import InputType
from ._facade import check_headers, check_model_id, check_text, make_embedding

__all__ = ["Voyage", "configure"]

ENV = ("VOYAGE_API_KEY",)


class Voyage:
    """Voyage AI (``configure`` is this class): ``.embedding(id)``."""

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

    def embedding(
        self,
        model_id: str,
        *,
        dimensions: int | None = None,
        input_type: InputType | None = None,
        **options: Any,
    ) -> EmbeddingModel:
        """An embedding model (``voyage-3.5``, ``voyage-code-3``, ...) for ``client.embed``, with
        the model's token cap per request. ``dimensions`` is ``output_dimension``; keyword options
        are body fields (``truncation``)."""
        check_model_id("voyage", model_id)
        route = voyage_embeddings.route(
            self.base_url, self.auth, voyage_embeddings.protocol_for(model_id), headers=self.headers
        )
        return make_embedding(model_id, route, "voyage", dimensions, input_type, options)

    model = embedding

    def __repr__(self) -> str:
        return f"Voyage(base_url={self.base_url!r})"


configure = Voyage
