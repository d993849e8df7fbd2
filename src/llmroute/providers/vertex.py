"""Gemini on Vertex AI: ``vertex.configure(project=..., location=..., access_token=...).gemini(id)``.

``project`` and ``location`` default to ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``;
``access_token`` is a token string or an async callable returning a fresh OAuth access token (it
is asked once per request, so it can refresh). The ``global`` location uses
``aiplatform.googleapis.com``, any other ``{location}-aiplatform.googleapis.com``. Same Gemini
protocol as ``google``; provider options may be given under ``"vertex"`` or ``"google"``.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from ..protocols import gemini
from ..route.model import Model
from ..schema.errors import NoRouteError
from ..schema.options import GenerationOptions
from ._facade import make_model
from .google import AccessToken, bare_model_id, token_auth

__all__ = ["Vertex", "configure"]


def _host(location: str) -> str:
    return (
        "https://aiplatform.googleapis.com"
        if location == "global"
        else f"https://{location}-aiplatform.googleapis.com"
    )


class Vertex:
    def __init__(
        self,
        *,
        project: str | None = None,
        location: str | None = None,
        access_token: AccessToken | None = None,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
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
        host = (base_url or _host(location)).rstrip("/")
        self.base_url = f"{host}/v1/projects/{quote(project, safe='')}/locations/{quote(location, safe='')}/publishers/google"
        self.auth = token_auth(access_token, "vertex")
        self.headers = dict(headers) if headers else None
        self._route = gemini.route(self.base_url, self.auth, name="vertex-gemini", headers=self.headers)

    def gemini(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        return make_model(bare_model_id(model_id), self._route, "vertex", generation, options)

    model = gemini

    def __repr__(self) -> str:
        return f"Vertex(project={self.project!r}, location={self.location!r})"


def configure(
    *,
    project: str | None = None,
    location: str | None = None,
    access_token: AccessToken | None = None,
    base_url: str | None = None,
    headers: dict[str, str] | None = None,
) -> Vertex:
    return Vertex(
        project=project, location=location, access_token=access_token, base_url=base_url, headers=headers
    )
