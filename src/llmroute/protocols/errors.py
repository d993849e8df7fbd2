"""Errors that arrive inside a 200 stream (an ``error`` event, chunk or AWS exception frame) ->
typed ``LLMError``s, classified by the same rules as an HTTP error (``route.errors``)."""

from __future__ import annotations

from typing import Any

from ..route.errors import is_content_policy, is_context_overflow, is_quota
from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
)

__all__ = ["stream_error"]

# Error kinds (``type`` / ``code`` / AWS exception type / Google status), compared lower-cased.
_RATE = frozenset(
    {
        "rate_limit_error",
        "rate_limit_exceeded",
        "too_many_requests",
        "throttlingexception",
        "toomanyrequestsexception",
    }
)
_INTERNAL = frozenset(
    {
        "overloaded_error",
        "overloaded",
        "server_error",
        "api_error",
        "internal_error",
        "internal",
        "service_unavailable",
        "unavailable",
        "internalserverexception",
        "serviceunavailableexception",
        "modelstreamerrorexception",
        "modeltimeoutexception",
        "modelnotreadyexception",
    }
)
_INVALID = frozenset(
    {
        "invalid_request_error",
        "invalid_request",
        "invalid_argument",
        "not_found",
        "validationexception",
        "resourcenotfoundexception",
        "modelerrorexception",
    }
)
_AUTH = frozenset(
    {
        "authentication_error",
        "unauthenticated",
        "permission_error",
        "permission_denied",
        "accessdeniedexception",
        "accessdenied",
        "unrecognizedclientexception",
    }
)
_FORBIDDEN = frozenset({"permission_error", "permission_denied", "accessdeniedexception", "accessdenied"})


def stream_error(error: dict[str, Any], provider: str, *, status: int | None = None) -> LLMError:
    """Classify an in-stream error object: ``{"type" | "code" | "status", "message"}`` (OpenAI,
    Anthropic, Gemini, OpenRouter's numeric ``code``, an AWS exception type as ``type``). ``status``
    is the HTTP-like status when the provider gives one separately."""
    message = str(error.get("message") or error.get("error") or "provider reported an error")
    if status is None and isinstance(error.get("code"), int):
        status = error["code"]
    # Every string the provider uses to name the error: ``type`` (Anthropic, OpenAI's category),
    # ``code`` (OpenAI's specific kind, e.g. context_length_exceeded) and Google's ``status``.
    names = [
        v for v in (error.get("type"), error.get("code"), error.get("status")) if isinstance(v, str) and v
    ]
    kinds = {n.lower() for n in names}
    text = f"{provider}: {message}"
    probe = " ".join([message, *names])
    kw: dict[str, Any] = {"code": names[0] if names else None, "provider": provider}
    if kinds & _AUTH or status in (401, 403):
        kind = "forbidden" if kinds & _FORBIDDEN or status == 403 else "invalid"
        return AuthenticationError(text, kind=kind, **kw)
    if "PerDay" in probe or is_quota(probe):
        return QuotaExceededError(text, **kw)
    if kinds & _RATE or status == 429 or "resource_exhausted" in kinds:
        return RateLimitError(text, **kw)
    if is_context_overflow(probe):
        return ContextOverflowError(text, **kw)
    if is_content_policy(probe):
        return ContentPolicyError(text, **kw)
    if kinds & _INTERNAL or (status is not None and status >= 500):
        return ProviderInternalError(text, **kw)
    if kinds & _INVALID or (status is not None and 400 <= status < 500):
        return InvalidRequestError(text, **kw)
    return ProviderInternalError(text, retryable=False, **kw)
