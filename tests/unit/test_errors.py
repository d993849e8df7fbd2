"""HTTP error mapping with realistic provider bodies: class, kind, retryability, diagnostics."""

from __future__ import annotations

import email.utils
import json
from typing import Any

import httpx
import pytest

import llmroute
from llmroute.route.classify import (
    from_response,
    from_stream_event,
    is_context_overflow,
    is_quota,
    parse_retry_after,
)
from llmroute.route.policy import RetryPolicy, Timeouts
from llmroute.route.prepared import PreparedRequest
from llmroute.route.transport import transport_error


def _map(
    status: int, body: Any, headers: dict[str, str] | None = None, provider: str = "p"
) -> llmroute.LLMError:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return from_response(
        status, headers or {}, raw, method="POST", url="https://api.example.com/v1/x", provider=provider
    )


def _openai(message: str, code: str | None, type_: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _anthropic(type_: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}, "request_id": "req_011CV"}


def _google(code: int, status: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": details or []}}


_BEDROCK_VALIDATION = {
    "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"
}

OVERFLOW_CASES = [
    pytest.param(
        400,
        _openai(
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 150000 "
            "tokens. Please reduce the length of the messages.",
            "context_length_exceeded",
        ),
        {},
        id="openai-chat",
    ),
    pytest.param(
        400,
        _openai(
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "context_length_exceeded",
        ),
        {},
        id="openai-responses",
    ),
    pytest.param(
        400,
        _anthropic("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        {},
        id="anthropic",
    ),
    pytest.param(
        413,
        _anthropic("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        {},
        id="anthropic-413",
    ),
    pytest.param(
        400,
        _google(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        ),
        {},
        id="gemini",
    ),
    pytest.param(
        400, {"message": "Input is too long for requested model."}, _BEDROCK_VALIDATION, id="bedrock"
    ),
    pytest.param(
        400,
        {
            "message": "The model returned the following errors: prompt is too long: 250000 tokens > 200000 maximum"
        },
        _BEDROCK_VALIDATION,
        id="bedrock-anthropic",
    ),
    pytest.param(
        400,
        {
            "error": {
                "message": "This endpoint's maximum context length is 200000 tokens. However, you requested about "
                "250000 tokens (240000 of text input, 10000 in the output). Please reduce the length of either one, "
                'or use the "middle-out" transform to compress your prompt automatically.',
                "code": 400,
                "metadata": {"provider_name": None},
            }
        },
        {},
        id="openrouter",
    ),
    pytest.param(
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
            "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        {},
        id="vllm",
    ),
    pytest.param(
        400,
        {
            "error": {
                "message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make "
                "sure that `max_model_len` is no smaller than the number of text tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        {},
        id="vllm-new",
    ),
    pytest.param(
        400,
        {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 5000,
                "n_ctx": 4096,
            }
        },
        {},
        id="llama.cpp",
    ),
    pytest.param(
        400, {"error": "prompt too long; exceeded max context length by 100 tokens"}, {}, id="ollama"
    ),
    pytest.param(
        400,
        {
            "object": "error",
            "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum "
            "context length",
            "type": "invalid_request_message_error",
            "param": None,
            "code": None,
        },
        {},
        id="mistral",
    ),
    pytest.param(
        400,
        _openai("Please reduce the length of the messages or completion.", "context_length_exceeded"),
        {},
        id="groq",
    ),
    pytest.param(
        400,
        {
            "code": "Client specified an invalid argument",
            "error": "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
        },
        {},
        id="xai",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers"), OVERFLOW_CASES)
def test_context_overflow(status: int, body: Any, headers: dict[str, str]) -> None:
    err = _map(status, body, headers)
    assert type(err) is llmroute.ContextOverflowError
    assert isinstance(err, llmroute.InvalidRequestError) and not err.retryable


@pytest.mark.parametrize(
    "text",
    [
        "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, "
        "Requested 2000.",
        "Too many tokens, please wait before trying again.",
        "Throttling error: too many tokens per minute",
        "The model `gpt-5-turbo` does not exist or you do not have access to it.",
    ],
)
def test_not_context_overflow(text: str) -> None:
    assert not is_context_overflow(text)


def test_bedrock_throttling_mentioning_tokens_is_a_rate_limit() -> None:
    err = _map(
        429,
        {"message": "Too many tokens, please wait before trying again."},
        {
            "x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-requestid": "7d9a0c1e-aaaa",
        },
    )
    assert type(err) is llmroute.RateLimitError and err.retryable
    assert err.code == "ThrottlingException"
    assert err.http is not None and err.http.request_id == "7d9a0c1e-aaaa"


def test_openai_rate_limit_carries_headers_and_retry_after() -> None:
    headers = {
        "x-request-id": "req_abc123",
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "2s",
        "retry-after": "2",
        "set-cookie": "__cf_bm=secret-cookie; path=/",
        "content-type": "application/json",
    }
    err = _map(
        429,
        _openai(
            "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, "
            "Used 29000, Requested 2000. Please try again in 2s.",
            "rate_limit_exceeded",
            "tokens",
        ),
        headers,
        provider="openai",
    )
    assert type(err) is llmroute.RateLimitError and err.retry_after == 2.0
    assert err.http is not None and err.http.request_id == "req_abc123" and err.http.status == 429
    assert err.http.headers == {
        "x-request-id": "req_abc123",
        "x-ratelimit-limit-tokens": "30000",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "2s",
        "retry-after": "2",
    }
    assert str(err).startswith("openai: Rate limit reached")
    assert "request id req_abc123" in str(err)


def test_anthropic_rate_limit_headers_kept() -> None:
    headers = {
        "request-id": "req_011CV",
        "retry-after": "15",
        "anthropic-ratelimit-input-tokens-limit": "50000",
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": "2025-01-01T00:00:15Z",
    }
    err = _map(
        429,
        _anthropic(
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50,000 input tokens per minute.",
        ),
        headers,
    )
    assert type(err) is llmroute.RateLimitError and err.retry_after == 15.0
    assert err.code == "rate_limit_error"
    assert err.http is not None and err.http.request_id == "req_011CV"
    assert (
        err.http.headers is not None and err.http.headers["anthropic-ratelimit-input-tokens-remaining"] == "0"
    )


QUOTA_CASES = [
    pytest.param(
        429,
        _openai(
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        {},
        id="openai-insufficient-quota",
    ),
    pytest.param(
        400,
        _anthropic(
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade "
            "or purchase credits.",
        ),
        {},
        id="anthropic-credit-balance",
    ),
    pytest.param(
        429,
        _google(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                }
            ],
        ),
        {},
        id="gemini-daily",
    ),
    pytest.param(
        402,
        {
            "error": {
                "message": "Insufficient credits. Add more using https://openrouter.ai/credits",
                "code": 402,
            }
        },
        {},
        id="openrouter-402",
    ),
    pytest.param(
        402,
        {
            "error": {
                "message": "Insufficient Balance",
                "type": "unknown_error",
                "code": "invalid_request_error",
            }
        },
        {},
        id="deepseek-402",
    ),
    pytest.param(
        400,
        {"message": "Your request exceeds the service quota for your account."},
        {"x-amzn-errortype": "ServiceQuotaExceededException:http://internal.amazon.com/coral/"},
        id="bedrock-service-quota",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers"), QUOTA_CASES)
def test_quota(status: int, body: Any, headers: dict[str, str]) -> None:
    err = _map(status, body, headers)
    assert type(err) is llmroute.QuotaExceededError and not err.retryable


def test_gemini_per_minute_quota_is_a_rate_limit_with_retry_delay() -> None:
    err = _map(
        429,
        [
            _google(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota, please check your plan and billing details. For more "
                "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {
                                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                                "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            }
                        ],
                    },
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"},
                ],
            )
        ],
    )
    assert type(err) is llmroute.RateLimitError and err.retry_after == 23.0
    assert err.code == "RESOURCE_EXHAUSTED"


def test_openrouter_wrapped_upstream_rate_limit() -> None:
    err = _map(
        429,
        {
            "error": {
                "message": "Provider returned error",
                "code": 429,
                "metadata": {
                    "raw": "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry shortly.",
                    "provider_name": "Google AI Studio",
                },
            }
        },
    )
    assert type(err) is llmroute.RateLimitError
    assert "temporarily rate-limited upstream" in err.message


POLICY_CASES = [
    pytest.param(
        400,
        _openai(
            "Your request was rejected as a result of our safety system. Your prompt may contain text that is not "
            "allowed by our safety system.",
            "content_policy_violation",
        ),
        id="openai",
    ),
    pytest.param(
        400,
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
                "policy. Please modify your prompt and retry.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {"code": "ResponsibleAIPolicyViolation"},
            }
        },
        id="azure",
    ),
    pytest.param(
        403,
        {
            "error": {
                "code": 403,
                "message": 'gpt-4o requires moderation on OpenRouter. Your input was flagged for "harassment"',
                "metadata": {"reasons": ["harassment"], "provider_name": "OpenAI"},
            }
        },
        id="openrouter-moderation",
    ),
]


@pytest.mark.parametrize(("status", "body"), POLICY_CASES)
def test_content_policy(status: int, body: Any) -> None:
    err = _map(status, body)
    assert type(err) is llmroute.ContentPolicyError and not err.retryable


def test_gemini_safety_settings_typo_is_not_content_policy() -> None:
    err = _map(
        400,
        _google(
            400, "INVALID_ARGUMENT", "Invalid value at 'safety_settings[0].threshold', \"BLOCK_SOMETIMES\""
        ),
    )
    assert type(err) is llmroute.InvalidRequestError


AUTH_CASES = [
    pytest.param(
        401,
        _openai(
            "Incorrect API key provided: sk-proj-********************abcd. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "invalid_api_key",
        ),
        {},
        "invalid",
        id="openai-401",
    ),
    pytest.param(
        401, _anthropic("authentication_error", "invalid x-api-key"), {}, "invalid", id="anthropic-401"
    ),
    pytest.param(
        403,
        _anthropic(
            "permission_error", "Your API key does not have permission to use the specified resource."
        ),
        {},
        "forbidden",
        id="anthropic-403",
    ),
    pytest.param(
        400,
        _google(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
        ),
        {},
        "invalid",
        id="gemini-bad-key",
    ),
    pytest.param(
        403,
        _google(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
        {},
        "forbidden",
        id="gemini-403",
    ),
    pytest.param(
        403,
        {"message": "The security token included in the request is invalid."},
        {"x-amzn-errortype": "UnrecognizedClientException:http://internal.amazon.com/coral/"},
        "invalid",
        id="bedrock-bad-token",
    ),
    pytest.param(
        403,
        {"message": "The security token included in the request is expired"},
        {"x-amzn-errortype": "ExpiredTokenException:http://internal.amazon.com/coral/"},
        "expired",
        id="bedrock-expired",
    ),
    pytest.param(
        403,
        {"message": "You don't have access to the model with the specified model ID."},
        {"x-amzn-errortype": "AccessDeniedException:http://internal.amazon.com/coral/"},
        "forbidden",
        id="bedrock-access-denied",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers", "kind"), AUTH_CASES)
def test_authentication(status: int, body: Any, headers: dict[str, str], kind: str) -> None:
    err = _map(status, body, headers)
    assert type(err) is llmroute.AuthenticationError and err.kind == kind and not err.retryable


@pytest.mark.parametrize(
    ("status", "body", "retryable"),
    [
        (
            500,
            _openai(
                "The server had an error while processing your request. Sorry about that!",
                None,
                "server_error",
            ),
            True,
        ),
        (529, _anthropic("overloaded_error", "Overloaded"), True),
        (503, _google(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), True),
        (502, b"<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>", True),
        (501, b"Not Implemented", False),
        (408, b"", True),
    ],
)
def test_provider_internal(status: int, body: Any, retryable: bool) -> None:
    err = _map(status, body)
    assert type(err) is llmroute.ProviderInternalError and err.retryable is retryable
    assert err.http is not None and err.http.status == status


def test_html_error_page_is_summarised() -> None:
    err = _map(
        502, b"<html><head><title>502 Bad Gateway</title></head><body>" + b"x" * 5000 + b"</body></html>"
    )
    assert err.message == "p: HTTP 502: 502 Bad Gateway (HTML error page)"
    assert err.http is not None and err.http.body is not None and len(err.http.body) <= 2000


def test_model_not_found_is_invalid_request() -> None:
    err = _map(
        404,
        _openai("The model `gpt-5-turbo` does not exist or you do not have access to it.", "model_not_found"),
    )
    assert type(err) is llmroute.InvalidRequestError and err.code == "model_not_found"


# retry-after parsing and the retry policy --------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(12.0, abs=1.0)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(
        jitter=0.0, initial_backoff=0.5, multiplier=2.0, max_backoff=3.0, max_retry_after=20.0
    )
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.delay(1, retry_after=5.0) == 5.0
    assert policy.delay(1, retry_after=500.0) == 20.0
    jittery = RetryPolicy(jitter=0.25)
    assert jittery.delay(1, rand=lambda: 0.0) == pytest.approx(0.375)
    assert jittery.delay(1, rand=lambda: 1.0) == pytest.approx(0.625)
    assert RetryPolicy.none().max_retries == 0
    assert 429 in RetryPolicy().statuses and 400 not in RetryPolicy().statuses


def test_timeouts_replace() -> None:
    t = Timeouts().replace(idle=5.0, total=30.0)
    assert (t.connect, t.first_byte, t.idle, t.total) == (10.0, 600.0, 5.0, 30.0)


def test_quota_wording_vs_rate_window() -> None:
    assert is_quota("You exceeded your current quota, please check your plan and billing details.")
    assert not is_quota("Quota exceeded for quota metric 'Generate Content API requests per minute'")


@pytest.mark.parametrize(
    ("exc", "cls", "deadline"),
    [
        (httpx.ConnectTimeout("timed out"), llmroute.TimeoutError, "connect"),
        (httpx.PoolTimeout("pool"), llmroute.TimeoutError, "pool"),
        (httpx.ReadTimeout("timed out"), llmroute.TimeoutError, "first_byte"),
        (httpx.ConnectError("All connection attempts failed"), llmroute.TransportError, None),
        (httpx.RemoteProtocolError("peer closed connection"), llmroute.TransportError, None),
    ],
)
def test_transport_error_mapping(exc: Exception, cls: type[llmroute.LLMError], deadline: str | None) -> None:
    prepared = PreparedRequest(
        "POST", "https://h.example/v1/x?key=opaque-secret-1234", {}, b"", ("opaque-secret-1234",)
    )
    err = transport_error(exc, prepared)
    assert type(err) is cls and err.code == type(exc).__name__
    assert getattr(err, "deadline", None) == deadline
    assert "opaque-secret-1234" not in str(err) and "key=[REDACTED]" in str(err)


def test_in_stream_errors_follow_the_http_rules() -> None:

    daily = {
        "code": 429,
        "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota, please check your plan and billing details.",
    }
    assert isinstance(from_stream_event(daily, "gemini"), llmroute.QuotaExceededError)
    minute = {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota"}
    assert isinstance(from_stream_event(minute, "gemini"), llmroute.RateLimitError)
    assert isinstance(
        from_stream_event({"code": "upstream_timeout", "message": "x"}, "openai", status=503),
        llmroute.ProviderInternalError,
    )
    assert from_stream_event({"code": "upstream_timeout", "message": "x"}, "openai", status=503).retryable
    assert isinstance(
        from_stream_event({"type": "ThrottlingException", "message": "slow down"}, "bedrock"),
        llmroute.RateLimitError,
    )
    denied = from_stream_event({"type": "AccessDeniedException", "message": "no"}, "bedrock")
    assert isinstance(denied, llmroute.AuthenticationError) and denied.kind == "forbidden"
    low = {"type": "invalid_request_error", "message": "Your credit balance is too low to access the API."}
    assert isinstance(from_stream_event(low, "anthropic"), llmroute.QuotaExceededError)
    flagged = {"type": "invalid_request_error", "message": "Output blocked by content filtering policy"}
    assert isinstance(from_stream_event(flagged, "anthropic"), llmroute.ContentPolicyError)
