"""Secret handling: a ``Secret`` that never prints, and redaction of headers, URLs and text."""

from __future__ import annotations

import logging
import re
from collections.abc import Generator, Iterable, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "SECRET_HEADERS",
    "SECRET_PATTERN",
    "SECRET_QUERY_PARAMS",
    "Secret",
    "collect_secrets",
    "get_logger",
    "install_log_redaction",
    "is_secret_name",
    "quiet_signing",
    "redact_headers",
    "redact_log_text",
    "redact_text",
    "redact_url",
    "secrets_in_scope",
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
SECRET_PATTERN = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:sk-[A-Za-z0-9_\-]{12,}|AIza[0-9A-Za-z_\-]{20,}|xai-[A-Za-z0-9]{20,}"
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


# Names that say "credential" even when we do not know the header (custom gateway keys, tokens).
_SECRETISH_NAME = re.compile(
    r"key|token|secret|passw|signature|credential|cookie|session|auth", re.IGNORECASE
)


def is_secret_name(name: str) -> bool:
    """A header or query parameter whose value must not be shown."""
    lower = name.lower()
    return lower in SECRET_HEADERS or lower in SECRET_QUERY_PARAMS or bool(_SECRETISH_NAME.search(lower))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret_name(k) else v) for k, v in headers.items()}


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query and "@" not in parts.netloc:
        return url
    query = urlencode(
        [(k, REDACTED if is_secret_name(k) else v) for k, v in parse_qsl(parts.query, True)],
        safe="[]:",
    )
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove known secret values and anything shaped like a credential."""
    for value in secrets:
        if value and len(value) >= 4:
            text = text.replace(value, REDACTED)
    return SECRET_PATTERN.sub(REDACTED, text)


def collect_secrets(headers: Mapping[str, str], url: str, known: Iterable[str] = ()) -> tuple[str, ...]:
    """Every credential value a request carries: ``known`` (what auth added) plus the values of
    secret-named headers and query parameters, so text that echoes them can be scrubbed by value."""
    found = [v for v in known if v]
    for name, value in headers.items():
        if is_secret_name(name):
            found.append(value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value)
    query = urlsplit(url).query
    if query:
        found.extend(v for k, v in parse_qsl(query, True) if v and is_secret_name(k))
    return tuple(dict.fromkeys(v for v in found if len(v) >= 4 and v != REDACTED))


# Log redaction ------------------------------------------------------------------------------------
# httpx logs every request URL at INFO (``key=`` query parameters included); httpcore logs response
# headers at DEBUG (cookies); websockets logs request headers at DEBUG. A filter on exactly those
# loggers rewrites such records, but only records emitted while llmroute itself is sending
# (``secrets_in_scope()``): the application's own use of those libraries is left alone. llmroute's own
# loggers (``get_logger(__name__)``) are always filtered. It costs nothing unless logging is enabled.

_QUERY_PAIR = re.compile(r"([?&;])([A-Za-z0-9_.\-]+)=([^&\s\"'#;]+)")
_BYTES_HEADER = re.compile(r"\(b'([A-Za-z0-9_\-]+)', b'([^']*)'\)")
_HEADER_LINE = re.compile(r"^([<>] )([A-Za-z0-9_\-]+): (.*)$", re.MULTILINE)
_LOG_TARGETS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "websockets.client",
    "botocore.auth",  # logs the canonical request (security token) and the signature at DEBUG
    "botocore.credentials",
)

# The credentials of the request being sent, per task: the filter redacts them by value in what
# the HTTP stack logs meanwhile (a key with no recognisable shape, echoed in a URL or a header).
# None outside a send: the scoped filter (other libraries' loggers) then leaves records alone.
_ACTIVE_SECRETS: ContextVar[tuple[str, ...] | None] = ContextVar("llmroute_active_secrets", default=None)
# Set while llmroute signs with botocore: its signing logs are dropped, not just redacted.
_SIGNING: ContextVar[bool] = ContextVar("llmroute_signing", default=False)


class secrets_in_scope:  # a class, used like a function: ``with secrets_in_scope(secrets):``
    """Within the block (and this task only), log records are also redacted by these values."""

    __slots__ = ("_secrets", "_token")

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self._secrets = secrets
        self._token: Token[tuple[str, ...] | None] | None = None

    def __enter__(self) -> None:
        self._token = _ACTIVE_SECRETS.set(self._secrets)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _ACTIVE_SECRETS.reset(self._token)
            self._token = None


@contextmanager
def quiet_signing() -> Generator[None]:
    """Drop botocore's signing log records (canonical request, string to sign, signature)."""
    token = _SIGNING.set(True)
    try:
        yield
    finally:
        _SIGNING.reset(token)


def redact_log_text(text: str) -> str:
    """Credential-shaped text, secret-named query parameters and header values in a log line."""
    text = _QUERY_PAIR.sub(lambda m: f"{m[1]}{m[2]}={REDACTED}" if is_secret_name(m[2]) else m[0], text)
    text = _BYTES_HEADER.sub(lambda m: f"(b'{m[1]}', b'{REDACTED}')" if is_secret_name(m[1]) else m[0], text)
    text = _HEADER_LINE.sub(lambda m: f"{m[1]}{m[2]}: {REDACTED}" if is_secret_name(m[2]) else m[0], text)
    return SECRET_PATTERN.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """Rewrites a record whose formatted message holds a credential. ``scoped``: only records
    emitted inside ``secrets_in_scope()`` (for other libraries' loggers)."""

    def __init__(self, scoped: bool) -> None:
        super().__init__()
        self.scoped = scoped

    def filter(self, record: logging.LogRecord) -> bool:
        if _SIGNING.get() and record.name.startswith("botocore"):
            return False
        secrets = _ACTIVE_SECRETS.get()
        if self.scoped and secrets is None:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string is the logging module's business
            return True
        clean = redact_log_text(message)
        if secrets:
            clean = redact_text(clean, secrets)
        if clean != message:
            record.msg = clean
            record.args = None
        return True


_SCOPED = RedactingFilter(scoped=True)
_OWN = RedactingFilter(scoped=False)


def install_log_redaction() -> None:
    """Attach the scoped redacting filter to the HTTP libraries' loggers (idempotent)."""
    for name in _LOG_TARGETS:
        logger = logging.getLogger(name)
        if _SCOPED not in logger.filters:
            logger.addFilter(_SCOPED)


def get_logger(name: str) -> logging.Logger:
    """An llmroute module's logger (``get_logger(__name__)``), its records always redacted."""
    logger = logging.getLogger(name)
    if _OWN not in logger.filters:
        logger.addFilter(_OWN)
    return logger
