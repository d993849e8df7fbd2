"""route/classify.py pinned: one provider wording per alternative of each wording table (so dropping
any alternative fails), every error-kind table entry, the kept headers and request ids, the error
envelopes, ``Retry-After`` (never negative) and the status branches."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmroute import (
    AuthenticationError,
    ContentPolicyError,
    ContextOverflowError,
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
)
from llmroute.route.classify import (
    from_response,
    from_stream_event,
    http_context,
    is_content_policy,
    is_context_overflow,
    is_quota,
    is_web_page,
    parse_retry_after,
)

# -- wording tables: each sample matches exactly one alternative -----------------------------------

OVERFLOW = [
    "Error code: context_length_exceeded",
    "context length exceeded for this model",
    "This model's maximum context length is 8192 tokens",
    "Your input exceeds the context window of this model",
    "context window exceeds limit",
    "context window exceeded",
    "the context window is full",
    "model_context_window_exceeded",
    "Please reduce the length of the messages.",
    "prompt is too long: 210000 tokens > 200000 maximum",
    "Prompt too long",
    "prompt exceeds max length",
    "request_too_large",
    "Input is too long for requested model.",
    "Too many input tokens",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
    "maximum allowed input length reached",
    "Input validation error: inputs are longer than the model's context length",
    "input is longer than the models context length",
    "longer than the context length",
    "The decoder prompt is longer than the maximum model length of 4096.",
    "the request exceeds the available context size, try increasing it",
    "exceed_context_size_error",
    "tokens (5000) greater than the context length (4096)",
    "Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
    "exceeded model token limit: 131072",
    "Token limit exceeded",
    "the number of tokens to keep from the initial prompt is greater than the configured context size",
    "Range of input length should be [1, 30720]",
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096.",
    "too many tokens",
]


@pytest.mark.parametrize("message", OVERFLOW)
def test_context_overflow_wordings(message: str) -> None:
    assert is_context_overflow(message)
    error = from_response(400, {}, json.dumps({"error": {"message": message}}).encode())
    assert isinstance(error, ContextOverflowError)


@pytest.mark.parametrize(
    "message",
    [
        "Rate limit reached: too many tokens per min",
        "ratelimit: too many tokens",
        "Too many requests: too many tokens",
        "Request throttled: too many tokens",
        "too many tokens per minute",
        "too many tokens per min",
        "too many tokens per second",
        "too many tokens per day",
        "Please wait: too many tokens",
        "service unavailable: too many tokens",
        "too many tokens (TPM)",
        "too many tokens: RPM reached",
    ],
)
def test_rate_limit_texts_that_mention_tokens_are_not_overflow(message: str) -> None:
    assert not is_context_overflow(message)


QUOTA = [
    "insufficient_quota",
    "You exceeded your current quota, please check your plan",
    "quota exceeded",
    "Quota exhausted for project",
    "you have exceeded the monthly quota",
    "exceeded quota",
    "Your credit balance is too low",
    "insufficient credits",
    "Insufficient balance",
    "insufficient funds",
    "billing hard limit reached",
    "Payment Required",
    "you are out of credits",
    "ServiceQuotaExceededException",
    "Arrearage: 余额不足",
    "您的额度已用完",
]


@pytest.mark.parametrize("message", QUOTA)
def test_quota_wordings(message: str) -> None:
    assert is_quota(message)
    assert isinstance(
        from_response(400, {}, json.dumps({"error": {"message": message}}).encode()), QuotaExceededError
    )


@pytest.mark.parametrize(
    "window",
    [
        "rate limit",
        "rate-limit",
        "ratelimit",
        "too many requests",
        "per minute",
        "perminute",
        "PerMinute",
        "per second",
        "persecond",
        "RPM",
        "TPM",
        "throttled",
    ],
)
def test_quota_wordings_that_name_a_short_window_are_rate_limits(window: str) -> None:
    assert not is_quota(f"quota exceeded ({window})")


POLICY = [
    "content_policy_violation",
    "content policy",
    "content-policy",
    "contentpolicy",
    "content_filter triggered",
    "content filter",
    "content-filter",
    "ContentFilter",
    "blocked by the content management policy",
    "ResponsibleAIPolicyViolation",
    "rejected by our safety system",
    "Your request was flagged by our system",
    "flagged for review",
    "moderation block",
    "this request violates our usage policy",
    "violated the policies",
    "violating the usage policy",
    "prohibited content detected",
    "blocked by guardrail",
    "blocked by the guardrail",
]


@pytest.mark.parametrize("message", POLICY)
def test_content_policy_wordings(message: str) -> None:
    assert is_content_policy(message)
    assert isinstance(
        from_response(400, {}, json.dumps({"error": {"message": message}}).encode()), ContentPolicyError
    )


@pytest.mark.parametrize("message", ["flagged as spam", "violates a rule", "content"])
def test_near_misses_are_not_content_policy(message: str) -> None:
    assert not is_content_policy(message)


BAD_KEY = [
    "API_KEY_INVALID",
    "api key invalid",
    "API key not valid. Please pass a valid API key.",
    "invalid api key",
    "Invalid x-api-key",
    "invalid api_key",
    "invalid api-key",
    "Incorrect API key provided",
    "invalid_api_key",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
    "IncompleteSignature",
    "Invalid authentication credentials",
    "UNAUTHENTICATED",
]


@pytest.mark.parametrize("status", [400, 403])
@pytest.mark.parametrize("message", BAD_KEY)
def test_bad_key_wordings_on_400_and_403_are_authentication_errors(message: str, status: int) -> None:
    error = from_response(status, {}, json.dumps({"error": {"message": message}}).encode())
    assert isinstance(error, AuthenticationError) and error.kind == "invalid"


@pytest.mark.parametrize("message", ["The security token included in the request is expired", "ExpiredToken"])
def test_expired_credentials(message: str) -> None:
    error = from_response(401, {}, json.dumps({"message": message}).encode())
    assert isinstance(error, AuthenticationError) and error.kind == "expired"
    forbidden = from_response(403, {}, json.dumps({"message": message}).encode())
    assert isinstance(forbidden, AuthenticationError) and forbidden.kind == "expired"


# -- error kinds (type / code / AWS exception / Google status) ------------------------------------

KINDS: list[tuple[str, type[LLMError]]] = [
    *[(k, RateLimitError) for k in ("rate_limit_error", "rate_limit_exceeded", "too_many_requests",
                                    "ThrottlingException", "TooManyRequestsException", "RESOURCE_EXHAUSTED")],
    *[(k, ProviderInternalError) for k in ("overloaded_error", "overloaded", "server_error", "api_error",
                                           "internal_error", "INTERNAL", "service_unavailable", "UNAVAILABLE",
                                           "InternalServerException", "ServiceUnavailableException",
                                           "ModelStreamErrorException", "ModelTimeoutException",
                                           "ModelNotReadyException")],
    *[(k, InvalidRequestError) for k in ("invalid_request_error", "invalid_request", "INVALID_ARGUMENT",
                                         "NOT_FOUND", "ValidationException", "ResourceNotFoundException",
                                         "ModelErrorException")],
    *[(k, AuthenticationError) for k in ("authentication_error", "UNAUTHENTICATED", "permission_error",
                                         "PERMISSION_DENIED", "AccessDeniedException", "AccessDenied",
                                         "UnrecognizedClientException")],
]  # fmt: skip


@pytest.mark.parametrize(("kind", "cls"), KINDS)
def test_stream_error_kinds(kind: str, cls: type[LLMError]) -> None:
    error = from_stream_event({"type": kind, "message": "something happened"}, "p")
    assert type(error) is cls
    assert error.code == kind and str(error).startswith("p: something happened")
    if cls is ProviderInternalError:
        assert error.retryable


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("permission_error", "forbidden"),
        ("PERMISSION_DENIED", "forbidden"),
        ("AccessDeniedException", "forbidden"),
        ("AccessDenied", "forbidden"),
        ("authentication_error", "invalid"),
        ("UNAUTHENTICATED", "invalid"),
    ],
)
def test_stream_auth_kinds_forbidden_or_invalid(kind: str, expected: str) -> None:
    error = from_stream_event({"status": kind, "message": "no"}, "p")
    assert isinstance(error, AuthenticationError) and error.kind == expected


@pytest.mark.parametrize(
    ("error", "status", "cls"),
    [
        ({"message": "x"}, 401, AuthenticationError),
        ({"message": "x"}, 403, AuthenticationError),
        ({"message": "x", "code": 429}, None, RateLimitError),
        ({"message": "x"}, 429, RateLimitError),
        ({"message": "x"}, 500, ProviderInternalError),
        ({"message": "x"}, 499, InvalidRequestError),
        ({"message": "x"}, 400, InvalidRequestError),
        ({"message": "x"}, 399, ProviderInternalError),
        ({"message": "x"}, None, ProviderInternalError),
        ({"message": "Quota limit PerDay reached"}, None, QuotaExceededError),
        ({"code": "insufficient_quota", "message": "x"}, None, QuotaExceededError),
        ({"message": "maximum context length is 10"}, None, ContextOverflowError),
        ({"message": "flagged by moderation"}, None, ContentPolicyError),
        ({"error": "plain error text"}, 500, ProviderInternalError),
    ],
)
def test_stream_error_status_and_text(error: dict[str, Any], status: int | None, cls: type[LLMError]) -> None:
    result = from_stream_event(error, "p", status=status)
    assert type(result) is cls
    if status is None and error.get("code") is None and cls is ProviderInternalError:
        assert not result.retryable  # an unknown in-stream error is not retried blindly
    if status == 403:
        assert isinstance(result, AuthenticationError) and result.kind == "forbidden"
    if status == 401:
        assert isinstance(result, AuthenticationError) and result.kind == "invalid"


def test_stream_error_message_and_code() -> None:
    error = from_stream_event({"error": "boom"}, "p")
    assert error.message == "p: boom" and error.code is None
    error = from_stream_event({}, "p")
    assert error.message == "p: provider reported an error"
    error = from_stream_event({"type": "", "code": "context_length_exceeded", "message": "m"}, "p")
    assert isinstance(error, ContextOverflowError) and error.code == "context_length_exceeded"


# -- kept headers, request ids --------------------------------------------------------------------

KEPT = [
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-remaining-requests",
    "anthropic-ratelimit-tokens-reset",
    "x-request-id",
    "request-id",
    "x-amzn-requestid",
    "x-amz-request-id",
    "x-amzn-errortype",
    "openai-processing-ms",
    "x-goog-request-id",
    "x-goog-trace-id",
    "cf-ray",
    "apim-request-id",
    "x-ms-request-id",
    "x-should-retry",
]


@pytest.mark.parametrize("name", KEPT)
def test_kept_headers_are_kept_lower_cased_and_redacted(name: str) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwx"
    ctx = http_context(
        "POST",
        "https://h.test/v1",
        429,
        {name.upper(): f"v {secret} opaque-1", "X-Other": "drop"},
        secrets=("opaque-1",),
    )
    assert ctx.headers == {name: "v [REDACTED] [REDACTED]"}


@pytest.mark.parametrize(
    "name", ["retry-after-s", "x-retry-after", "content-type", "x-ratelimit", "request-ids", "set-cookie"]
)
def test_other_headers_are_dropped(name: str) -> None:
    assert http_context("GET", None, 500, {name: "v"}).headers is None


@pytest.mark.parametrize(
    "name",
    ["x-request-id", "request-id", "x-amzn-requestid", "x-amz-request-id", "x-goog-request-id", "apim-request-id",
     "x-ms-request-id", "cf-ray"],
)  # fmt: skip
def test_request_id_from_each_header(name: str) -> None:
    assert http_context("GET", None, 500, {name: "rid-1", "openai-processing-ms": "5"}).request_id == "rid-1"


def test_request_id_prefers_the_first_known_header_and_url_and_body_are_redacted() -> None:
    ctx = http_context(
        "GET",
        "https://h.test/v1?key=opaque-2",
        500,
        {"cf-ray": "ray", "x-request-id": "req"},
        body="echo opaque-2 and sk-abcdefghijklmnopqrstuvwx",
        secrets=("opaque-2",),
    )
    assert ctx.request_id == "req"
    assert ctx.url == "https://h.test/v1?key=%5BREDACTED%5D" or ctx.url == "https://h.test/v1?key=[REDACTED]"
    assert ctx.body == "echo [REDACTED] and [REDACTED]"
    assert http_context(None, None, None, None).headers is None


# -- Retry-After -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        ({"retry-after-ms": "", "retry-after": "9"}, 9.0),
        ({"retry-after-ms": "-20"}, 0.0),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after": ""}, None),
        ({}, None),
        ({"retry-after": "not a date"}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # a date in the past
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=1445412480.0) == expected


def test_negative_retry_after_never_reaches_the_error() -> None:
    for status in (429, 503):
        error = from_response(status, {"Retry-After": "-30"}, b"{}")
        assert getattr(error, "retry_after", None) == 0.0


def test_retry_after_falls_back_to_google_retry_delay() -> None:
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "slow down",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41.5s"}]}}  # fmt: skip
    error = from_response(429, {}, json.dumps(body).encode())
    assert isinstance(error, RateLimitError) and error.retry_after == 41.5
    error = from_response(429, {"retry-after": "3"}, json.dumps(body).encode())
    assert isinstance(error, RateLimitError) and error.retry_after == 3.0
    body["error"]["details"][0]["retryDelay"] = "41.5 s"
    error = from_response(429, {}, json.dumps(body).encode())
    assert isinstance(error, RateLimitError) and error.retry_after is None


# -- envelopes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "code"),
    [
        (
            {"error": {"message": "m1", "type": "invalid_request_error", "code": "bad_param"}},
            "m1",
            "bad_param",
        ),
        ({"error": {"message": "m2", "type": "invalid_request_error"}}, "m2", "invalid_request_error"),
        ({"error": {"Message": "m3", "status": "INVALID_ARGUMENT", "code": 400}}, "m3", "INVALID_ARGUMENT"),
        ({"error": {"message": "m4", "code": 400}}, "m4", "400"),
        ({"error": {"code": 400}, "message": "m5"}, "m5", "400"),
        ({"error": {}, "detail": "m6"}, "m6", None),
        ({"message": "m7", "__type": "ValidationException"}, "m7", "ValidationException"),
        ([{"error": {"message": "m8", "status": "INVALID_ARGUMENT"}}], "m8", "INVALID_ARGUMENT"),
        ({"error": "m9", "code": "c9"}, "m9", "c9"),
        ({"error": "m10", "type": "t10"}, "m10", "t10"),
        ({"error": "m11", "code": ""}, "m11", None),
        ({"error": {"message": "m12", "code": 0}}, "m12", None),
        ({"error": {"message": "up", "metadata": {"raw": "upstream said no"}}}, "up: upstream said no", None),
        ({"error": {"message": "up", "metadata": {"raw": ""}}}, "up", None),
    ],
)
def test_error_envelopes(body: Any, message: str, code: str | None) -> None:
    error = from_response(400, {}, json.dumps(body).encode(), provider="p")
    assert error.message == f"p: {message}"
    assert error.code == code


@pytest.mark.parametrize("body", [b"[]", b"[1]", b'"text"', b"{bad json", b"[" * 5000, b'{"error": 5}'])
def test_unusable_bodies_fall_back_to_the_status(body: bytes) -> None:
    error = from_response(400, {}, body)
    assert isinstance(error, InvalidRequestError)
    assert error.message.startswith("HTTP 400")


def test_google_quota_ids_and_reasons_are_hints() -> None:
    def body(quota_id: str, reason: str = "") -> bytes:
        details = [{"reason": reason}, {"violations": [{"quotaId": quota_id}, "junk"]}, "junk"]
        return json.dumps({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Resource has been exhausted",
                                     "details": details}}).encode()  # fmt: skip

    assert isinstance(
        from_response(429, {}, body("GenerateRequestsPerDayPerProjectPerModel")), QuotaExceededError
    )
    assert isinstance(
        from_response(429, {}, body("GenerateRequestsPerMinutePerProjectPerModel")), RateLimitError
    )
    assert isinstance(from_response(429, {}, body("", reason="BILLING_DISABLED")), QuotaExceededError)
    assert isinstance(from_response(403, {}, body("", reason="API_KEY_INVALID")), AuthenticationError)


def test_fallback_messages_html_title_and_snippet() -> None:
    html = b"<html><head><title>\n 502   Bad\tGateway </title></head><body>x</body></html>"
    assert from_response(502, {}, html).message == "HTTP 502: 502 Bad Gateway (HTML error page)"
    long_title = b"<title>" + b"t" * 300 + b"</title>"
    assert from_response(502, {}, long_title).message == f"HTTP 502: {'t' * 200} (HTML error page)"
    late_title = b" " * 4100 + b"<title>late</title>"
    assert "late" not in from_response(502, {}, late_title).message
    assert from_response(502, {}, b"upstream   connect\nerror").message == "HTTP 502: upstream connect error"
    assert from_response(502, {}, b"x" * 500).message == f"HTTP 502: {'x' * 300}"
    assert from_response(502, {}, b"").message == "HTTP 502"
    assert from_response(502, {}, b" " * 1024 + b"hidden").message == "HTTP 502"


# -- status branches ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "message", "cls", "retryable"),
    [
        (401, {}, "who are you", AuthenticationError, False),
        (403, {}, "forbidden", AuthenticationError, False),
        (403, {}, "blocked by content policy", ContentPolicyError, False),
        (403, {}, "billing disabled", QuotaExceededError, False),
        (402, {}, "pay", QuotaExceededError, False),
        (429, {}, "slow down", RateLimitError, True),
        (429, {}, "exceeded your current quota", QuotaExceededError, False),
        (
            400,
            {"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/"},
            "slow",
            RateLimitError,
            True,
        ),
        (400, {"x-amzn-errortype": "TooManyRequestsException"}, "slow", RateLimitError, True),
        (413, {}, "request_too_large", ContextOverflowError, False),
        (500, {}, "prompt is too long", ProviderInternalError, True),
        (499, {}, "blocked by content policy", ContentPolicyError, False),
        (500, {}, "blocked by content policy", ProviderInternalError, True),
        (500, {}, "billing", ProviderInternalError, True),
        (408, {}, "timeout", ProviderInternalError, True),
        (409, {}, "conflict", ProviderInternalError, True),
        (500, {}, "oops", ProviderInternalError, True),
        (501, {}, "no", ProviderInternalError, False),
        (505, {}, "no", ProviderInternalError, False),
        (529, {}, "overloaded", ProviderInternalError, True),
        (400, {}, "bad", InvalidRequestError, False),
        (404, {}, "no such model", InvalidRequestError, False),
        (499, {}, "bad", InvalidRequestError, False),
        (304, {}, "odd", LLMError, False),
    ],
)
def test_status_branches(
    status: int, headers: dict[str, str], message: str, cls: type[LLMError], retryable: bool
) -> None:
    error = from_response(status, headers, json.dumps({"error": {"message": message}}).encode(), provider="p")
    assert type(error) is cls
    assert error.retryable is retryable
    assert error.message == f"p: {message}"
    assert error.http is not None and error.http.status == status


def test_amz_error_type_is_the_code_and_a_hint() -> None:
    error = from_response(400, {"X-Amzn-ErrorType": "ValidationException:http://internal.amazon.com/"}, b"{}")
    assert error.code == "ValidationException"
    error = from_response(
        403, {"x-amzn-errortype": "UnrecognizedClientException"}, b'{"message": "The security token is bad"}'
    )
    assert isinstance(error, AuthenticationError) and error.kind == "invalid"


def test_codes_and_messages_are_redacted() -> None:
    body = json.dumps({"error": {"message": "bad key opaque-3", "code": "key opaque-3"}}).encode()
    error = from_response(400, {}, body, secrets=("opaque-3",))
    assert "opaque-3" not in error.message and error.code == "key [REDACTED]"
    assert error.http is not None and error.http.body is not None and "opaque-3" not in error.http.body


# -- web pages -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "page"),
    [
        ({"Content-Type": "text/html; charset=utf-8"}, True),
        ({"content-type": "TEXT/HTML"}, True),
        ({"content-type": "application/xhtml+xml"}, True),
        ({"content-type": "text/event-stream"}, False),
        ({"content-type": "application/json"}, False),
        ({"x-content-type": "text/html"}, False),
        ({}, False),
    ],
)
def test_is_web_page(headers: dict[str, str], page: bool) -> None:
    assert is_web_page(headers) is page


def test_web_page_error_names_the_title_and_content_type() -> None:
    body = b"<html><title>Sign in <b>opaque-4</b>\x07 \xe2\x80\x94 Portal</title></html>"
    error = from_response(
        200, {"Content-Type": "text/html; charset=utf-8"}, body, provider="p", secrets=("opaque-4",)
    )
    assert isinstance(error, InvalidProviderOutputError)
    assert error.message == (
        "p: the response was not an event stream or JSON: HTTP 200 with content-type text/html titled "
        '"Sign in [REDACTED] \u2014 Portal", a web page (is base_url the API\'s endpoint?)'
    )
    untitled = from_response(203, {"content-type": "text/html"}, b"<html>no title</html>")
    assert untitled.message.endswith(
        "HTTP 203 with content-type text/html, a web page (is base_url the API's endpoint?)"
    )
    empty = from_response(299, {"content-type": "text/html"}, b"<title> <i></i> </title>")
    assert "titled" not in empty.message
