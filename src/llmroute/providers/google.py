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
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, cast

from ..protocols import gemini
from ..route.auth import HeaderAuth, TokenProviderAuth, bearer, header
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.errors import AuthenticationError, InvalidRequestError, NoRouteError
from ..schema.options import GenerationOptions
from ._facade import check_headers, check_text, env_base_url, env_default, make_model

__all__ = [
    "DEFAULT_BASE_URL",
    "CodeAssist",
    "GeminiFacade",
    "Google",
    "code_assist",
    "configure",
    "token_auth",
]

DEFAULT_BASE_URL = gemini.DEFAULT_BASE_URL
ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

AccessToken = str | Secret | Callable[[], Awaitable[str]]


class GeminiFacade:
    """The Gemini protocol behind one route: ``google``, ``google.code_assist`` and ``vertex``."""

    provider: ClassVar[str] = "google"  # the provider-options namespace
    _route: Route

    def gemini(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Gemini model. Keyword options are Google provider options (see the module doc)."""
        return make_model(bare_model_id(model_id), self._route, self.provider, generation, options)

    model = gemini


class Google(GeminiFacade):
    """The Gemini API (``configure`` is this class): ``.gemini(id)``, also ``.model(id)``. The key
    defaults to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``."""

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

    def __repr__(self) -> str:
        return f"Google(base_url={self.base_url!r})"


configure = Google


def bare_model_id(model_id: str) -> str:
    """``models/gemini-2.5-flash`` -> ``gemini-2.5-flash`` (the path adds ``models/`` itself)."""
    return model_id.removeprefix("models/")


def token_auth(access_token: AccessToken | None, provider: str) -> HeaderAuth | TokenProviderAuth:
    """Bearer auth from a fixed token or an async callable that returns a fresh one per request."""
    if access_token is None or access_token == "":
        raise AuthenticationError(
            f"{provider}: pass access_token= (a token string or an async callable returning a fresh token)",
            kind="missing",
            provider=provider,
        )
    if callable(access_token):
        return TokenProviderAuth(access_token)
    if not isinstance(cast(object, access_token), str | Secret):
        raise InvalidRequestError(
            f"{provider}: access_token must be a token string or an async callable returning one, "
            f"got {type(access_token).__name__}",
            param="access_token",
            provider=provider,
        )
    return bearer(access_token, provider=provider)


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
        self.base_url = (base_url or gemini.CODE_ASSIST_BASE_URL).rstrip("/")
        self.auth = token_auth(access_token, "google-code-assist")
        self.headers = check_headers("google.code_assist", headers)
        self._route = gemini.code_assist_route(self.base_url, self.auth, project, headers=self.headers)

    def __repr__(self) -> str:
        return f"CodeAssist(project={self.project!r}, base_url={self.base_url!r})"


code_assist = CodeAssist
