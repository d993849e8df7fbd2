"""Secret handling: a ``Secret`` that never prints, and redaction of headers, URLs and text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "SECRET_QUERY_PARAMS",
    "Secret",
    "redact_headers",
    "redact_text",
    "redact_url",
]

REDACTED = "[REDACTED]"
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
        "x-amz-content-sha256-secret",
    }
)
SECRET_QUERY_PARAMS = frozenset(
    {"key", "api_key", "apikey", "access_token", "token", "x-amz-signature", "sig"}
)

# Shapes of credentials that may leak through provider error bodies or user text.
_SECRET_PATTERNS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:sk-[A-Za-z0-9_\-]{12,}|sk-ant-[A-Za-z0-9_\-]{12,}|AIza[0-9A-Za-z_\-]{20,}|xai-[A-Za-z0-9]{20,}"
    r"|gsk_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|Bearer\s+[A-Za-z0-9._\-~+/]{8,}=*"
    r"|Signature=[0-9a-f]{16,})"
)


class Secret:
    """A credential. ``repr``/``str`` never show it; call ``reveal()`` at the single point of use."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str:  # pickling a secret is almost always a leak
        raise TypeError("Secret values cannot be pickled")


def redact_headers(headers: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    secret = SECRET_HEADERS.union(h.lower() for h in extra)
    return {k: (REDACTED if k.lower() in secret else v) for k, v in headers.items()}


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query and "@" not in parts.netloc:
        return url
    query = urlencode(
        [(k, REDACTED if k.lower() in SECRET_QUERY_PARAMS else v) for k, v in parse_qsl(parts.query, True)],
        safe="[]:",
    )
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove known secret values and anything shaped like a credential."""
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, REDACTED)
    return _SECRET_PATTERNS.sub(REDACTED, text)
