"""Google Gemini: ``google.configure(api_key=...).gemini("gemini-2.5-flash")``.

The key defaults to ``GEMINI_API_KEY`` (then ``GOOGLE_API_KEY``) and is sent as ``x-goog-api-key``;
the base URL to ``GOOGLE_GEMINI_BASE_URL`` plus ``/`` ``GOOGLE_GENAI_API_VERSION`` (``v1beta``), as in
google-genai.
``google.code_assist(access_token=..., project=...)`` reaches the same models through Code Assist
(``cloudcode-pa``, OAuth bearer token, the same protocol in a ``{model, project, request}`` envelope).

Provider options live under ``"google"``: ``thinking_budget``, ``include_thoughts``,
``thinking_level``, ``response_modalities``, ``media_resolution``, ``safety_settings``,
``cached_content``, ``labels``, ``response_json_schema`` (send ``output_schema`` as
``responseJsonSchema`` unchanged instead of a sanitised ``responseSchema``), ``generation_config``
(raw ``generationConfig`` fields); any other key becomes a top-level body field.
"""

from __future__ import annotations

import os
from functools import cached_property

from ..protocols import gemini, gemini_code_assist
from ..protocols.embeddings import gemini as gemini_embeddings
from ..route.auth import header
from ..route.embedding import EmbeddingRoute
from ..route.redact import Secret
from ..schema.errors import NoRouteError
from ._facade import (
    AccessToken,
    EmbeddingFacade,
    GeminiFacade,
    bare_model_id,
    check_headers,
    check_model_id,
    check_text,
    env_base_url,
    env_default,
    token_auth,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "CodeAssist",
    "Google",
    "code_assist",
    "configure",
]

DEFAULT_BASE_URL = gemini.DEFAULT_BASE_URL
ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


class Google(GeminiFacade, EmbeddingFacade):
    """The Gemini API (``configure`` is this class): ``.gemini(id)``, also ``.model(id)``, and
    ``.embedding(id)`` (``batchEmbedContents``: ``dimensions`` is ``outputDimensionality``,
    ``input_type`` the ``taskType``; options go into every request of a batch). The key defaults to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("google", base_url=base_url)
        version = env_default(None, "GOOGLE_GENAI_API_VERSION") or "v1beta"
        self.base_url = env_base_url(
            base_url, "GOOGLE_GEMINI_BASE_URL", DEFAULT_BASE_URL, suffix=f"/{version}"
        )
        self.auth = header("x-goog-api-key", api_key, *ENV, provider="google")
        self.headers = check_headers("google", headers)
        self._route = gemini.route(self.base_url, self.auth, headers=self.headers)

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("google", model_id)
        return "google", self._embeddings, bare_model_id(model_id)

    @cached_property
    def _embeddings(self) -> EmbeddingRoute:
        return gemini_embeddings.route(self.base_url, self.auth, headers=self.headers)

    def __repr__(self) -> str:
        return f"Google(base_url={self.base_url!r})"


configure = Google


class CodeAssist(GeminiFacade):
    """Gemini through Code Assist (``cloudcode-pa.googleapis.com/v1internal``; ``google.code_assist``
    is this class): ``.gemini(id)``, also ``.model(id)``."""

    def __init__(
        self,
        access_token: AccessToken | None = None,
        *,
        project: str | None = None,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("google.code_assist", project=project, base_url=base_url)
        project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
        if not project:
            raise NoRouteError(
                "google.code_assist: pass project= (the Code Assist project id) or set GOOGLE_CLOUD_PROJECT"
            )
        self.project = project
        self.base_url = (base_url or gemini_code_assist.CODE_ASSIST_BASE_URL).rstrip("/")
        self.auth = token_auth(access_token, "google-code-assist")
        self.headers = check_headers("google.code_assist", headers)
        self._route = gemini_code_assist.route(
            self.base_url, self.auth, project=project, headers=self.headers
        )

    def __repr__(self) -> str:
        return f"CodeAssist(project={self.project!r}, base_url={self.base_url!r})"


code_assist = CodeAssist
