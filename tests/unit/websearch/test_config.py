"""``websearch.config`` (opencode config / auth.json, credential precedence, models) and
``websearch.auth`` (Google token refresh, loadCodeAssist discovery, ChatGPT account id)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmroute.route.redact import Secret
from llmroute.schema.errors import AuthenticationError, InvalidRequestError, LLMError, TimeoutError
from llmroute.websearch.auth import CodeAssistProjects, GoogleToken, chatgpt_account_id
from llmroute.websearch.config import (
    ApiKeyLogin,
    ConfigError,
    OAuthLogin,
    load_auth,
    load_config,
    parse_jsonc,
    settings_for,
)

pytestmark = pytest.mark.anyio

JSONC = """{
  // opencode.json
  "$schema": "https://opencode.ai/config.json", /* a URL in a string is not a comment */
  "provider": {
    "google": {"options": {"apiKey": "cfg-google", "websearch": {"model": "legacy-model"},},},
    "openai": {"options": {"websearch_grounded": {"model": "gpt-x"}, "websearch": {"model": "old"}}},
    "openrouter": {"options": {"note": "say \\"hi\\" // not a comment", }},
  },
}"""


def test_jsonc_comments_and_trailing_commas() -> None:
    data = parse_jsonc(JSONC)
    assert data["$schema"] == "https://opencode.ai/config.json"
    assert data["provider"]["openrouter"]["options"]["note"] == 'say "hi" // not a comment'
    with pytest.raises(ConfigError, match="not valid JSON"):
        parse_jsonc('{"a": }')
    assert issubclass(ConfigError, InvalidRequestError)


def test_config_and_auth_load_from_paths(tmp_path: Path) -> None:
    (tmp_path / "opencode.jsonc").write_text(JSONC)
    (tmp_path / "auth.json").write_text(
        json.dumps(
            {
                "google": {
                    "type": "oauth",
                    "access": "ya29.acc",
                    "refresh": "1//ref",
                    "expires": 1700000000000,
                },
                "openrouter": {"type": "api", "key": "sk-or-auth"},
                "github": {"type": "wellknown", "token": "x"},
                "broken": "nope",
            }
        )
    )
    config = load_config(tmp_path / "opencode.jsonc")
    auth = load_auth(str(tmp_path / "auth.json"))
    assert set(auth) == {"google", "openrouter"}
    google = auth["google"]
    assert (
        isinstance(google, OAuthLogin)
        and google.access == Secret("ya29.acc")
        and google.expires == 1700000000000
    )
    assert "ya29" not in repr(google)
    assert settings_for("google", config, auth, {}).model == "legacy-model"
    assert settings_for("openai", config, auth, {}).model == "gpt-x"
    assert settings_for("anthropic", config, auth, {}).model == "claude-sonnet-4-5"
    with pytest.raises(ConfigError, match=r"auth .*missing\.json: cannot be read"):
        load_auth(tmp_path / "missing.json")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(ConfigError, match="top level"):
        load_config(tmp_path / "list.json")


def cfg(provider: str) -> dict[str, Any]:
    return {"provider": {provider: {"options": {"apiKey": f"cfg-{provider}"}}}}


def source(provider: str, config: dict[str, Any], auth: dict[str, Any], env: dict[str, str]) -> str | None:
    login = settings_for(provider, config, load_auth(auth), env).login
    if login is None:
        return None
    if isinstance(login, OAuthLogin):
        return "oauth"
    return f"{login.source}:{login.key.reveal()}"


API = {"type": "api", "key": "rec"}
OAUTH = {"type": "oauth", "access": "tok"}


@pytest.mark.parametrize(
    ("provider", "config", "auth", "env", "want"),
    [
        # google: config apiKey -> auth record (api or oauth) -> GEMINI_API_KEY -> GOOGLE_API_KEY
        ("google", cfg("google"), {"google": OAUTH}, {"GEMINI_API_KEY": "g"}, "config:cfg-google"),
        ("google", {}, {"google": OAUTH}, {"GEMINI_API_KEY": "g"}, "oauth"),
        ("google", {}, {"google": API}, {"GEMINI_API_KEY": "g"}, "auth:rec"),
        ("google", {}, {}, {"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "h"}, "GEMINI_API_KEY:g"),
        ("google", {}, {}, {"GEMINI_API_KEY": " ", "GOOGLE_API_KEY": "h"}, "GOOGLE_API_KEY:h"),
        ("google", {}, {}, {}, None),
        # openai: oauth record -> config apiKey -> OPENAI_API_KEY (an api record is not read)
        ("openai", cfg("openai"), {"openai": OAUTH}, {"OPENAI_API_KEY": "o"}, "oauth"),
        ("openai", cfg("openai"), {"openai": API}, {"OPENAI_API_KEY": "o"}, "config:cfg-openai"),
        ("openai", {}, {"openai": API}, {"OPENAI_API_KEY": "o"}, "OPENAI_API_KEY:o"),
        # openrouter / anthropic: config apiKey -> api record -> env
        (
            "openrouter",
            cfg("openrouter"),
            {"openrouter": API},
            {"OPENROUTER_API_KEY": "r"},
            "config:cfg-openrouter",
        ),
        ("openrouter", {}, {"openrouter": API}, {"OPENROUTER_API_KEY": "r"}, "auth:rec"),
        ("openrouter", {}, {"openrouter": OAUTH}, {"OPENROUTER_API_KEY": "r"}, "OPENROUTER_API_KEY:r"),
        (
            "anthropic",
            cfg("anthropic"),
            {"anthropic": API},
            {"ANTHROPIC_API_KEY": "a"},
            "config:cfg-anthropic",
        ),
        ("anthropic", {}, {"anthropic": API}, {"ANTHROPIC_API_KEY": "a"}, "auth:rec"),
        ("anthropic", {}, {}, {"ANTHROPIC_API_KEY": "a"}, "ANTHROPIC_API_KEY:a"),
    ],
)
def test_credential_precedence_follows_the_table(
    provider: str, config: dict[str, Any], auth: dict[str, Any], env: dict[str, str], want: str | None
) -> None:
    assert source(provider, config, auth, env) == want


def test_defaults_and_unknown_provider() -> None:
    assert settings_for("google", {}, {}, {}).model == "gemini-2.5-flash"
    assert settings_for("openai", {}, load_auth({"openai": OAUTH}), {}).model == "gpt-5"
    assert settings_for("openai", {}, {}, {}).model == "gpt-5-mini"
    with pytest.raises(ConfigError, match="unknown web search provider 'bing'"):
        settings_for("bing", {}, {}, {})
    assert isinstance(settings_for("openai", cfg("openai"), {}, {}).login, ApiKeyLogin)


# -- auth ----------------------------------------------------------------------------------------------


def mock(handler: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_google_token_is_refreshed_before_expiry_and_only_then() -> None:
    seen: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(dict(x.split("=", 1) for x in request.content.decode().split("&")))
        return httpx.Response(200, json={"access_token": "ya29.new", "expires_in": 3600})

    now = [1_000.0]
    login = OAuthLogin(Secret("ya29.old"), Secret("1//refresh"), expires=(1_000 + 30) * 1000)
    async with mock(handler) as http:
        token = GoogleToken(
            login, lambda: http, client_id="cid", client_secret="csecret", clock=lambda: now[0]
        )
        assert await token() == "ya29.new"  # 30 s left < 60 s margin: refreshed
        assert seen == [
            {
                "grant_type": "refresh_token",
                "refresh_token": "1%2F%2Frefresh",
                "client_id": "cid",
                "client_secret": "csecret",
            }
        ]
        now[0] += 3000
        assert await token() == "ya29.new"  # still fresh: no second refresh
        assert len(seen) == 1
        now[0] += 600
        await token()
        assert len(seen) == 2
        no_client = GoogleToken(login, lambda: http, clock=lambda: now[0])
        assert await no_client() == "ya29.old"  # nothing to refresh with: the stored token


async def test_a_refused_refresh_is_an_expired_login_without_secrets() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": "invalid_grant", "error_description": "Bad 1//refresh"})

    login = OAuthLogin(Secret("ya29.old"), Secret("1//refresh"), expires=0)
    async with mock(handler) as http:
        with pytest.raises(AuthenticationError, match="sign in again") as info:
            await GoogleToken(login, lambda: http, client_id="cid")()
    assert info.value.kind == "expired"
    assert "1//refresh" not in str(info.value) and "1//refresh" not in repr(info.value.http)


async def test_load_code_assist_discovers_and_caches_the_project_per_token() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1internal:loadCodeAssist"
        bodies.append(json.loads(request.content))
        token = request.headers["authorization"]
        if token == "Bearer t3":  # a tier, but no project anywhere
            return httpx.Response(
                200,
                json={
                    "currentTier": {"id": "standard-tier"},
                    "ineligibleTiers": [{"reasonMessage": "Account not eligible"}],
                },
            )
        project = {"id": "managed-2"} if token == "Bearer t2" else "managed-1"
        return httpx.Response(
            200, json={"currentTier": {"id": "free-tier"}, "cloudaicompanionProject": project}
        )

    async with mock(handler) as http:
        projects = CodeAssistProjects(lambda: http)
        assert await projects.project("https://ca.test", "t1") == "managed-1"
        assert await projects.project("https://ca.test", "t1") == "managed-1"
        assert await projects.project("https://ca.test", "t2", "mine") == "managed-2"
        assert len(bodies) == 2
        assert (
            bodies[1]["cloudaicompanionProject"] == "mine" and bodies[1]["metadata"]["duetProject"] == "mine"
        )
        with pytest.raises(ConfigError, match=r"Account not eligible.*GOOGLE_CLOUD_PROJECT"):
            await projects.project("https://ca.test", "t3")


def code_assist(routes: dict[str, list[Any]], seen: list[tuple[str, str, Any]]) -> httpx.AsyncClient:
    """A Code Assist service answering each path from its own script, in order."""

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        seen.append((request.method, path, json.loads(request.content) if request.content else None))
        reply = routes[path].pop(0)
        return reply if isinstance(reply, httpx.Response) else httpx.Response(200, json=reply)

    return mock(handler)


async def test_a_user_without_a_tier_is_onboarded_on_the_free_tier_without_a_project() -> None:
    seen: list[tuple[str, str, Any]] = []
    routes: dict[str, list[Any]] = {
        "/v1internal:loadCodeAssist": [
            {"allowedTiers": [{"id": "legacy-tier"}, {"id": "free-tier", "isDefault": True}]}
        ],
        "/v1internal:onboardUser": [{"name": "operations/op-1", "done": False}],
        "/v1internal/operations/op-1": [
            {"name": "operations/op-1", "done": False},
            {
                "name": "operations/op-1",
                "done": True,
                "response": {"cloudaicompanionProject": {"id": "fresh-9"}},
            },
        ],
    }
    async with code_assist(routes, seen) as http:
        projects = CodeAssistProjects(lambda: http, poll_interval=0)
        assert await projects.project("https://ca.test", "t1", "mine") == "fresh-9"
        assert await projects.project("https://ca.test", "t1", "mine") == "fresh-9"  # cached
    assert [(m, p) for m, p, _ in seen] == [
        ("POST", "/v1internal:loadCodeAssist"),
        ("POST", "/v1internal:onboardUser"),
        ("GET", "/v1internal/operations/op-1"),
        ("GET", "/v1internal/operations/op-1"),
    ]
    onboard = seen[1][2]
    # naming a project on the free tier fails with Precondition Failed: none is sent
    assert onboard == {
        "tierId": "free-tier",
        "metadata": {
            "ideType": "IDE_UNSPECIFIED",
            "platform": "PLATFORM_UNSPECIFIED",
            "pluginType": "GEMINI",
        },
    }


async def test_onboarding_a_paid_tier_names_the_configured_project_and_may_answer_at_once() -> None:
    seen: list[tuple[str, str, Any]] = []
    routes: dict[str, list[Any]] = {
        "/v1internal:loadCodeAssist": [{}],  # no allowed tiers: the legacy tier
        "/v1internal:onboardUser": [{"done": True, "response": {}}],
    }
    async with code_assist(routes, seen) as http:
        assert await CodeAssistProjects(lambda: http).project("https://ca.test", "t1", "mine") == "mine"
    assert seen[1][2]["tierId"] == "legacy-tier"
    assert seen[1][2]["cloudaicompanionProject"] == "mine" and seen[1][2]["metadata"]["duetProject"] == "mine"


async def test_onboarding_that_fails_or_never_finishes_is_a_typed_error() -> None:
    seen: list[tuple[str, str, Any]] = []
    failed = {"done": True, "error": {"code": 9, "message": "Precondition Failed"}}
    routes: dict[str, list[Any]] = {
        "/v1internal:loadCodeAssist": [{}, {}],
        "/v1internal:onboardUser": [failed, {"done": False}, {"done": False}, {"done": False}],
    }
    async with code_assist(routes, seen) as http:
        projects = CodeAssistProjects(lambda: http, poll_interval=0.01, onboard_timeout=0.02)
        with pytest.raises(ConfigError, match="onboarding failed: Precondition Failed"):
            await projects.project("https://ca.test", "t1")
        with pytest.raises(TimeoutError, match=r"onboarding did not finish within 0\.02 s") as info:
            await projects.project("https://ca.test", "t2")
    assert isinstance(info.value, LLMError) and "t2" not in str(info.value)
    # without an operation name, asking again is how the service reports progress
    assert [p for _, p, _ in seen[3:]] == ["/v1internal:onboardUser"] * 3


async def test_a_vpc_service_controls_refusal_reads_as_a_standard_tier() -> None:
    seen: list[tuple[str, str, Any]] = []
    refusal = {
        "error": {"code": 403, "message": "denied", "details": [{"reason": "SECURITY_POLICY_VIOLATED"}]}
    }
    routes: dict[str, list[Any]] = {
        "/v1internal:loadCodeAssist": [httpx.Response(403, json=refusal), httpx.Response(403, json=refusal)]
    }
    async with code_assist(routes, seen) as http:
        projects = CodeAssistProjects(lambda: http)
        assert await projects.project("https://ca.test", "t1", "corp-1") == "corp-1"
        with pytest.raises(ConfigError, match="no project for this login"):
            await projects.project("https://ca.test", "t2")


def jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def test_chatgpt_account_id_comes_from_the_token_claims() -> None:
    assert (
        chatgpt_account_id(jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acc-1"}})) == "acc-1"
    )
    assert chatgpt_account_id(jwt({"chatgpt_account_id": "acc-2"})) == "acc-2"
    assert chatgpt_account_id(jwt({"sub": "x"})) is None
    assert chatgpt_account_id("not-a-jwt") is None
    assert chatgpt_account_id("a.!!!.c") is None


@pytest.mark.parametrize(
    ("config", "path", "what"),
    [
        ({"provider": 5}, "$.provider", "an object, got a number"),
        ({"provider": {"openrouter": "x"}}, "$.provider.openrouter", "an object, got a string"),
        ({"provider": {"openrouter": {"options": []}}}, "$.provider.openrouter.options", "got an array"),
        (
            {"provider": {"openrouter": {"options": {"apiKey": 5}}}},
            ".options.apiKey",
            "a string, got a number",
        ),
        ({"provider": {"openrouter": {"options": {"baseURL": True}}}}, ".options.baseURL", "got a boolean"),
        (
            {"provider": {"openrouter": {"options": {"websearch_grounded": {"model": 3}}}}},
            ".options.websearch_grounded.model",
            "a string",
        ),
        (
            {"provider": {"openrouter": {"options": {"baseURL": "ftp://host/v1"}}}},
            ".options.baseURL",
            "http(s)",
        ),
    ],
)
def test_wrong_typed_entries_are_config_errors_naming_the_path(
    config: dict[str, Any], path: str, what: str
) -> None:
    with pytest.raises(ConfigError) as err:
        settings_for("openrouter", config, {}, {})
    assert path in str(err.value) and what in str(err.value)


def test_an_ftp_base_url_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from llmroute import cli

    config = tmp_path / "opencode.json"
    config.write_text(
        json.dumps({"provider": {"openrouter": {"options": {"apiKey": "k", "baseURL": "ftp://h/v1"}}}})
    )
    (tmp_path / "auth.json").write_text("{}")
    argv = [
        "search",
        "q",
        "--provider",
        "openrouter",
        "--config",
        str(config),
        "--auth",
        str(tmp_path / "auth.json"),
    ]
    try:
        code = cli.main(argv)
    except SystemExit as exit:  # the CLI exits with its usage-error status
        code = exit.code
    assert code == 2
    assert "baseURL: expected an http(s) URL" in capsys.readouterr().err


def test_engine_without_a_model_is_refused() -> None:
    from llmroute.schema.errors import ConfigError as ServerConfigError
    from llmroute.websearch.server_tool import Engine

    with pytest.raises(ServerConfigError, match="model is None") as err:
        Engine("web", None, "the web")
    assert err.value.param == "model"
    with pytest.raises(ServerConfigError, match=r"Engine\.id"):
        Engine(5, object())  # type: ignore[arg-type]
