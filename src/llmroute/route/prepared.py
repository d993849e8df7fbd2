"""``PreparedRequest``: exactly what will be sent."""

from __future__ import annotations

from typing import Any

import msgspec

from ..schema.notices import RequestWarning
from .redact import redact_headers, redact_url

__all__ = ["PreparedRequest"]


class PreparedRequest:
    """Method, URL, headers and body bytes, after auth. ``repr`` redacts credentials.
    ``warnings``: request options the route left out of the body (``RequestWarning``)."""

    __slots__ = ("body", "headers", "method", "secrets", "url", "warnings")

    def __init__(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        secrets: tuple[str, ...] = (),
        warnings: tuple[RequestWarning, ...] = (),
    ) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.secrets = secrets  # values auth added, scrubbed from anything we print
        self.warnings = warnings

    def json(self) -> Any:
        return msgspec.json.decode(self.body)

    def redacted(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "url": redact_url(self.url),
            "headers": redact_headers(self.headers),
            "body": self.body.decode("utf-8", "replace"),
        }

    def __repr__(self) -> str:
        return (
            f"PreparedRequest(method={self.method!r}, url={redact_url(self.url)!r}, "
            f"headers={redact_headers(self.headers)!r}, body=<{len(self.body)} bytes>)"
        )
