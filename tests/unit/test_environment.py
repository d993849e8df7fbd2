"""Vendor SDK environment variables (explicit arguments win) and platform credentials (Google
ADC, azure-identity) through stand-ins for the optional libraries."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

import llmroute
from llmroute.providers import anthropic, azure, google, openai, vertex
from llmroute.providers.credentials import azure_identity

_VARS = (
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_API_VERSION",
    "OPENAI_API_VERSION",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_RESOURCE",
    "AZURE_OPENAI_API_KEY",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_VERTEX_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)


async def _prepare(model: llmroute.Model) -> llmroute.PreparedRequest:
    return await llmroute.Client().prepare(llmroute.request(model, prompt="hi"))


@pytest.mark.anyio
async def test_openai_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9000/v1/")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    prepared = await _prepare(openai.configure(api_key="sk-test-0123456789abcdef").chat("m"))
    assert prepared.url == "http://127.0.0.1:9000/v1/chat/completions"
    assert (
        prepared.headers["openai-organization"] == "org-1" and prepared.headers["openai-project"] == "proj-1"
    )
    explicit = openai.configure(api_key="k" * 20, base_url="https://gw.test/v1", organization="org-2")
    prepared = await _prepare(explicit.chat("m"))
    assert prepared.url == "https://gw.test/v1/chat/completions"
    assert prepared.headers["openai-organization"] == "org-2"


@pytest.mark.anyio
async def test_anthropic_and_google_base_urls_follow_their_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.test")  # the SDK adds /v1 itself
    prepared = await _prepare(anthropic.configure(api_key="k" * 20).messages("claude-x"))
    assert prepared.url == "https://proxy.test/v1/messages"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.test/v1")
    assert (
        await _prepare(anthropic.configure(api_key="k" * 20).messages("c"))
    ).url == "https://proxy.test/v1/messages"
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1337")
    prepared = await _prepare(google.configure(api_key="k" * 20).gemini("gemini-2.5-flash"))
    assert prepared.url.startswith(
        "http://127.0.0.1:1337/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    )
    monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v1")
    assert google.configure(api_key="k").base_url == "http://127.0.0.1:1337/v1"


@pytest.mark.anyio
async def test_azure_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com/")
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-04-01-preview")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    prepared = await _prepare(azure.configure().chat("prod"))
    assert prepared.url == (
        "https://res.openai.azure.com/openai/deployments/prod/chat/completions?api-version=2025-04-01-preview"
    )
    assert prepared.headers["api-key"] == "azure-key-0123456789"
    assert azure.configure(api_version="2024-10-21").api_version == "2024-10-21"
    with pytest.raises(llmroute.InvalidRequestError, match="api_version"):
        azure.configure(api_version="")


class _Token:
    def __init__(self, token: str) -> None:
        self.token = token


class _SyncCredential:
    def __init__(self) -> None:
        self.scopes: list[str] = []

    def get_token(self, scope: str) -> _Token:
        self.scopes.append(scope)
        return _Token(f"entra-{len(self.scopes)}")


@pytest.mark.anyio
async def test_azure_identity_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    credential = _SyncCredential()
    fake = types.ModuleType("azure.identity")
    fake.DefaultAzureCredential = lambda: credential  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "azure", types.ModuleType("azure"))
    monkeypatch.setitem(sys.modules, "azure.identity", fake)
    monkeypatch.setattr("llmroute.providers.azure.has_azure_identity", lambda: True)
    model = azure.configure("res").chat("prod")
    prepared = await _prepare(model)
    assert prepared.headers["authorization"] == "Bearer entra-1" and "api-key" not in prepared.headers
    assert credential.scopes == ["https://cognitiveservices.azure.com/.default"]
    # A key (explicit or AZURE_OPENAI_API_KEY) still wins over Entra ID.
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    assert (await _prepare(azure.configure("res").chat("prod"))).headers["api-key"] == "azure-key-0123456789"


@pytest.mark.anyio
async def test_azure_identity_async_credential() -> None:
    class AsyncCredential:
        async def get_token(self, scope: str) -> _Token:
            return _Token("async-" + scope.split("/")[2])

    provider = azure_identity(AsyncCredential(), scope="https://example.test/.default")
    assert await provider() == "async-example.test"


class _GoogleAuthError(Exception):
    pass


class _DefaultCredentialsError(_GoogleAuthError):
    pass


class _RefreshError(_GoogleAuthError):
    pass


@pytest.mark.anyio
async def test_an_azure_credential_that_finds_no_token_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class ClientAuthenticationError(Exception):
        pass

    exceptions = types.ModuleType("azure.core.exceptions")
    exceptions.ClientAuthenticationError = ClientAuthenticationError  # type: ignore[attr-defined]
    for name in ("azure", "azure.core"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "azure.core.exceptions", exceptions)

    class Unavailable:
        def get_token(self, scope: str) -> _Token:
            raise ClientAuthenticationError(
                "EnvironmentCredential: AZURE_CLIENT_SECRET=s3cret-value rejected"
            )

    with pytest.raises(llmroute.AuthenticationError, match=r"no Entra ID token.*az login") as info:
        await azure_identity(Unavailable())()
    assert info.value.kind == "missing" and "s3cret-value" not in str(info.value)


def _fake_google(
    monkeypatch: pytest.MonkeyPatch, project: str | None, *, found: bool = True, refreshes: bool = True
) -> dict[str, Any]:
    """A stand-in for google-auth: ``found=False`` has no ADC; ``refreshes=False`` fails to refresh
    with a message that quotes a secret (as the library's may quote the token endpoint)."""
    state: dict[str, Any] = {"refreshes": 0}

    class Credentials:
        token: str | None = None

        @property
        def valid(self) -> bool:
            return self.token is not None

        def refresh(self, request: object) -> None:
            if not refreshes:
                raise _RefreshError("invalid_grant: refresh token 1//secret-refresh is revoked")
            state["refreshes"] += 1
            self.token = f"ya29.token-{state['refreshes']}"

    def default(scopes: list[str]) -> tuple[Credentials, str | None]:
        state["scopes"] = scopes
        if not found:
            raise _DefaultCredentialsError("Your default credentials were not found.")
        return Credentials(), project

    google_pkg = types.ModuleType("google")
    auth = types.ModuleType("google.auth")
    auth.default = default  # type: ignore[attr-defined]
    transport = types.ModuleType("google.auth.transport")
    requests = types.ModuleType("google.auth.transport.requests")
    requests.Request = object  # type: ignore[attr-defined]
    exceptions = types.ModuleType("google.auth.exceptions")
    exceptions.GoogleAuthError = _GoogleAuthError  # type: ignore[attr-defined]
    for name, module in [
        ("google", google_pkg),
        ("google.auth", auth),
        ("google.auth.exceptions", exceptions),
        ("google.auth.transport", transport),
        ("google.auth.transport.requests", requests),
    ]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr("llmroute.providers.vertex.has_google_auth", lambda: True)
    return state


@pytest.mark.anyio
async def test_vertex_uses_application_default_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _fake_google(monkeypatch, "adc-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    model = vertex.configure().gemini("gemini-2.5-pro")
    first = await _prepare(model)
    second = await _prepare(model)
    assert "/projects/adc-project/locations/us-central1/" in first.url
    assert first.headers["authorization"] == second.headers["authorization"] == "Bearer ya29.token-1"
    assert state["refreshes"] == 1 and state["scopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")  # the variable wins over ADC's project
    assert "/projects/env-project/" in vertex.configure().base_url
    assert "/projects/arg/" in vertex.configure(project="arg").base_url


def test_vertex_with_google_auth_but_no_adc_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_google(monkeypatch, None, found=False)
    with pytest.raises(llmroute.AuthenticationError, match="no Application Default Credentials") as info:
        vertex.configure(location="global")
    assert info.value.kind == "missing" and "gcloud auth application-default login" in str(info.value)


@pytest.mark.anyio
async def test_an_adc_refresh_failure_is_an_expired_login_without_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_google(monkeypatch, "p", refreshes=False)
    model = vertex.configure(location="global").gemini("gemini-2.5-pro")
    with pytest.raises(llmroute.AuthenticationError, match="could not be refreshed") as info:
        await _prepare(model)
    assert info.value.kind == "expired" and "secret-refresh" not in str(info.value)


def test_vertex_without_adc_names_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("llmroute.providers.vertex.has_google_auth", lambda: False)
    with pytest.raises(llmroute.AuthenticationError, match=r"access_token=.*llmroute\[vertex\]"):
        vertex.configure(project="p", location="global")
