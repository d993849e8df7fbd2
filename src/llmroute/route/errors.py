"""HTTP status and provider error bodies -> typed ``LLMError``s."""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    HttpContext,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
)
from .redact import redact_text, redact_url

__all__ = ["error_from_response", "http_context", "is_context_overflow", "parse_retry_after"]

_KEPT_HEADERS = re.compile(
    r"^(retry-after(-ms)?|x-ratelimit-.*|anthropic-ratelimit-.*|x-request-id|request-id|x-amzn-requestid"
    r"|x-amzn-errortype|openai-processing-ms|x-goog-.*-id|cf-ray)$"
)
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-amzn-requestid", "x-goog-request-id", "cf-ray")

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long"
    r"|input is too long|too many tokens|exceeds? the (?:maximum|max) (?:number of )?tokens"
    r"|input token count.*exceeds|reduce the length of the messages|request too large for model"
    r"|tokens? .*exceed.*(?:context|limit)|n_ctx|context size|longer than the model's context",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"insufficient_quota|quota|billing|credit balance|exceeded your current", re.IGNORECASE)
_POLICY = re.compile(r"content[_ ]policy|content[_ ]filter|safety|responsible ai|moderation", re.IGNORECASE)


def is_context_overflow(message: str) -> bool:
    return bool(_OVERFLOW.search(message))


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def http_context(
    method: str | None,
    url: str | None,
    status: int | None,
    headers: Mapping[str, str] | None,
    body: str | None = None,
    secrets: tuple[str, ...] = (),
) -> HttpContext:
    kept = {k.lower(): v for k, v in (headers or {}).items() if _KEPT_HEADERS.match(k.lower())}
    request_id = next((kept[h] for h in _REQUEST_ID_HEADERS if h in kept), None)
    return HttpContext(
        method=method,
        url=redact_url(url) if url else None,
        status=status,
        request_id=request_id,
        headers=kept or None,
        body=redact_text(body, secrets) if body else None,
    )


def _provider_message(body: bytes) -> tuple[str | None, str | None]:
    """(message, code/type) from the usual error envelopes; (None, None) when not JSON."""
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None, None
    if isinstance(data, list) and data:
        data = data[0]  # Gemini sometimes wraps the error in a list
    if not isinstance(data, dict):
        return None, None
    err: Any = data.get("error", data)
    if isinstance(err, str):
        return err, None
    if not isinstance(err, dict):
        return None, None
    message = err.get("message") or err.get("Message") or data.get("message")
    code = err.get("code") or err.get("type") or err.get("status")
    if isinstance(err.get("metadata"), dict) and isinstance(err["metadata"].get("raw"), str):
        message = f"{message}: {err['metadata']['raw']}"  # OpenRouter wraps the upstream error
    return (str(message) if message else None), (str(code) if code is not None else None)


def error_from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    method: str | None = None,
    url: str | None = None,
    provider: str | None = None,
    secrets: tuple[str, ...] = (),
) -> LLMError:
    """Map a non-2xx response to the right class, surfacing the provider's own message."""
    lower = {k.lower(): v for k, v in headers.items()}
    text = body.decode("utf-8", "replace")
    message, code = _provider_message(body)
    if message is None:
        snippet = " ".join(text.split())[:300]
        message = f"HTTP {status}" + (f": {snippet}" if snippet else "")
    amz = lower.get("x-amzn-errortype", "").split(":")[0]
    code = code or amz or None
    message = redact_text(message, secrets)
    ctx = http_context(method, url, status, lower, text[:2000], secrets)
    retry_after = parse_retry_after(lower)
    where = f"{provider}: " if provider else ""
    full = f"{where}{message}"
    kw: dict[str, Any] = {"http": ctx, "provider": provider, "code": code}
    probe = f"{message} {code or ''}"
    if status in (401,):
        return AuthenticationError(full, kind="invalid", **kw)
    if status == 403:
        if _QUOTA.search(probe) and "rate" not in probe.lower():
            return QuotaExceededError(full, **kw)
        return AuthenticationError(full, kind="forbidden", **kw)
    if status == 429 or amz in ("ThrottlingException", "TooManyRequestsException"):
        if _QUOTA.search(probe) and not re.search(r"rate.?limit|too many requests", probe, re.IGNORECASE):
            return QuotaExceededError(full, **kw)
        return RateLimitError(full, retry_after=retry_after, **kw)
    if status == 402:
        return QuotaExceededError(full, **kw)
    if is_context_overflow(probe) and (status in (400, 413, 422) or status < 500):
        return ContextOverflowError(full, **kw)
    if status in (400, 404, 405, 409, 413, 415, 422) and _POLICY.search(probe) and "policy" in probe.lower():
        return ContentPolicyError(full, **kw)
    if status in (408, 409):
        return ProviderInternalError(full, retry_after=retry_after, **kw)
    if status >= 500 or status == 529:
        return ProviderInternalError(full, retry_after=retry_after, **kw)
    if 400 <= status < 500:
        return InvalidRequestError(full, **kw)
    return LLMError(full, **kw)
