"""Provider wording -> typed ``LLMError``: the one place that classifies a failure.

``from_response`` maps a non-2xx HTTP response (status, headers, error body), ``from_stream_event``
an error that arrives inside a 200 stream (an ``error`` event or chunk), ``from_exception_frame``
an AWS event-stream exception message. Every provider words the same failure differently; the
tables below hold the wordings we know (context overflow, quota vs rate limit, content policy,
credential kinds) and both paths use them. HTTP errors carry the redacted context: method, URL,
status, provider request id, and the rate-limit / retry headers. No httpx here, so protocol
modules import this freely.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import msgspec

from ..schema.errors import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    HttpContext,
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
    TransportError,
)
from .decoding import DECODE_ERRORS, json_too_deep
from .redact import redact_text, redact_url

if TYPE_CHECKING:
    from ..framing.eventstream import EventStreamMessage

__all__ = [
    "from_exception_frame",
    "from_response",
    "from_stream_event",
    "http_context",
    "is_web_page",
    "is_content_policy",
    "is_context_overflow",
    "is_quota",
    "parse_retry_after",
]

_KEPT_HEADERS = re.compile(
    r"^(retry-after(-ms)?|x-ratelimit-.*|anthropic-ratelimit-.*|x-request-id|request-id|x-amzn-requestid"
    r"|x-amz-request-id|x-amzn-errortype|openai-processing-ms|x-goog-.*-id|cf-ray|apim-request-id"
    r"|x-ms-request-id|x-should-retry)$"
)
_REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-goog-request-id",
    "apim-request-id",
    "x-ms-request-id",
    "cf-ray",
)

# Context overflow, by provider wording. Rate-limit texts that mention tokens are excluded below.
_OVERFLOW = re.compile(
    "|".join(
        (
            r"context[_ ]length[_ ]exceeded",  # OpenAI code, DashScope, generic
            r"maximum context length",  # OpenAI Chat, vLLM, DeepSeek, OpenRouter, Groq
            r"exceeds the context window",  # OpenAI Responses
            r"context window (?:exceeds|exceeded|is full)|model_context_window_exceeded",  # MiniMax, z.ai
            r"reduce the length of the messages",  # OpenAI, Groq
            r"prompt (?:is )?too long",  # Anthropic, z.ai, Bedrock-Anthropic
            r"prompt too long; exceeded (?:max )?context length",  # Ollama
            r"prompt exceeds max length",  # z.ai CN
            r"request_too_large",  # Anthropic 413 (request bytes)
            r"input is too long",  # Bedrock ("Input is too long for requested model")
            r"too many input tokens",  # Bedrock Converse
            r"input token count.*exceeds the maximum",  # Gemini
            r"maximum prompt length is \d+",  # xAI
            r"maximum allowed input length",  # OpenRouter / Poolside
            r"longer than the (?:model'?s )?(?:context length|maximum model length)",  # Together AI, vLLM
            r"is longer than the maximum model length",  # vLLM (decoder prompt)
            r"exceeds the available context size|exceed_context_size_error",  # llama.cpp server
            r"greater than the context length",  # LM Studio
            r"too large for model with \d+ maximum context length",  # Mistral
            r"exceeded model token limit|token limit exceeded",  # Kimi, generic
            r"configured context size",  # llama.cpp-style servers
            r"range of input length should be",  # DashScope / Qwen
            r"inputs` tokens \+ `max_new_tokens` must be",  # text-generation-inference
            r"too many tokens",  # generic fallback
        )
    ),
    re.IGNORECASE,
)
_NOT_OVERFLOW = re.compile(
    r"rate.?limit|too many requests|throttl|per (?:min|minute|second|day)|please wait|service unavailable"
    r"|\bTPM\b|\bRPM\b",
    re.IGNORECASE,
)
_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|quota (?:exceeded|exhausted)|exceeded .*quota"
    r"|credit balance|insufficient (?:credits|balance|funds)|billing|payment required|out of credits"
    r"|servicequotaexceeded|余额不足|额度",
    re.IGNORECASE,
)
# A quota wording that is really a short-window limit: retrying later helps.
_RATE_WINDOW = re.compile(
    r"rate.?limit|too many requests|per ?minute|per ?second|perminute|persecond|\bRPM\b|\bTPM\b|throttl",
    re.IGNORECASE,
)
_POLICY = re.compile(
    r"content[_ \-]?policy|content[_ \-]?filter|content management policy|responsibleaipolicyviolation"
    r"|safety system|flagged (?:by|for)|moderation|violat\w* (?:our|the) (?:usage )?polic"
    r"|prohibited content|blocked by (?:the )?guardrail",
    re.IGNORECASE,
)
# A server fault said in words only (no kind, no status): OpenAI's flat stream ``error`` event
# "The server had an error while processing your request. Sorry about that!" - worth a retry.
_SERVER_FAULT = re.compile(r"\bthe server had an error\b", re.IGNORECASE)
_EXPIRED = re.compile(r"expired|expiredtoken", re.IGNORECASE)
_BAD_KEY = re.compile(
    r"api[_ ]key[_ ]invalid|api key not valid|invalid (?:x-)?api[_ -]key|incorrect api key|invalid_api_key"
    r"|unrecognizedclient|signaturedoesnotmatch|incompletesignature|invalid authentication|unauthenticated",
    re.IGNORECASE,
)
_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]*>")
_GOOGLE_DELAY = re.compile(r"^(\d+(?:\.\d+)?)s$")

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
        "previous_response_not_found",  # Responses WebSocket mode: the state is gone, not a server fault
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


def is_context_overflow(message: str) -> bool:
    """True when ``message`` is a provider's way of saying the prompt does not fit the context."""
    return bool(_OVERFLOW.search(message)) and not _NOT_OVERFLOW.search(message)


def is_quota(message: str) -> bool:
    """Billing / plan exhaustion (retrying will not help), as opposed to a short-window rate limit."""
    return bool(_QUOTA.search(message)) and not _RATE_WINDOW.search(message)


def is_content_policy(message: str) -> bool:
    return bool(_POLICY.search(message))


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
    except (TypeError, ValueError, IndexError):
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
    """The safe part of an exchange: redacted URL, request id, rate-limit/retry headers, body excerpt."""
    kept = {
        k.lower(): redact_text(v, secrets)
        for k, v in (headers or {}).items()
        if _KEPT_HEADERS.match(k.lower())
    }
    request_id = next((kept[h] for h in _REQUEST_ID_HEADERS if h in kept), None)
    return HttpContext(
        method=method,
        url=redact_url(url) if url else None,
        status=status,
        request_id=request_id,
        headers=kept or None,
        body=redact_text(body, secrets) if body else None,
    )


class _Parsed:
    """What the usual error envelopes say: OpenAI/Anthropic/OpenRouter ``{"error": {...}}``, Gemini
    ``{"error": {"code", "status", "details"}}`` (sometimes in a list), Bedrock ``{"message"}``."""

    __slots__ = ("code", "hints", "message", "retry_delay")

    def __init__(self) -> None:
        self.message: str | None = None
        self.code: str | None = None
        self.hints = ""  # extra text to classify on (Google reasons and quota ids)
        self.retry_delay: float | None = None


def _parse_body(body: bytes) -> _Parsed:
    parsed = _Parsed()
    if json_too_deep(body):
        return parsed
    try:
        data: Any = msgspec.json.decode(body)
    except DECODE_ERRORS:
        return parsed
    if isinstance(data, list) and data:
        data = cast("list[Any]", data)[0]  # Gemini sometimes wraps the error in a list
    if not isinstance(data, dict):
        return parsed
    top = cast("dict[str, Any]", data)
    raw_err: Any = top.get("error", top)
    if isinstance(raw_err, str):
        parsed.message = raw_err
        parsed.code = _str(top.get("code")) or _str(top.get("type"))
        return parsed
    if not isinstance(raw_err, dict):
        return parsed
    err = cast("dict[str, Any]", raw_err)
    message = err.get("message") or err.get("Message") or top.get("message") or top.get("detail")
    code = err.get("code")
    if not isinstance(code, str):  # Gemini/OpenRouter put the HTTP status in ``code``
        code = err.get("type") or err.get("status") or top.get("__type") or (str(code) if code else None)
    metadata = err.get("metadata")
    if isinstance(metadata, dict):
        raw = cast("dict[str, Any]", metadata).get("raw")
        if isinstance(raw, str) and raw:
            message = f"{message}: {raw}"  # OpenRouter wraps the upstream provider's error
    parsed.message = str(message) if message else None
    parsed.code = _str(code)
    hints: list[str] = [str(err.get("type") or ""), str(err.get("status") or "")]
    details = err.get("details")
    if isinstance(details, list):
        for item in cast("list[Any]", details):
            if not isinstance(item, dict):
                continue
            detail = cast("dict[str, Any]", item)
            hints.append(str(detail.get("reason") or ""))
            for violation in cast("list[Any]", detail.get("violations") or []):
                if isinstance(violation, dict):
                    hints.append(str(cast("dict[str, Any]", violation).get("quotaId") or ""))
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and (m := _GOOGLE_DELAY.match(delay)):
                parsed.retry_delay = float(m.group(1))
    parsed.hints = " ".join(h for h in hints if h)
    return parsed


def _str(value: Any) -> str | None:
    return str(value) if value is not None and value != "" else None


def _fallback_message(status: int, body: bytes) -> str:
    title = _HTML_TITLE.search(body[:4096])
    if title is not None:
        text = " ".join(title.group(1).decode("utf-8", "replace").split())
        return f"HTTP {status}: {text[:200]} (HTML error page)"
    snippet = " ".join(body[:1024].decode("utf-8", "replace").split())[:300]
    return f"HTTP {status}" + (f": {snippet}" if snippet else "")


def is_web_page(headers: Mapping[str, str]) -> bool:
    """A 2xx HTML page is never a model's answer (event stream or JSON): it is what a wrong
    ``base_url`` (a web site, a proxy's login page) returns."""
    for name, value in headers.items():
        if name.lower() == "content-type":
            kind = value.split(";", 1)[0].strip().lower()
            return kind in ("text/html", "application/xhtml+xml")
    return False


def _web_page_error(status: int, lower: Mapping[str, str], body: bytes, secrets: tuple[str, ...]) -> str:
    kind = lower.get("content-type", "").split(";", 1)[0].strip()[:60]
    title = _HTML_TITLE.search(body[:4096])
    named = ""
    if title is not None:
        text = _TAGS.sub(" ", title.group(1).decode("utf-8", "replace"))
        text = " ".join("".join(c for c in text if c.isprintable()).split())[:80]
        named = f' titled "{redact_text(text, secrets)}"' if text else ""
    return (
        f"the response was not an event stream or JSON: HTTP {status} with content-type {kind}"
        f"{named}, a web page (is base_url the API's endpoint?)"
    )


def from_response(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    method: str | None = None,
    url: str | None = None,
    provider: str | None = None,
    secrets: tuple[str, ...] = (),
) -> LLMError:
    """Map a non-2xx response (or a 2xx web page, ``is_web_page``) to the right class, surfacing
    the provider's own message."""
    lower = {k.lower(): v for k, v in headers.items()}
    if 200 <= status < 300:
        message = _web_page_error(status, lower, body, secrets)
        ctx = http_context(method, url, status, lower, None, secrets)
        return InvalidProviderOutputError(
            f"{provider}: {message}" if provider else message, http=ctx, provider=provider
        )
    parsed = _parse_body(body)
    message = parsed.message or _fallback_message(status, body)
    amz = lower.get("x-amzn-errortype", "").split(":")[0]
    code = parsed.code or amz or None
    message = redact_text(message, secrets)
    code = redact_text(code, secrets) if code else None
    text = body[:2000].decode("utf-8", "replace")
    ctx = http_context(method, url, status, lower, text, secrets)
    retry_after = parse_retry_after(lower)
    if retry_after is None:
        retry_after = parsed.retry_delay
    full = f"{provider}: {message}" if provider else message
    kw: dict[str, Any] = {"http": ctx, "provider": provider, "code": code}
    probe = " ".join(p for p in (message, code, amz, parsed.hints) if p)

    if status == 401 or (status in (400, 403) and _BAD_KEY.search(probe)):
        return AuthenticationError(full, kind="expired" if _EXPIRED.search(probe) else "invalid", **kw)
    if status == 403:
        if is_content_policy(probe):
            return ContentPolicyError(full, **kw)
        if is_quota(probe):
            return QuotaExceededError(full, **kw)
        return AuthenticationError(full, kind="expired" if _EXPIRED.search(probe) else "forbidden", **kw)
    if status == 402:
        return QuotaExceededError(full, **kw)
    if status == 429 or amz in ("ThrottlingException", "TooManyRequestsException"):
        # Gemini says "exceeded your current quota" for per-minute limits too; its quota id and
        # RetryInfo tell a daily cap (quota) from a short window (rate limit).
        if "PerDay" in probe or (is_quota(probe) and parsed.retry_delay is None):
            return QuotaExceededError(full, **kw)
        return RateLimitError(full, retry_after=retry_after, **kw)
    if status < 500 and is_context_overflow(probe):
        return ContextOverflowError(full, **kw)
    if 400 <= status < 500 and is_content_policy(probe):
        return ContentPolicyError(full, **kw)
    if 400 <= status < 500 and is_quota(probe):
        return QuotaExceededError(full, **kw)  # Anthropic: 400 "credit balance is too low"
    if status in (408, 409):
        return ProviderInternalError(full, retry_after=retry_after, **kw)
    if status >= 500:
        return ProviderInternalError(full, retry_after=retry_after, retryable=status not in (501, 505), **kw)
    if 400 <= status < 500:
        return InvalidRequestError(full, **kw)
    return LLMError(full, **kw)


def from_stream_event(error: dict[str, Any], provider: str, *, status: int | None = None) -> LLMError:
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
    if "websocket_connection_limit_reached" in kinds:  # the socket's time is up: open a new one
        return TransportError(text, **kw)
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
    return ProviderInternalError(text, retryable=bool(_SERVER_FAULT.search(message)), **kw)


class _ExceptionBody(msgspec.Struct):
    message: str | None = None
    Message: str | None = None


_exception_body_decoder = msgspec.json.Decoder(_ExceptionBody)


def from_exception_frame(frame: EventStreamMessage, provider: str = "bedrock") -> LLMError:
    """An AWS event-stream ``exception`` / ``error`` message (Bedrock Converse and InvokeModel
    streams) -> its typed error, by ``from_stream_event``: the AWS exception type
    (``:exception-type``, or ``:error-code`` on error messages) is the kind; the text is
    ``:error-message`` or the payload's ``message``."""
    kind = frame.exception_type or "unknown"
    header = frame.headers.get(":error-message")
    text = header if isinstance(header, str) else None
    if text is None and frame.payload:
        try:
            body = _exception_body_decoder.decode(frame.payload)
            text = body.message or body.Message
        except DECODE_ERRORS:
            text = frame.payload[:500].decode("utf-8", "replace")
    return from_stream_event({"type": kind, "message": f"{kind}: {text or 'no message'}"}, provider)
