"""A planted credential must never surface: not in exception messages, reprs, tracebacks, logs,
prepared-request reprs or cassettes, whichever way a call fails.

Two secrets are planted: an API key shaped like one (caught by value *and* by shape) and an opaque
token nothing could recognise by shape (caught only because auth registers the value it added).
"""

from __future__ import annotations

import logging
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import llmroute
from llmroute import RetryPolicy, Timeouts
from llmroute.providers import compatible
from llmroute.route.auth import TokenProviderAuth
from llmroute.route.endpoint import Endpoint
from llmroute.testing import CassetteSecretError, use_cassette

from ..reliability.server import FaultServer, Reply, Reset, Stall, chat_chunk, chat_error, chat_stream

pytestmark = pytest.mark.anyio

KEY = "sk-proj-PLANTED7f3a9c1e5b2d8f4a6c0e"
TOKEN = "tok.PLANTEDopaque.9f8e7d6c5b4a"
SECRETS = (KEY, TOKEN)
JSON = {"content-type": "application/json"}


@pytest.fixture
def server() -> Any:
    srv = FaultServer().start()
    try:
        yield srv
    finally:
        srv.stop()


class Evidence:
    """Everything a user could see or log about a failure, gathered for one grep."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def error(self, err: BaseException) -> None:
        self.texts += [str(err), repr(err), "".join(traceback.format_exception(err))]
        if isinstance(err, llmroute.LLMError):
            self.texts += [err.message, repr(err.http), str(err.code), repr(err.partial)]
            if isinstance(err, llmroute.InvalidProviderOutputError):
                self.texts.append(str(err.raw))

    def add(self, *texts: str) -> None:
        self.texts += texts

    def assert_clean(self) -> None:
        blob = "\n".join(self.texts)
        for secret in SECRETS:
            assert secret not in blob
            assert secret[8:24] not in blob  # not even a recognisable fragment


def _model(base_url: str, *, query_key: bool = True, auth: str = "key") -> llmroute.Model:
    provider = compatible.configure(base_url=base_url, api_key=KEY, headers={"x-extra-key": TOKEN})
    model = provider.model("test-model")
    route = model.route
    if query_key:  # Gemini-style key in the query string
        route = route.with_(endpoint=Endpoint(base_url, "/chat/completions", {"key": TOKEN}))
    if auth == "token":

        async def token() -> str:
            return TOKEN

        route = route.with_(auth=TokenProviderAuth(token))
    return model.with_(route=route)


@asynccontextmanager
async def _client(**kwargs: Any) -> AsyncIterator[llmroute.Client]:
    async def no_wait(_seconds: float) -> None:
        return None

    kwargs.setdefault("retry", RetryPolicy(jitter=0.0))
    async with llmroute.Client(sleep=no_wait, **kwargs) as client:
        yield client


def _echo(status: int, body: str, **headers: str) -> Reply:
    return Reply(status, {**JSON, **headers}, [body.encode()], chunked=False)


FAILURES: list[tuple[str, Callable[[], list[Reply]], type[llmroute.LLMError]]] = [
    (
        "401-echoing-key",
        lambda: [
            _echo(
                401,
                f'{{"error": {{"message": "Incorrect API key provided: {KEY} / {TOKEN}", "type": "invalid_request_error", "code": "invalid_api_key"}}}}',
                **{"set-cookie": f"session={TOKEN}", "x-request-id": "req_1"},
            )
        ],
        llmroute.AuthenticationError,
    ),
    (
        "500-html-echoing-key",
        lambda: [
            Reply(
                500,
                {"content-type": "text/html"},
                [f"<html><title>{TOKEN}</title>{KEY}</html>".encode()],
                chunked=False,
            )
            for _ in range(3)
        ],
        llmroute.ProviderInternalError,
    ),
    (
        "400-key-in-code",
        lambda: [_echo(400, f'{{"error": {{"message": "bad header {TOKEN}", "code": "{KEY}"}}}}')],
        llmroute.InvalidRequestError,
    ),
    (
        "stream-error-event-echoing-key",
        lambda: [
            Reply(
                parts=[
                    chat_chunk("x"),
                    chat_error(f"key {KEY} token {TOKEN} rejected", "invalid_request_error"),
                ]
            )
        ],
        llmroute.InvalidRequestError,
    ),
    (
        "malformed-frame-echoing-key",
        lambda: [Reply(parts=[chat_chunk("x"), f'data: {{"oops": "{KEY} {TOKEN}"\n\n'.encode()])],
        llmroute.InvalidProviderOutputError,
    ),
    ("reset-mid-stream", lambda: [Reply(parts=[chat_chunk("x"), Reset()])], llmroute.TransportError),
    ("reset-before-response", lambda: [Reply(before=[Reset()]) for _ in range(3)], llmroute.TransportError),
    ("idle-timeout", lambda: [Reply(parts=[chat_chunk("x"), Stall()])], llmroute.TimeoutError),
    ("first-byte-timeout", lambda: [Reply(before=[Stall()])], llmroute.TimeoutError),
]


@pytest.mark.parametrize("auth", ["key", "token"])
@pytest.mark.parametrize(("name", "replies", "expected"), FAILURES, ids=[f[0] for f in FAILURES])
async def test_failures_never_show_secrets(
    server: FaultServer,
    caplog: pytest.LogCaptureFixture,
    name: str,
    replies: Callable[[], list[Reply]],
    expected: type[llmroute.LLMError],
    auth: str,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: llmroute, httpx, httpcore
    server.add(*replies())
    evidence = Evidence()
    model = _model(server.base_url, auth=auth)
    with anyio.fail_after(10):
        # short deadlines only where a deadline is the failure: elsewhere a loaded machine's slow
        # connect would turn the case into a timeout and test the wrong error
        short = 0.3 if expected is llmroute.TimeoutError else 5.0
        async with _client(timeouts=Timeouts(idle=short, first_byte=short)) as client:
            request = llmroute.request(model=model, prompt="hi")
            with pytest.raises(expected) as caught:
                await client.generate(request)
            stream = client.stream(request)
            evidence.add(repr(client), repr(model), repr(model.route), repr(stream))
            await stream.aclose()
            prepared = await client.prepare(request)
            evidence.add(repr(prepared), repr(prepared.redacted()))
    # the request really carried the secrets (so the test can fail)
    sent = server.received[0]
    assert TOKEN in sent.path
    assert sent.headers["authorization"] == f"Bearer {KEY if auth == 'key' else TOKEN}"
    evidence.error(caught.value)
    evidence.add(caplog.text, *(r.getMessage() for r in caplog.records))
    evidence.assert_clean()


async def test_connection_refused_with_key_in_url(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = _model(f"http://127.0.0.1:{port}/v1")
    evidence = Evidence()
    async with _client() as client:
        with pytest.raises(llmroute.TransportError) as caught:
            await client.generate(llmroute.request(model=model, prompt="hi"))
    assert caught.value.attempts == 3
    evidence.error(caught.value)
    evidence.add(caplog.text)
    evidence.assert_clean()


async def test_missing_key_error_names_the_env_var_not_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    model = compatible.configure("groq").model("llama")
    async with _client() as client:
        with pytest.raises(llmroute.AuthenticationError) as caught:
            await client.generate(llmroute.request(model=model, prompt="hi"))
    assert caught.value.kind == "missing" and "GROQ_API_KEY" in str(caught.value)


def test_reprs_of_configuration_objects() -> None:
    model = _model("https://user:pass@api.example.com/v1")
    texts = [
        repr(model),
        repr(model.route),
        repr(model.route.endpoint),
        repr(model.route.auth),
        str(model.route),
    ]
    for secret in (*SECRETS, "pass@"):
        assert all(secret not in t for t in texts)
    assert "[REDACTED]" in repr(model.route.endpoint)


async def test_cassette_recording_scrubs_and_refuses(server: FaultServer, tmp_path: Path) -> None:
    model = _model(server.base_url)
    request = llmroute.request(model=model, prompt="hi")
    clean = tmp_path / "clean.yaml"
    server.add(Reply(parts=chat_stream("recorded")))
    async with _client() as client:
        with use_cassette(clean, record=True):
            response = await client.generate(request)
    assert response.text == "recorded"
    text = clean.read_text()
    assert "recorded" in text and "chat/completions" in text
    assert KEY not in text and TOKEN not in text

    # a provider that echoes the key in its body: the cassette is refused, and the refusal is clean
    echo = tmp_path / "echo.yaml"
    server.add(_echo(401, f'{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}'))
    async with _client() as client:
        with (
            pytest.raises(CassetteSecretError) as refused,  # raised when the recording is saved
            use_cassette(echo, record=True),
            pytest.raises(llmroute.AuthenticationError),
        ):
            await client.generate(request)
    assert not echo.exists()
    assert KEY not in str(refused.value)
