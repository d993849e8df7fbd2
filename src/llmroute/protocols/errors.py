"""Errors that arrive inside a 200 stream (an ``error`` event or chunk) -> typed ``LLMError``s."""

from __future__ import annotations

from typing import Any

from ..route.errors import is_context_overflow
from ..schema.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
)

__all__ = ["stream_error"]

_OVERLOADED = {
    "overloaded_error",
    "overloaded",
    "server_error",
    "api_error",
    "internal_error",
    "internalServerException",
    "serviceUnavailableException",
    "modelStreamErrorException",
    "service_unavailable",
}
_RATE = {"rate_limit_error", "rate_limit_exceeded", "throttlingException", "too_many_requests"}


def stream_error(error: dict[str, Any], provider: str) -> LLMError:
    """Classify an in-stream error object (``{"type"|"code", "message"}``, OpenRouter's numeric
    ``code``) the same way an HTTP error would be."""
    message = str(error.get("message") or error.get("error") or "provider reported an error")
    kind = str(error.get("type") or error.get("code") or "")
    status = error.get("code") if isinstance(error.get("code"), int) else None
    text = f"{provider}: {message}"
    probe = f"{message} {kind}"
    if kind in _RATE or status == 429:
        return RateLimitError(text, code=kind or None, provider=provider)
    if "insufficient_quota" in probe:
        return QuotaExceededError(text, code=kind or None, provider=provider)
    if is_context_overflow(probe):
        return ContextOverflowError(text, code=kind or None, provider=provider)
    if kind in _OVERLOADED or (status is not None and status >= 500) or status == 529:
        return ProviderInternalError(text, code=kind or None, provider=provider)
    if kind in ("authentication_error", "permission_error") or status in (401, 403):
        return AuthenticationError(text, code=kind or None, provider=provider)
    if kind in ("invalid_request_error", "invalid_request", "validationException") or (
        status is not None and 400 <= status < 500
    ):
        return InvalidRequestError(text, code=kind or None, provider=provider)
    return ProviderInternalError(text, code=kind or None, provider=provider, retryable=False)
