"""Per-request authentication, applied after the body bytes are final."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, cast

from ..schema.errors import AuthenticationError, InvalidRequestError
from .prepared import PreparedRequest
from .redact import Secret

__all__ = [
    "ApiKey",
    "Auth",
    "HeaderAuth",
    "NoAuth",
    "TokenProviderAuth",
    "bearer",
    "header",
]


class Auth(Protocol):
    async def apply(self, request: PreparedRequest) -> PreparedRequest: ...


class NoAuth:
    async def apply(self, request: PreparedRequest) -> PreparedRequest:
        return request

    def __repr__(self) -> str:
        return "NoAuth()"


class ApiKey:
    """An explicit key, else the first set environment variable, read when a request is prepared.
    Surrounding whitespace (a pasted newline) is stripped; an explicit key that is empty after
    that, or not a ``str``/``Secret``, is an ``InvalidRequestError`` (``param="api_key"``) at
    once; a blank variable counts as unset."""

    __slots__ = ("_value", "env", "other", "provider")

    def __init__(
        self,
        value: str | Secret | None = None,
        env: Sequence[str] = (),
        provider: str = "",
        *,
        other: str = "",
    ) -> None:
        """``other``: the provider's other ways in, for the missing-key message."""
        if isinstance(value, Secret):
            value = value.reveal()
        elif not isinstance(cast(object, value), str | None):
            who = f"{provider}: " if provider else ""
            raise InvalidRequestError(  # the type only: the value may be a key passed by mistake
                f"{who}api_key must be a str or llmroute.Secret, got {type(value).__name__}",
                param="api_key",
                provider=provider or None,
            )
        if value is not None:
            value = value.strip()
            if not value:  # refused now: it would otherwise fail only at the first call
                who = f"{provider}: " if provider else ""
                unset = f" (to read {' or '.join(env)}, leave api_key out)" if env else ""
                raise InvalidRequestError(
                    f"{who}api_key is empty or whitespace{unset}", param="api_key", provider=provider or None
                )
            _check_header_safe(value, "api_key", provider)
        self._value = Secret(value) if value is not None else None
        self.env = tuple(env)
        self.provider = provider
        self.other = other

    def peek_explicit(self) -> bool:
        """True when a key was passed (not looked up in the environment)."""
        return self._value is not None

    def peek(self) -> Secret | None:
        """The key if one is available now (explicit or from the environment), else ``None``."""
        if self._value is not None:
            return self._value
        for name in self.env:
            value = os.environ.get(name, "").strip()
            if value:
                _check_header_safe(value, name, self.provider)
                return Secret(value)
        return None

    def resolve(self) -> Secret:
        found = self.peek()
        if found is not None:
            return found
        who = f" for {self.provider}" if self.provider else ""
        other = f"; or {self.other}" if self.other else ""
        if self.env:
            hint = " or ".join(self.env)
            blank = [name for name in self.env if name in os.environ]
            note = f" ({', '.join(blank)} is set but blank)" if blank else ""
            raise AuthenticationError(
                f"no API key{who}: pass api_key=... or set {hint}{note}{other}",
                kind="missing",
                provider=self.provider,
            )
        raise AuthenticationError(
            f"no API key{who}: pass api_key=...{other}", kind="missing", provider=self.provider
        )

    def __repr__(self) -> str:
        source = "explicit" if self._value is not None else f"env {'/'.join(self.env)}"
        return f"ApiKey({source})"


def _check_header_safe(value: str, source: str, provider: str) -> None:
    """An HTTP header carries printable ASCII only: a key with a smart quote, a non-breaking space
    or an inner line break would fail deep in httpx at send time. Names the position, never the
    key."""
    for i, char in enumerate(value):
        if not " " <= char <= "~":
            what = (
                "a line break or control character"
                if char < " " or char == "\x7f"
                else "a non-ASCII character"
            )
            who = f"{provider}: " if provider else ""
            raise InvalidRequestError(
                f"{who}{source} contains {what} at position {i} (of {len(value)}); an API key is "
                "printable ASCII: copy it again from the provider's console",
                param="api_key",
                provider=provider or None,
            )


class HeaderAuth:
    """Puts ``prefix + key`` in ``name`` (``x-api-key``, ``api-key``, ``x-goog-api-key``, ...)."""

    __slots__ = ("key", "name", "prefix")

    def __init__(self, name: str, key: ApiKey, prefix: str = "") -> None:
        self.name = name.lower()
        self.key = key
        self.prefix = prefix

    async def apply(self, request: PreparedRequest) -> PreparedRequest:
        secret = self.key.resolve().reveal()
        request.headers[self.name] = self.prefix + secret
        request.secrets = (*request.secrets, secret)
        return request

    def __repr__(self) -> str:
        return f"HeaderAuth({self.name!r}, {self.key!r})"


def bearer(api_key: str | Secret | None, *env: str, provider: str = "") -> HeaderAuth:
    """``Authorization: Bearer <key>``: ``api_key``, else the first of ``env`` that is set."""
    return HeaderAuth("authorization", ApiKey(api_key, env, provider), "Bearer ")


def header(name: str, api_key: str | Secret | None, *env: str, provider: str = "") -> HeaderAuth:
    """``name: <key>``: ``api_key``, else the first of ``env`` that is set."""
    return HeaderAuth(name, ApiKey(api_key, env, provider))


TokenProvider = Callable[[], Awaitable[str]]


class TokenProviderAuth:
    """OAuth / Entra / Google access tokens: asks ``provider`` for a fresh token on every request
    (the provider caches and refreshes; we never hold a token longer than one request)."""

    __slots__ = ("name", "prefix", "provider")

    def __init__(self, provider: TokenProvider, name: str = "authorization", prefix: str = "Bearer ") -> None:
        self.provider = provider
        self.name = name
        self.prefix = prefix

    async def apply(self, request: PreparedRequest) -> PreparedRequest:
        try:
            token = await self.provider()
        except AuthenticationError:
            raise
        except Exception as exc:
            raise AuthenticationError(
                f"token provider failed: {type(exc).__name__}", kind="expired"
            ) from None
        if not token:
            raise AuthenticationError("token provider returned an empty token", kind="missing")
        request.headers[self.name] = self.prefix + token
        request.secrets = (*request.secrets, token)
        return request

    def __repr__(self) -> str:
        return f"TokenProviderAuth({self.name!r})"
