"""Gemini on Vertex AI: ``vertex.configure(project=..., location=..., access_token=...).gemini(id)``.

``project`` and ``location`` default to ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``;
``access_token`` is a token string or an async callable returning a fresh OAuth access token (it
is asked once per request, so it can refresh). Without one, Application Default Credentials are
used when google-auth is installed (``pip install 'llmroute[vertex]'``; their project is the
fallback for ``project``). ``GOOGLE_VERTEX_BASE_URL`` overrides the host, as in google-genai. The ``global`` location uses
``aiplatform.googleapis.com``, any other ``{location}-aiplatform.googleapis.com``. Same Gemini
protocol as ``google``; provider options may be given under ``"vertex"`` or ``"google"``.
"""

from __future__ import annotations

import os
from urllib.parse import quote

from ..protocols import gemini
from ..protocols.embeddings import vertex as vertex_embeddings
from ..route.embedding import EmbeddingRoute
from ..schema.errors import AuthenticationError, NoRouteError
from ._facade import (
    AccessToken,
    EmbeddingFacade,
    GeminiFacade,
    bare_model_id,
    check_headers,
    check_model_id,
    check_text,
    env_base_url,
    token_auth,
)
from .credentials import google_adc, has_google_auth

__all__ = ["Vertex", "configure"]


def _host(location: str) -> str:
    return (
        "https://aiplatform.googleapis.com"
        if location == "global"
        else f"https://{location}-aiplatform.googleapis.com"
    )


class Vertex(GeminiFacade, EmbeddingFacade):
    """Gemini on Vertex AI (``configure`` is this class): ``.gemini(id)``, also ``.model(id)``,
    and ``.embedding(id)`` (the text embedding models' ``predict``: ``dimensions`` is
    ``outputDimensionality``, ``input_type`` the ``task_type``, options are ``parameters``).
    Credentials: ``access_token=`` or Application Default Credentials (module doc)."""

    provider = "vertex"

    def __init__(
        self,
        *,
        project: str | None = None,
        location: str | None = None,
        access_token: AccessToken | None = None,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("vertex", project=project, location=location, base_url=base_url)
        if access_token is None:
            if not has_google_auth():
                raise AuthenticationError(
                    "vertex: pass access_token= (a token or an async callable returning one), or "
                    "pip install 'llmroute[vertex]' to use Application Default Credentials",
                    kind="missing",
                    provider="vertex",
                )
            access_token = adc = google_adc()
            project = project or os.environ.get("GOOGLE_CLOUD_PROJECT") or adc.project
        project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
        location = location or os.environ.get("GOOGLE_CLOUD_LOCATION")
        missing = [
            f"{name}= (or {env})"
            for name, env, value in (
                ("project", "GOOGLE_CLOUD_PROJECT", project),
                ("location", "GOOGLE_CLOUD_LOCATION", location),
            )
            if not value
        ]
        if missing:
            raise NoRouteError(f"vertex: pass {' and '.join(missing)}")
        assert project is not None and location is not None
        self.project = project
        self.location = location
        host = env_base_url(base_url, "GOOGLE_VERTEX_BASE_URL", _host(location))
        self.base_url = f"{host}/v1/projects/{quote(project, safe='')}/locations/{quote(location, safe='')}/publishers/google"
        self.auth = token_auth(access_token, "vertex")
        self.headers = check_headers("vertex", headers)
        self._route = gemini.route(
            self.base_url,
            self.auth,
            name="vertex-gemini",
            headers=self.headers,
            protocol=gemini.VERTEX_PROTOCOL,
        )

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id("vertex", model_id)
        model_id = bare_model_id(model_id)
        route = vertex_embeddings.route(
            self.base_url, self.auth, headers=self.headers, protocol=vertex_embeddings.protocol_for(model_id)
        )
        return "vertex", route, model_id

    def __repr__(self) -> str:
        return f"Vertex(project={self.project!r}, location={self.location!r})"


configure = Vertex
