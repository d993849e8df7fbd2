"""Where a request goes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from urllib.parse import parse_qsl, quote, urlencode

import msgspec

from ..schema.errors import InvalidRequestError

__all__ = ["Endpoint", "check_base_url"]


def check_base_url(base: str) -> None:
    """An http(s) URL with a host: a scheme left out (``api.example.com/v1``) would only fail, less
    clearly, at the first call."""
    if not base.startswith(("http://", "https://")) or not base.split("://", 1)[1].strip("/"):
        from .redact import redact_url

        raise InvalidRequestError(
            f"base_url must be an http(s) URL such as https://api.example.com/v1, got {redact_url(base)!r}",
            param="base_url",
        )


class Endpoint(msgspec.Struct, frozen=True):
    """Where a route's requests go: ``base_url`` + ``path`` + ``query`` (``url(model_id)``)."""

    base_url: str
    """The API's base URL (``https://api.openai.com/v1``); a query on it (``?api-version=...``) goes
    after the path."""
    path: str | Callable[[str], str] = ""
    """Appended to ``base_url``; ``{model}`` becomes the URL-quoted model id, a callable receives the
    model id."""
    query: Mapping[str, str] | None = None
    """Query parameters every request carries."""
    whole_path: str | Callable[[str], str] | None = None
    """The non-streaming request's path where it differs (Gemini ``:generateContent``, Bedrock
    ``/converse``)."""
    stream_query: Mapping[str, str] | None = None
    """Query parameters only the streaming request carries (Gemini's ``alt=sse``)."""

    def __post_init__(self) -> None:
        check_base_url(self.base_url)

    def url(self, model_id: str, extra_query: Mapping[str, str] | None = None, *, stream: bool = True) -> str:
        template = self.path if stream or self.whole_path is None else self.whole_path
        path = (
            template(model_id)
            if callable(template)
            else template.replace("{model}", quote(model_id, safe=""))
        )
        base = self.base_url
        query = {**(self.query or {}), **((self.stream_query or {}) if stream else {}), **(extra_query or {})}
        if "?" in base:  # a query on base_url (?api-version=...) goes after the endpoint's path
            base, _, base_query = base.partition("?")
            url = base.rstrip("/") + path
            url += ("&" if "?" in url else "?") + base_query
            # the caller's own value wins over the endpoint's default for the same key: sent once
            given = {k for k, _ in parse_qsl(base_query, keep_blank_values=True)}
            query = {k: v for k, v in query.items() if k not in given}
        else:
            url = base.rstrip("/") + path
        if query:
            url += ("&" if "?" in url else "?") + urlencode(query)
        return url

    def with_base_url(self, base_url: str) -> Endpoint:
        return msgspec.structs.replace(self, base_url=base_url)

    def __repr__(self) -> str:
        # ``key=``-style query values and URL credentials never print.
        from .redact import REDACTED, is_secret_name, redact_url

        query = (
            {k: (REDACTED if is_secret_name(k) else v) for k, v in self.query.items()} if self.query else None
        )
        whole = f", whole_path={self.whole_path!r}" if self.whole_path is not None else ""
        stream = f", stream_query={self.stream_query!r}" if self.stream_query else ""
        return f"Endpoint(base_url={redact_url(self.base_url)!r}, path={self.path!r}, query={query!r}{whole}{stream})"
