"""Voyage AI's ``POST /v1/embeddings``: OpenAI's body and answer with Voyage's fields
(``input_type`` ``query`` / ``document``, ``output_dimension``, base64 float32), at most 1,000
inputs a request and a token cap per model (1M for the lite models, 320K for ``voyage-3.5``,
``voyage-4``, ``voyage-3``, ``voyage-2``, 120K for the large, code, finance and law models and any
other). The other input types are sent without one, which is Voyage's own advice for tasks other
than retrieval.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...route.auth import Auth
from ...route.embedding import EmbeddingProtocol, EmbeddingRoute
from .openai import EmbeddingQuirks, make_protocol
from .openai import route as openai_route

__all__ = ["DEFAULT_BASE_URL", "NAME", "PROTOCOL", "protocol_for", "route"]

NAME = "voyage-embeddings"
DEFAULT_BASE_URL = "https://api.voyageai.com/v1"

MAX_INPUTS = 1000
_TOKENS_BY_PREFIX = (
    (("voyage-3.5-lite", "voyage-4-lite", "voyage-3-lite"), 1_000_000),
    (("voyage-3.5", "voyage-4", "voyage-3", "voyage-2"), 320_000),
)
_LARGEST_CAP = 120_000  # voyage-3-large, voyage-code-3, voyage-finance-2, voyage-law-2, ...
_LARGE = ("-large", "code-", "finance-", "law-", "multilingual-")


def _quirks(max_tokens: int) -> EmbeddingQuirks:
    return EmbeddingQuirks(
        dimensions_field="output_dimension",
        max_inputs=MAX_INPUTS,
        max_tokens=max_tokens,
        input_types={"query": "query", "document": "document"},
        input_type_note="Voyage's input types are query and document; other tasks are sent "
        "without one, as Voyage advises",
    )


_PROTOCOLS = {cap: make_protocol(_quirks(cap), NAME) for cap in (1_000_000, 320_000, _LARGEST_CAP)}
PROTOCOL = _PROTOCOLS[_LARGEST_CAP]  # any model not known to take more


def protocol_for(model_id: str) -> EmbeddingProtocol:
    """The protocol with ``model_id``'s token cap per request."""
    if not any(part in model_id for part in _LARGE):
        for prefixes, cap in _TOKENS_BY_PREFIX:
            if model_id.startswith(prefixes):
                return _PROTOCOLS[cap]
    return PROTOCOL


def route(
    base_url: str, auth: Auth, protocol: EmbeddingProtocol, *, headers: Mapping[str, str] | None = None
) -> EmbeddingRoute:
    """``{base_url}/embeddings``."""
    return openai_route(base_url, auth, name=NAME, headers=headers, protocol=protocol)
