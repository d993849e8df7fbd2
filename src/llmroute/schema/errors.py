"""The error hierarchy. Every failure is an ``LLMError`` with ``.retryable`` and redacted ``.http``.

The whole tree (classes defined elsewhere are named by module; ``tests/unit/test_errors_tree.py``
holds this drawing to the real classes)::

    LLMError
      InvalidRequestError .................. the request is wrong (``param`` names the argument)
        ContextOverflowError ............... the prompt does not fit the context window
        ConfigError ........................ a configuration file or engine list is wrong
        llmroute.websearch.config.ConfigError   web-search config or stored logins unreadable
      NoRouteError ......................... no usable route for the model
      AuthenticationError .................. credentials missing, invalid, expired or forbidden
      QuotaExceededError ................... billing quota exhausted (not retried)
      RateLimitError ....................... too many requests (retryable)
      ContentPolicyError ................... refused by the provider's content policy
      ProviderInternalError ................ 5xx or overloaded (retryable)
      TransportError ....................... connect failure, reset, interrupted body (retryable)
        TimeoutError ....................... a deadline fired (also a built-in ``TimeoutError``)
      InvalidProviderOutputError ........... a malformed or truncated provider response
        ResponseTooLargeError .............. the body passed ``max_response_bytes``
        llmroute.websearch.cited.UngroundedAnswerError   an answer with nothing to cite
      ToolExecutionError ................... a tool handler raised under ``tool_errors="raise"``
      ClientClosedError .................... the client was used after it was closed
      StreamConsumedError .................. an event stream was iterated again
      llmroute.websearch.limits.LimitExceeded   a web-search limit was passed
"""

from __future__ import annotations

import builtins
from typing import Any

import msgspec

from .usage import Usage

__all__ = [
    "AuthenticationError",
    "ClientClosedError",
    "ConfigError",
    "ContentPolicyError",
    "ContextOverflowError",
    "HttpContext",
    "InvalidProviderOutputError",
    "InvalidRequestError",
    "LLMError",
    "NoRouteError",
    "ProviderInternalError",
    "QuotaExceededError",
    "RateLimitError",
    "ResponseTooLargeError",
    "StreamConsumedError",
    "TimeoutError",
    "ToolExecutionError",
    "TransportError",
]


class HttpContext(msgspec.Struct, frozen=True, omit_defaults=True):
    """What is safe to show of the HTTP exchange: secrets are already removed."""

    method: str | None = None
    """The request's method."""
    url: str | None = None
    """The request's URL (secrets removed)."""
    status: int | None = None
    """The HTTP status, when the provider answered."""
    request_id: str | None = None
    """The provider's request id (``x-request-id``, ``request-id``, ...), for its support."""
    headers: dict[str, str] | None = None  # rate-limit and retry headers only
    """The rate-limit and retry headers of the answer, nothing else."""
    body: str | None = None  # error body excerpt, capped
    """An excerpt of the error body, redacted and capped."""


class LLMError(Exception):
    retryable: bool = False
    route_attempts: tuple[Any, ...] = ()
    """Raised through a ``Router``: the ``Attempt``s on other targets that failed before this one."""
    route_target: str | None = None
    """Raised through a ``Router``: the name of the target that raised it (the last one tried)."""

    def __init__(
        self,
        message: str,
        *,
        http: HttpContext | None = None,
        provider: str | None = None,
        code: str | None = None,
        retryable: bool | None = None,
        attempts: int = 1,
        partial: Any = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http = http
        self.provider = provider
        self.code = code
        self.attempts = attempts
        self.partial = partial  # the LLMResponse folded so far, when a stream failed part-way
        self.usage = usage  # usage the provider had reported before the failure, if any
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        parts = [self.message]
        if self.http is not None:
            where = " ".join(p for p in (self.http.method, self.http.url) if p)
            extra = [f"status {self.http.status}" if self.http.status else "", where]
            if self.http.request_id:
                extra.append(f"request id {self.http.request_id}")
            detail = ", ".join(e for e in extra if e)
            if detail:
                parts.append(f"({detail})")
        if self.attempts > 1:
            parts.append(f"after {self.attempts} attempts")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class InvalidRequestError(LLMError):
    """The request is wrong (HTTP 400/404/422 or rejected before sending). ``param`` names the
    argument at fault when it was caught before sending (``"tools[1].name"``, ``"generation"``)."""

    def __init__(self, message: str, *, param: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.param = param


class ConfigError(InvalidRequestError):
    """A configuration (server tool engines, gateway config file) is wrong; the message names the
    bad path (``$.webSearch.engines[1].providerKey``)."""


class ContextOverflowError(InvalidRequestError):
    """The prompt does not fit the model's context window."""


class AuthenticationError(LLMError):
    """Missing, invalid, expired or forbidden credentials. ``kind`` says which."""

    def __init__(self, message: str, *, kind: str = "invalid", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.kind = kind


class RateLimitError(LLMError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class QuotaExceededError(LLMError):
    """Billing quota exhausted: retrying will not help."""


class ContentPolicyError(LLMError):
    pass


class ProviderInternalError(LLMError):
    """5xx or overloaded (Anthropic 529, Bedrock throttling): retryable."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class TransportError(LLMError):
    """Connect failure, reset, or an interrupted body."""

    retryable = True


class TimeoutError(TransportError, builtins.TimeoutError):
    """A deadline fired. ``deadline`` is ``"connect"``, ``"pool"`` (no free connection in the
    client's pool), ``"first_byte"``, ``"idle"`` or ``"total"``. Also a built-in ``TimeoutError``,
    so ``except TimeoutError`` catches it with or without the import."""

    def __init__(self, message: str, *, deadline: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.deadline = deadline


class InvalidProviderOutputError(LLMError):
    """Malformed frame, bad JSON, bad CRC, or a stream that ended without a terminal event.
    ``raw`` holds the offending frame (redacted, capped)."""

    def __init__(self, message: str, *, raw: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.raw = raw


class ResponseTooLargeError(InvalidProviderOutputError):
    """The response body passed ``max_response_bytes``; the connection was closed at once.
    ``limit`` is the cap in bytes. Code ``"response_too_large"``; not retried."""

    def __init__(self, message: str, *, limit: int, **kwargs: Any) -> None:
        kwargs.setdefault("code", "response_too_large")
        super().__init__(message, **kwargs)
        self.limit = limit


class NoRouteError(LLMError):
    """The request names no usable route (unknown provider, model without a route, missing extra),
    or no target of a ``Router`` can take it: ``code`` ``"no_target_available"`` (retryable: every
    target is cooling down, rate-limited or busy now; ``retry_after`` is when the first block
    ends) or ``"no_capable_target"`` (not retryable: none ever could, as ``reasons`` says)."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        reasons: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after
        """Seconds until the first of the targets' blocks ends (cooldown, rate-limit reset,
        probe), when known."""
        self.reasons: dict[str, str] = reasons or {}
        """Each target's name, and why it could not take the request."""


class ToolExecutionError(LLMError):
    """A tool handler raised under ``tool_errors="raise"`` (its exception is ``__cause__``)."""


class ClientClosedError(LLMError):
    """The ``Client`` (or ``SyncClient``) was used after it was closed."""


class StreamConsumedError(LLMError):
    """An ``EventStream`` was iterated (or folded) again after it had ended or was closed: a stream
    yields its events once. Keep the events, or call ``generate`` for a folded response."""
