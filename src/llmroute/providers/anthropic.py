"""Anthropic: ``anthropic.configure(api_key=...).messages("claude-sonnet-4-5")``.

The key defaults to ``ANTHROPIC_API_KEY`` and the base URL to ``ANTHROPIC_BASE_URL`` (as in the
anthropic SDK, without ``/v1``, which is added); the key is sent as ``x-api-key`` with ``anthropic-version``
(and ``anthropic-beta`` when ``betas`` are given: web fetch, MCP connector, code execution and other
beta tools need theirs). Keyword options of ``messages(...)`` are provider options: ``thinking``
(an int budget, ``"adaptive"``, ``"disabled"`` or the wire dict), ``effort``,
``disable_parallel_tool_use``; anything else becomes a top-level body key (``metadata``,
``service_tier``, ``container``, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from ..protocols import anthropic_messages
from ..route.auth import header
from ..route.model import Model
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError
from ..schema.options import GenerationOptions
from ._facade import check_headers, check_text, env_base_url, make_model

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_VERSION", "Anthropic", "configure"]

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_VERSION = "2023-06-01"


class Anthropic:
    """The Anthropic API (``configure`` is this class): ``.messages(id)``, also ``.model(id)``.
    Unset ``api_key``/``base_url`` come from ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        version: str = DEFAULT_VERSION,
        betas: Sequence[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("anthropic", base_url=base_url, version=version)
        listed = cast(object, betas)
        if listed is not None and (
            isinstance(listed, str)
            or not isinstance(listed, Sequence)
            or not all(isinstance(b, str) for b in cast(Sequence[object], listed))
        ):
            raise InvalidRequestError(
                "anthropic: betas must be a list of beta names, e.g. ['web-fetch-2025-09-10']",
                param="betas",
                provider="anthropic",
            )
        self.base_url = env_base_url(base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL, suffix="/v1")
        self.auth = header("x-api-key", api_key, "ANTHROPIC_API_KEY", provider="anthropic")
        extra = {"anthropic-version": version}
        if betas:
            extra["anthropic-beta"] = ",".join(betas)
        extra.update({k.lower(): v for k, v in (check_headers("anthropic", headers) or {}).items()})
        self.headers = extra
        self._route = anthropic_messages.route(self.base_url, self.auth, headers=self.headers)

    def messages(
        self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A Messages API model. ``generation`` sets defaults (``max_tokens`` falls back to 4096)."""
        return make_model(model_id, self._route, "anthropic", generation, options)

    model = messages

    def __repr__(self) -> str:
        return f"Anthropic(base_url={self.base_url!r})"


configure = Anthropic
