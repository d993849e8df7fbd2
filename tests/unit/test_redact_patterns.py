"""Redaction pinned with real-length credentials of every shape the redactor knows, and with
look-alikes that must stay untouched (each case kills a mutant of route/redact.py: a narrowed
quantifier, a dropped character-class member or alternative, a dropped table entry)."""

from __future__ import annotations

import logging

import pytest

from llmroute.route.redact import (
    REDACTED,
    RedactingFilter,
    Secret,
    collect_secrets,
    get_logger,
    install_log_redaction,
    is_secret_name,
    quiet_signing,
    redact_headers,
    redact_log_text,
    redact_text,
    redact_url,
    secrets_in_scope,
)

# Real lengths and alphabets: every character-class member of each pattern occurs in its example.
CREDENTIALS = {
    "openai project key": "sk-proj-Ab3_xY-9zQ7mN2kL5pR8tV1wX4yZ6aB0cD3eF",
    "openai key at the minimum length": "sk-Aa0_-Aa0_-Aa",
    "anthropic key": "sk-ant-api03-Zx9_Qw8-Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm",
    "gemini key (39 chars)": "AIzaSyA1b2C3d4E5f6_G7h8-I9j0K1l2M3n4O5p",
    "gemini key at the minimum length": "AIza0aZ_-0aZ_-0aZ_-0aZ_-",
    "xai key": "xai-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3",
    "xai key at the minimum length": "xai-aA0aA0aA0aA0aA0aA0aA",
    "groq key": "gsk_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3AbCdEfGhIj",
    "groq key at the minimum length": "gsk_aA0aA0aA0aA0aA0aA0aA",
    "aws access key id": "AKIAIOSFODNN7EXAMPLE",
    "aws access key id, digits": "AKIA0123456789ABCDEF",
    "aws temporary key id": "ASIAY34FZKBOKMUTVV7A",
    "aws temporary key id, digits": "ASIA9876543210ZYXWVU",
    "bearer token with + / . _ - ~ and padding": "Bearer ya29.a0Af_H-6~Lq+9/zR8xY7==",
    "bearer token, two spaces": "Bearer  aZ09._-~+/aZ",
    "bearer token without padding": "Bearer abcdefgh",
    "sigv4 signature (64 hex)": "Signature=" + "0123456789abcdef" * 4,
    "sigv4 signature at the minimum length": "Signature=0123456789abcdef",
}


@pytest.mark.parametrize("secret", list(CREDENTIALS.values()), ids=list(CREDENTIALS))
@pytest.mark.parametrize("template", ["{}", "error: {} was rejected", "key={};", '"{}"', "({})"])
def test_every_credential_shape_is_redacted_whole(secret: str, template: str) -> None:
    assert redact_text(template.format(secret)) == template.format(REDACTED)
    assert redact_log_text(template.format(secret)) == template.format(REDACTED)


UNTOUCHED = [
    "task-abcdefghijklmnopqrstu",  # "sk-" inside a word (lower-case letter before it)
    "Ask-abcdefghijklmnopqrstu",  # upper-case letter before it
    "1sk-abcdefghijklmnopqrstu",  # digit before it
    "_sk-abcdefghijklmnopqrstu",  # underscore before it
    "-sk-abcdefghijklmnopqrstu",  # hyphen before it
    "sk-abcdefghijk",  # 11 characters after sk-: too short to be a key
    "AIza0123456789abcdefg",  # 19 after AIza
    "xai-0123456789abcdefg",  # 19 after xai-
    "gsk_0123456789abcdefg",  # 19 after gsk_
    "AKIA0123456789ABCDE",  # 15 after AKIA
    "ASIA0123456789ABCDE",  # 15 after ASIA
    "AKIAabcdefghijklmnop",  # lower case is not an access key id
    "Bearer abcdefg",  # 7 characters: not a token
    "Signature=0123456789abcde",  # 15 hex
    "Signature=ABCDEF0123456789ABCDEF",  # upper-case hex is not SigV4's
    "the task-runner's ask-me-anything session",
    "Authorization required",
]


@pytest.mark.parametrize("text", UNTOUCHED)
def test_look_alikes_stay_untouched(text: str) -> None:
    assert redact_text(text) == text
    assert redact_log_text(text) == text


def test_known_values_are_replaced_from_four_characters() -> None:
    assert redact_text("a=abc b=abcd", ["abc"]) == "a=abc b=abcd"
    assert redact_text("a=abc b=abcd", ["abcd"]) == f"a=abc b={REDACTED}"
    assert redact_text("x=opaque-1 y=opaque-2", ["opaque-1", "", "opaque-2"]) == f"x={REDACTED} y={REDACTED}"


SECRET_NAMES = [
    "Authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "Cookie",
    "set-cookie",
    "x-amz-security-token",
    "x-amz-content-sha256-secret",
    "key",
    "api_key",
    "apikey",
    "access_token",
    "token",
    "X-Amz-Signature",
    "sig",
    "SIG",
    # only the name heuristic catches these: one per alternative of the pattern
    "x-portkey",
    "refresh-tokens",
    "client_secret",
    "db-password",
    "x-signature",
    "x-credentials",
    "cookie2",
    "x-session-id",
    "x-auth",
]
PLAIN_NAMES = ["content-type", "accept", "x-request-id", "alt", "model", "user-agent", "signal", "sign"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)
    assert redact_headers({name: "v4lue", "accept": "text/plain"}) == {name: REDACTED, "accept": "text/plain"}


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names(name: str) -> None:
    assert not is_secret_name(name)


def test_redact_url_query_userinfo_and_untouched() -> None:
    sig = "0123456789abcdef" * 4
    assert redact_url(f"https://blob.test/c/f.png?sv=2024&sig={sig}&se=x") == (
        f"https://blob.test/c/f.png?sv=2024&sig={REDACTED}&se=x"
    )
    assert (
        redact_url("https://user:pa55word@host.test:8443/p?a=1#frag") == "https://host.test:8443/p?a=1#frag"
    )
    assert redact_url("https://user@host.test/p") == "https://host.test/p"
    # blank values are kept (and an empty key= is still a key); [ ] : stay readable
    assert redact_url("https://h.test/p?key=&list[0]=a:b&empty=") == (
        f"https://h.test/p?key={REDACTED}&list[0]=a:b&empty="
    )
    plain = "https://h.test/v1/models/gemini:streamGenerateContent"
    assert redact_url(plain) is plain


def test_collect_secrets_from_headers_query_and_known() -> None:
    headers = {
        "Authorization": "Bearer tok-123456",
        "x-api-key": "abcd1234",
        "x-custom-token": "xyz",  # shorter than 4: not collected
        "x-gateway-key": REDACTED,  # already redacted: not a value to scrub
        "accept": "application/json",
    }
    url = "https://h.test/p?key=AIzaKEY0001&alt=sse&sig=&token=tkn5"
    found = collect_secrets(headers, url, known=["known-1", "", "abcd1234"])
    assert found == ("known-1", "abcd1234", "tok-123456", "AIzaKEY0001", "tkn5")
    assert collect_secrets({"authorization": "bearer lower-case"}, "https://h.test/") == ("lower-case",)
    assert collect_secrets({"authorization": "Basic dXNlcjpwYXNz"}, "https://h.test/") == (
        "Basic dXNlcjpwYXNz",
    )


def test_redact_log_text_query_pairs_bytes_headers_and_header_lines() -> None:
    line = 'HTTP Request: GET https://h.test/v1?alt=sse&key=opaque1;sig=opaque2&x.y-z_9=keep "HTTP/1.1 200"'
    assert redact_log_text(line) == (
        f'HTTP Request: GET https://h.test/v1?alt=sse&key={REDACTED};sig={REDACTED}&x.y-z_9=keep "HTTP/1.1 200"'
    )
    assert redact_log_text("?my-api_key.v2=abc") == f"?my-api_key.v2={REDACTED}"
    assert redact_log_text("?key=a'b") == f"?key={REDACTED}'b"
    headers = "[(b'x-api_key-2', b'opaque'), (b'content-type', b'text/plain'), (b'set-cookie', b'')]"
    assert redact_log_text(headers) == (
        f"[(b'x-api_key-2', b'{REDACTED}'), (b'content-type', b'text/plain'), (b'set-cookie', b'{REDACTED}')]"
    )
    block = "> GET / HTTP/1.1\n> x-goog_api-key: opaque\n< set-cookie: a=b\n< content-type: text/plain"
    assert redact_log_text(block) == (
        f"> GET / HTTP/1.1\n> x-goog_api-key: {REDACTED}\n< set-cookie: {REDACTED}\n< content-type: text/plain"
    )


def _record(msg: str, *args: object, name: str = "httpx") -> logging.LogRecord:
    return logging.LogRecord(name, logging.INFO, __file__, 1, msg, args or None, None)


def test_filter_scoped_only_inside_a_send_and_by_value() -> None:
    scoped, own = RedactingFilter(scoped=True), RedactingFilter(scoped=False)
    outside = _record("GET %s", "https://h.test/?key=opaque1")
    assert scoped.filter(outside) and outside.getMessage() == "GET https://h.test/?key=opaque1"
    mine = _record("GET %s", "https://h.test/?key=opaque1", name="llmroute.x")
    assert own.filter(mine) and mine.getMessage() == f"GET https://h.test/?key={REDACTED}"
    assert mine.args is None
    with secrets_in_scope(("shapeless-secret",)):
        inside = _record("echo %s and ?key=v", "shapeless-secret")
        assert scoped.filter(inside)
        assert inside.getMessage() == f"echo {REDACTED} and ?key={REDACTED}"
        untouched = _record("nothing to hide %d", 5)
        assert scoped.filter(untouched) and untouched.args == (5,)
    after = _record("echo %s", "shapeless-secret")
    assert own.filter(after) and after.getMessage() == "echo shapeless-secret"
    broken = _record("%d", "not a number", name="llmroute.x")
    assert own.filter(broken) and broken.msg == "%d"


def test_quiet_signing_drops_botocore_records_only_while_signing() -> None:
    scoped = RedactingFilter(scoped=True)
    with quiet_signing():
        assert not scoped.filter(_record("StringToSign", name="botocore.auth"))
        assert scoped.filter(_record("fine", name="httpx"))
    assert scoped.filter(_record("StringToSign", name="botocore.auth"))


def test_install_and_get_logger_add_the_filter_once() -> None:
    install_log_redaction()
    install_log_redaction()
    for name in (
        "httpx",
        "httpcore.connection",
        "httpcore.http11",
        "httpcore.http2",
        "httpcore.proxy",
        "websockets.client",
        "botocore.auth",
        "botocore.credentials",
    ):
        assert sum(isinstance(f, RedactingFilter) for f in logging.getLogger(name).filters) == 1, name
    logger = get_logger("llmroute.test_redact_patterns")
    assert get_logger("llmroute.test_redact_patterns") is logger
    assert sum(isinstance(f, RedactingFilter) for f in logger.filters) == 1


def test_secret_equality_and_bearer_values_with_spaces() -> None:
    assert Secret("abcd") == Secret("abcd")
    assert Secret("abcd") != Secret("abce")
    assert Secret("abcd") != "abcd"
    # the whole value after "Bearer " is the credential, spaces included
    assert collect_secrets({"authorization": "Bearer part1 part2"}, "https://h.test/") == ("part1 part2",)
    # a non-secret query parameter's value is never collected, however long
    assert collect_secrets({}, "https://h.test/?alt=json5&model=gemini-pro") == ()


def test_log_query_values_end_at_space_quote_and_fragment() -> None:
    assert redact_log_text("GET /v1?key=opaque1 HTTP/1.1") == f"GET /v1?key={REDACTED} HTTP/1.1"
    assert redact_log_text('"/v1?key=opaque1" sent') == f'"/v1?key={REDACTED}" sent'
    assert redact_log_text("/v1?API_KEY=opaque1#top") == f"/v1?API_KEY={REDACTED}#top"
    assert redact_log_text("?key=a") == f"?key={REDACTED}"


def test_log_headers_upper_case_names_and_empty_values() -> None:
    assert redact_log_text("[(b'X-Api-Key', b'opaque')]") == f"[(b'X-Api-Key', b'{REDACTED}')]"
    # the name decides, not a secret-ish word in the value
    assert redact_log_text("[(b'content-type', b'token')]") == "[(b'content-type', b'token')]"
    assert redact_log_text("> X-Api-Key2: opaque") == f"> X-Api-Key2: {REDACTED}"
    assert redact_log_text("> x-api-key: ") == f"> x-api-key: {REDACTED}"


def test_secrets_in_scope_exit_twice_is_harmless() -> None:
    scope = secrets_in_scope(("shapeless-secret",))
    scope.__enter__()
    scope.__exit__(None, None, None)
    scope.__exit__(None, None, None)  # the token is spent once, not reset twice
    assert RedactingFilter(scoped=True).filter(_record("echo %s", "shapeless-secret"))


@pytest.mark.parametrize(
    "param",
    ["key", "api_key", "apikey", "access_token", "token", "X-Amz-Signature", "X-Amz-Credential", "sig"],
)
def test_cassette_requests_lose_every_secret_query_parameter(param: str) -> None:
    from vcr.request import Request  # the recorder's own request type

    from llmroute.testing.recording import _scrub_request  # pyright: ignore[reportPrivateUsage]

    scrubbed = _scrub_request(Request("GET", f"https://h.test/v1?alt=sse&{param}=opaque-value", b"", {}))
    assert "opaque-value" not in scrubbed.uri and "alt=sse" in scrubbed.uri
