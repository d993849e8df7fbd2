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
    """``base_url`` + ``path`` + ``query``. ``{model}`` in ``path`` is replaced by the URL-quoted model
    id; a callable ``path`` receives the model id for anything more involved.

    Where the non-streaming request goes elsewhere, ``whole_path`` is its path (Gemini
    ``:generateContent``, Bedrock ``/converse``) and ``stream_query`` the query only the streaming
    request carries (Gemini's ``alt=sse``)."""

    base_url: str
    path: str | Callable[[str], str] = ""
    query: Mapping[str, str] | None = None
    whole_path: str | Callable[[str], str] | None = None
    stream_query: Mapping[str, str] | None = None

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
