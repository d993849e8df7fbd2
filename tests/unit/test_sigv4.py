"""SigV4 against a server that cannot be fooled: a real HTTP server on 127.0.0.1 recomputes the
signature from the request it received, with botocore and the same credentials, and rejects any
mismatch. Also: credential sources, thread use, secrets never shown, bearer keys, lazy botocore."""

from __future__ import annotations

import datetime as dt
import hmac
import http.server
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from botocore.auth import SigV4Auth as BotocoreSigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, RefreshableCredentials

import llmroute
from llmroute.providers import bedrock
from llmroute.route import sigv4
from llmroute.route.auth import ApiKey
from llmroute.route.sigv4 import AwsCredentials, SigV4Auth
from llmroute.schema.errors import AuthenticationError, NoRouteError
from tests.helpers import load

ACCESS_KEY = "AKIDEXAMPLELLMROUTE1"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
REGION = "us-west-2"
MODEL = "us.amazon.nova-micro-v1:0"
STREAM = load("opencode/bedrock-converse/streams-text.yaml").interactions[0].response.body
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$"
)


class VerifyingServer(http.server.ThreadingHTTPServer):
    """Accepts a request only if botocore, given the same credentials, computes the same signature."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.credentials: dict[str, tuple[str, str | None]] = {ACCESS_KEY: (SECRET_KEY, None)}
        self.log: list[tuple[int, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def verify(self, method: str, path: str, headers: dict[str, str], body: bytes) -> str | None:
        """``None`` when the signature is right, else why not."""
        match = _AUTH.match(headers.get("authorization", ""))
        if not match:
            return "malformed or missing Authorization"
        key_id, date, region, service, signed, signature = match.groups()
        if key_id not in self.credentials:
            return "unknown access key"
        secret, token = self.credentials[key_id]
        if (region, service) != (REGION, "bedrock"):
            return "wrong scope"
        stamp = headers.get("x-amz-date", "")
        if not stamp.startswith(date):
            return "date mismatch"
        when = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        if abs((dt.datetime.now(dt.UTC) - when).total_seconds()) > 300:
            return "stale request"
        names = signed.split(";")
        for required in ("host", "x-amz-date", "content-type"):
            if required not in names:
                return f"{required} not signed"
        if token is not None and (
            headers.get("x-amz-security-token") != token or "x-amz-security-token" not in names
        ):
            return "security token missing or unsigned"
        if any(n not in headers for n in names):
            return "a signed header was not sent"
        request = AWSRequest(
            method=method, url=self.url + path, data=body, headers={n: headers[n] for n in names}
        )
        request.context["timestamp"] = stamp
        signer = BotocoreSigV4Auth(Credentials(key_id, secret, token), service, region)
        canonical = signer.canonical_request(request)
        if signer.signed_headers(signer.headers_to_sign(request)) != signed:
            return "signed header list differs"
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if not hmac.compare_digest(expected, signature):
            return "signature mismatch"
        return None


class _Handler(http.server.BaseHTTPRequestHandler):
    server: VerifyingServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        problem = self.server.verify("POST", self.path, headers, body)
        if problem is None:
            status, ctype, payload = 200, "application/vnd.amazon.eventstream", STREAM
        else:
            # Echo the received Authorization, as some servers do: the client must redact it.
            message = f"{problem}: The request signature we calculated does not match ({headers.get('authorization')})"
            status, ctype, payload = 403, "application/json", json.dumps({"message": message}).encode()
        self.server.log.append((status, problem or "ok"))
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload)))
        if status == 403:
            self.send_header("x-amzn-errortype", "InvalidSignatureException:http://internal.amazon.com/")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[VerifyingServer]:
    srv = VerifyingServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No ambient AWS configuration: no env credentials, empty config files, no instance metadata."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


async def _generate(model: llmroute.Model) -> llmroute.LLMResponse:
    async with llmroute.Client(http=httpx.AsyncClient()) as client:
        return await client.generate(llmroute.request(model=model, prompt="Say hello."))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


# --- the verifying server ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_signed_request_is_accepted(server: VerifyingServer, no_aws_env: Path) -> None:
    model = bedrock.configure(
        region=REGION, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, base_url=server.url
    ).converse(MODEL)
    response = await _generate(model)
    assert response.text == "Hello"
    assert response.finish_reason == "stop"
    assert server.log == [(200, "ok")]


@pytest.mark.anyio
async def test_session_token_is_signed_and_sent(server: VerifyingServer, no_aws_env: Path) -> None:
    server.credentials = {ACCESS_KEY: (SECRET_KEY, TOKEN)}
    model = bedrock.configure(
        region=REGION,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        session_token=TOKEN,
        base_url=server.url,
    ).converse(MODEL)
    assert (await _generate(model)).text == "Hello"
    assert server.log == [(200, "ok")]


@pytest.mark.anyio
async def test_tampering_is_rejected(server: VerifyingServer, no_aws_env: Path) -> None:
    model = bedrock.configure(
        region=REGION, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, base_url=server.url
    ).converse(MODEL)
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model=model, prompt="Say hello."))
    tampered_body = prepared.body.replace(b"Say hello.", b"Say hellO.")
    other_model = prepared.url.replace("nova-micro", "nova-pro")
    async with httpx.AsyncClient() as http:
        ok = await http.post(prepared.url, content=prepared.body, headers=prepared.headers)
        body = await http.post(prepared.url, content=tampered_body, headers=prepared.headers)
        url = await http.post(other_model, content=prepared.body, headers=prepared.headers)
        header = await http.post(
            prepared.url, content=prepared.body, headers={**prepared.headers, "accept": "*/*"}
        )
    assert [r.status_code for r in (ok, body, url, header)] == [200, 403, 403, 403]
    assert [problem for _, problem in server.log] == [
        "ok",
        "signature mismatch",
        "signature mismatch",
        "signature mismatch",
    ]


@pytest.mark.anyio
async def test_wrong_secret_is_rejected_and_nothing_secret_leaks(
    server: VerifyingServer, no_aws_env: Path
) -> None:
    wrong = "not-the-right-secret-key-0123456789abcdef"
    model = bedrock.configure(
        region=REGION, access_key_id=ACCESS_KEY, secret_access_key=wrong, base_url=server.url
    ).converse(MODEL)
    with pytest.raises(AuthenticationError) as info:
        await _generate(model)
    error = info.value
    assert error.kind == "forbidden" and server.log == [(403, "signature mismatch")]
    shown = " ".join([str(error), repr(error), repr(error.http), repr(model), repr(model.route.auth)])
    assert "signature mismatch" in shown  # the server's message is surfaced...
    assert wrong not in shown and "Signature=[REDACTED]" in shown  # ...without the secret or the signature
    assert not re.search(r"[0-9a-f]{64}", shown)


@pytest.mark.anyio
async def test_environment_credentials(
    server: VerifyingServer, no_aws_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    model = bedrock.configure(base_url=server.url).converse(MODEL)
    assert (await _generate(model)).text == "Hello"


@pytest.mark.anyio
@pytest.mark.parametrize("via", ["argument", "AWS_PROFILE"])
async def test_shared_config_profile(
    server: VerifyingServer, no_aws_env: Path, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    (no_aws_env / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIDWRONGDEFAULT0000\naws_secret_access_key = nope\n\n"
        f"[bench]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
    )
    if via == "AWS_PROFILE":
        monkeypatch.setenv("AWS_PROFILE", "bench")
        facade = bedrock.configure(region=REGION, base_url=server.url)
    else:
        facade = bedrock.configure(region=REGION, profile="bench", base_url=server.url)
    assert (await _generate(facade.converse(MODEL))).text == "Hello"
    assert server.log == [(200, "ok")]


# --- credentials ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_missing_credentials_name_the_env_vars(no_aws_env: Path) -> None:
    model = bedrock.configure(region=REGION, base_url="http://127.0.0.1:9").converse(MODEL)
    async with llmroute.Client() as client:
        with pytest.raises(AuthenticationError) as info:
            await client.prepare(llmroute.request(model=model, prompt="hi"))
    assert info.value.kind == "missing"
    assert "AWS_ACCESS_KEY_ID" in str(info.value) and "AWS_SECRET_ACCESS_KEY" in str(info.value)


def test_half_a_key_pair_is_refused() -> None:
    with pytest.raises(AuthenticationError, match="together"):
        AwsCredentials(access_key_id=ACCESS_KEY)


class _Counter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = anyio.to_thread.run_sync

        async def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await real(*args, **kwargs)

        monkeypatch.setattr(sigv4.anyio.to_thread, "run_sync", counting)


def _prepared() -> Any:
    from llmroute.route.prepared import PreparedRequest

    return PreparedRequest(
        "POST",
        f"https://bedrock-runtime.{REGION}.amazonaws.com/model/x/converse-stream",
        {"content-type": "application/json"},
        b"{}",
    )


@pytest.mark.anyio
async def test_static_credentials_use_one_thread_in_all(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = _Counter(monkeypatch)
    auth = SigV4Auth("bedrock", REGION, AwsCredentials(ACCESS_KEY, SECRET_KEY))
    for _ in range(5):
        request = await auth.apply(_prepared())
        assert request.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert counter.calls == 1  # the first resolution only


@pytest.mark.anyio
async def test_refreshable_credentials_refresh_in_a_thread_only_when_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refreshes: list[str] = []

    def metadata(minutes: int) -> dict[str, str]:
        expiry = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=minutes)
        return {
            "access_key": ACCESS_KEY,
            "secret_key": SECRET_KEY,
            "token": TOKEN,
            "expiry_time": expiry.isoformat(),
        }

    def refresh() -> dict[str, str]:
        refreshes.append(threading.current_thread().name)
        return metadata(60)

    credentials = AwsCredentials()
    credentials._creds = RefreshableCredentials.create_from_metadata(metadata(60), refresh, "test")  # pyright: ignore[reportPrivateUsage]
    counter = _Counter(monkeypatch)
    auth = SigV4Auth("bedrock", REGION, credentials)
    for _ in range(3):
        await auth.apply(_prepared())
    assert counter.calls == 0 and refreshes == []  # fresh: signed on the loop
    credentials._creds = RefreshableCredentials.create_from_metadata(metadata(1), refresh, "test")  # pyright: ignore[reportPrivateUsage]
    request = await auth.apply(_prepared())
    assert counter.calls == 1 and len(refreshes) == 1
    assert refreshes[0] != threading.current_thread().name  # refreshed off the event loop
    assert request.headers["x-amz-security-token"] == TOKEN
    await auth.apply(_prepared())
    assert counter.calls == 1  # fresh again


@pytest.mark.anyio
async def test_signature_and_token_are_registered_as_secrets() -> None:
    auth = SigV4Auth("bedrock", REGION, AwsCredentials(ACCESS_KEY, SECRET_KEY, TOKEN))
    request = await auth.apply(_prepared())
    signature = request.headers["authorization"].rsplit("Signature=", 1)[1]
    assert signature in request.secrets and TOKEN in request.secrets
    shown = repr(request) + repr(auth) + repr(auth.credentials) + str(request.redacted())
    for secret in (SECRET_KEY, TOKEN, signature):
        assert secret not in shown


def test_botocore_signs_exactly_what_we_send() -> None:
    request = _prepared()
    signed = sigv4.sign(request, Credentials(ACCESS_KEY, SECRET_KEY), "bedrock", REGION)
    aws = AWSRequest(method="POST", url=request.url, data=request.body, headers=dict(request.headers))
    aws.context["timestamp"] = signed["X-Amz-Date"]
    aws.headers["X-Amz-Date"] = signed["X-Amz-Date"]
    signer = BotocoreSigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "bedrock", REGION)
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    assert signed["Authorization"].endswith(f"Signature={expected}")
    assert "SignedHeaders=content-type;host;x-amz-date," in signed["Authorization"]


# --- bearer keys, region, lazy botocore ----------------------------------------------------------


@pytest.mark.anyio
async def test_bedrock_api_keys_bypass_signing(no_aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = bedrock.configure(region=REGION, api_key="bedrock-api-key-explicit").converse(MODEL)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-from-env")
    from_env = bedrock.configure(region=REGION).converse(MODEL)
    keys_win = bedrock.configure(
        region=REGION, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY
    ).converse(MODEL)
    async with llmroute.Client() as client:
        a = await client.prepare(llmroute.request(model=explicit, prompt="hi"))
        b = await client.prepare(llmroute.request(model=from_env, prompt="hi"))
        c = await client.prepare(llmroute.request(model=keys_win, prompt="hi"))
    assert a.headers["authorization"] == "Bearer bedrock-api-key-explicit" and "x-amz-date" not in a.headers
    assert b.headers["authorization"] == "Bearer bedrock-api-key-from-env"
    assert c.headers["authorization"].startswith("AWS4-HMAC-SHA256 ") and "x-amz-date" in c.headers
    assert "bedrock-api-key-explicit" not in repr(a) + repr(explicit.route.auth)


def test_region_resolution(no_aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(NoRouteError, match="AWS_REGION"):
        bedrock.configure(api_key="k")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert bedrock.configure(api_key="k").region == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    assert bedrock.configure(api_key="k").region == "eu-central-1"
    facade = bedrock.configure(region="ap-south-1", api_key="k")
    assert facade.region == "ap-south-1"
    assert facade.model(MODEL).route.endpoint.url(MODEL) == (
        "https://bedrock-runtime.ap-south-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    )


def test_region_from_the_profile_config_file(no_aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_aws_env / "config").write_text("[default]\nregion = us-east-2\n\n[profile eu]\nregion = eu-north-1\n")
    assert bedrock.configure(api_key="k").region == "us-east-2"
    assert bedrock.configure(api_key="k", profile="eu").region == "eu-north-1"
    monkeypatch.setenv("AWS_PROFILE", "eu")
    assert bedrock.resolve_region() == "eu-north-1"
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert bedrock.resolve_region() == "ap-south-1"  # the environment comes first
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(NoRouteError, match="AWS_REGION"):
        bedrock.resolve_region(profile="missing")  # an unknown profile has no region


def test_bearer_or_sigv4_is_decided_when_configured(
    no_aws_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ApiKey(None, ("AWS_BEARER_TOKEN_BEDROCK",)).peek() is None
    signed = bedrock.configure(region=REGION)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-from-env")
    bearer = bedrock.configure(region=REGION)
    assert not signed.auth.uses_bearer() and bearer.auth.uses_bearer()


@pytest.mark.anyio
async def test_signing_again_replaces_the_old_signature_and_date() -> None:
    request = _prepared()
    request.headers["authorization"] = "AWS4-HMAC-SHA256 stale"
    request.headers["x-amz-date"] = "20000101T000000Z"
    auth = SigV4Auth("bedrock", REGION, AwsCredentials(ACCESS_KEY, SECRET_KEY))
    signed = await auth.apply(request)
    assert signed.headers["x-amz-date"] != "20000101T000000Z"
    aws = AWSRequest(
        method="POST",
        url=signed.url,
        data=signed.body,
        headers={k: v for k, v in signed.headers.items() if k != "authorization"},
    )
    aws.context["timestamp"] = signed.headers["x-amz-date"]
    signer = BotocoreSigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "bedrock", REGION)
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    assert signed.headers["authorization"].endswith(f"Signature={expected}")
    assert "stale" not in signed.headers["authorization"]


def test_missing_extra_is_a_no_route_error(no_aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)
    with pytest.raises(NoRouteError, match=r"pip install 'llmroute\[bedrock\]'"):
        bedrock.configure(region=REGION)
    with pytest.raises(NoRouteError, match=r"pip install 'llmroute\[bedrock\]'"):
        bedrock.configure(region=REGION, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)
    assert bedrock.configure(region=REGION, api_key="k").converse(MODEL)  # bearer keys need no botocore


def test_botocore_is_imported_only_when_a_request_is_signed() -> None:
    code = (
        "import sys, asyncio, llmroute\n"
        "from llmroute.providers import bedrock\n"
        "m = bedrock.configure(region='us-east-1', access_key_id='AKIDX', secret_access_key='s').converse('m')\n"
        "assert not any(k.startswith('botocore') for k in sys.modules), 'imported at configure'\n"
        "asyncio.run(llmroute.Client().prepare(llmroute.request(model=m, prompt='hi')))\n"
        "assert 'botocore.auth' in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
