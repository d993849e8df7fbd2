"""The search call for each provider, built on the core's facades and routes.

Two-stage search: the call carries only the provider's search tool (never the caller's function
tools), the short ``SEARCH_SYSTEM`` instruction and the query; Gemini thinks at a low budget
without returning thoughts. Every call is non-streamed except the ChatGPT Codex backend, which
only streams.

| provider | login | call |
|---|---|---|
| ``google`` | API key | ``models/{model}:generateContent`` + ``googleSearch`` (``x-goog-api-key``) |
| ``google`` | OAuth | Code Assist ``v1internal:generateContent``, ``{model, project, request}``; project from ``loadCodeAssist`` (or ``projectId``; ``onboardUser`` for a new user) |
| ``openai`` | API key | ``/v1/responses`` + ``web_search`` |
| ``openai`` | OAuth | ChatGPT Codex backend ``/responses`` (``chatgpt-account-id``, streaming, ``store: false``) |
| ``openrouter`` | API key | ``/api/v1/responses`` + ``plugins: [{"id": "web", "max_results"}]`` |
| ``anthropic`` | API key | Messages + the ``web_search`` server tool |

Google options read from the config (``provider.google.options``): ``projectId``,
``codeAssistEndpoint``, ``clientId`` / ``clientSecret`` / ``tokenURL`` (refreshing an OAuth login),
``antigravity: true`` (the Antigravity variant of Code Assist: ``userAgent`` / ``requestId`` and
``request.sessionId`` in the envelope; point ``codeAssistEndpoint`` at its endpoint). OpenAI:
``codexBaseURL``, ``originator``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from ..build import request as build_request
from ..hosted import web_search
from ..protocols.gemini_code_assist import CODE_ASSIST_BASE_URL
from ..providers import anthropic, google, openai, openrouter
from ..schema.errors import AuthenticationError
from ..schema.options import GenerationOptions, HttpOverlay
from ..schema.request import LLMRequest
from .auth import GOOGLE_TOKEN_URL, CodeAssistProjects, GoogleToken, chatgpt_account_id
from .config import ApiKeyLogin, OAuthLogin, ProviderSettings
from .result import ErrorType

__all__ = ["CODEX_BASE_URL", "FAILED", "LABELS", "MISSING", "SEARCH_SYSTEM", "Calls", "failure_type"]

SEARCH_SYSTEM = (
    "You are a web search assistant. Search the web for the user's query and answer it concisely and "
    "factually from what you find, citing the sources you used. Do not ask follow-up questions."
)
CODEX_BASE_URL = "https://chatgpt.com/backend-api/codex"
MAX_TOKENS = 8192  # room for a grounded answer after low-budget thinking

MISSING: dict[str, tuple[ErrorType, str]] = {
    "google": (
        "MISSING_GEMINI_API_KEY",
        "Gemini web search has no credentials: set GEMINI_API_KEY (or GOOGLE_API_KEY), add "
        "provider.google.options.apiKey to the config, or sign in with Google (auth.json).",
    ),
    "openai": (
        "MISSING_OPENAI_AUTH",
        "OpenAI web search has no credentials: set OPENAI_API_KEY, add provider.openai.options.apiKey "
        "to the config, or sign in with ChatGPT (auth.json).",
    ),
    "openrouter": (
        "MISSING_OPENROUTER_API_KEY",
        "OpenRouter web search has no credentials: set OPENROUTER_API_KEY or add "
        "provider.openrouter.options.apiKey to the config.",
    ),
    "anthropic": (
        "MISSING_ANTHROPIC_API_KEY",
        "Anthropic web search has no credentials: set ANTHROPIC_API_KEY or add "
        "provider.anthropic.options.apiKey to the config.",
    ),
}
FAILED: dict[str, ErrorType] = {
    "google": "GEMINI_WEB_SEARCH_FAILED",
    "openai": "OPENAI_WEB_SEARCH_FAILED",
    "openrouter": "OPENROUTER_WEB_SEARCH_FAILED",
    "anthropic": "ANTHROPIC_WEB_SEARCH_FAILED",
}


LABELS = {"google": "Gemini", "openai": "OpenAI", "openrouter": "OpenRouter", "anthropic": "Anthropic"}


def failure_type(s: ProviderSettings) -> ErrorType:
    """The error code a failed call reports (ChatGPT logins have their own)."""
    if s.id == "openai" and isinstance(s.login, OAuthLogin):
        return "OPENAI_OAUTH_WEB_SEARCH_FAILED"
    return FAILED[s.id]


class Calls:
    """Builds each provider's search request; holds what outlives one call (refreshed Google tokens, Code Assist
    projects cached per token)."""

    __slots__ = ("_http", "_tokens", "env", "max_results", "projects")

    def __init__(
        self, http: Callable[[], httpx.AsyncClient], env: Mapping[str, str], max_results: int = 5
    ) -> None:
        self._http = http
        self.env = env
        self.max_results = max_results
        self.projects = CodeAssistProjects(http)
        self._tokens: dict[str, GoogleToken] = {}

    async def build(self, s: ProviderSettings, query: str) -> LLMRequest:
        login = s.login
        if s.id == "google":
            if isinstance(login, OAuthLogin):
                return await self._code_assist(s, login, query)
            key = _key(login)
            model = google.configure(api_key=key, base_url=s.base_url).gemini(s.model, **_thinking(s.model))
            return _request(model, query, web_search())
        if s.id == "openai":
            if isinstance(login, OAuthLogin):
                return self._codex(s, login, query)
            model = openai.configure(api_key=_key(login), base_url=s.base_url).responses(
                s.model, include=["web_search_call.action.sources"]
            )
            return _request(model, query, web_search())
        if s.id == "openrouter":
            plugin = {"id": "web", "max_results": self.max_results}
            model = openrouter.configure(api_key=_key(login), base_url=s.base_url).responses(
                s.model, plugins=[plugin]
            )
            return _request(model, query)
        model = anthropic.configure(api_key=_key(login), base_url=s.base_url).messages(s.model)
        tool = web_search(max_uses=self.max_results)
        return _request(model, query, tool)

    def reauthorize(self, provider: str) -> bool:
        """After the service refused a login: expire its token so the next call refreshes it.
        ``False`` when there is nothing to refresh (API keys, logins without a refresh token)."""
        token = self._tokens.get(provider)
        if token is None or not token.can_refresh:
            return False
        token.expire()
        return True

    def forget(self, provider: str) -> None:
        """Drop what was kept for the provider's previous login (its refreshing token)."""
        self._tokens.pop(provider, None)

    async def _code_assist(self, s: ProviderSettings, login: OAuthLogin, query: str) -> LLMRequest:
        o = s.options
        token = self._tokens.get(s.id)
        if token is None:
            token = self._tokens[s.id] = GoogleToken(
                login,
                self._http,
                client_id=_opt(o, "clientId"),
                client_secret=_opt(o, "clientSecret"),
                token_url=_opt(o, "tokenURL") or GOOGLE_TOKEN_URL,
            )
        base = _opt(o, "codeAssistEndpoint") or CODE_ASSIST_BASE_URL
        configured = _opt(o, "projectId") or self.env.get("GOOGLE_CLOUD_PROJECT") or None
        project = await self.projects.project(base, await token(), configured)
        options = _thinking(s.model)
        overlay = None
        if o.get("antigravity") is True:
            stamp = f"{int(time.time() * 1000):x}"
            overlay = HttpOverlay(
                body={"userAgent": "antigravity", "requestId": f"search-{stamp}-{secrets.token_hex(4)}"}
            )
            options["sessionId"] = f"search-{stamp}-{secrets.token_hex(4)}"
        model = google.code_assist(access_token=token, project=project, base_url=base).gemini(
            s.model, **options
        )
        return _request(model, query, web_search(), http=overlay)

    def _codex(self, s: ProviderSettings, login: OAuthLogin, query: str) -> LLMRequest:
        access = login.access.reveal()
        account = login.account_id or chatgpt_account_id(access)
        if not account:
            raise AuthenticationError(
                "the ChatGPT login has no account id (chatgpt_account_id claim); sign in with ChatGPT again",
                kind="invalid",
                provider="openai",
            )
        headers = {"chatgpt-account-id": account, "originator": _opt(s.options, "originator") or "llmroute"}
        base = _opt(s.options, "codexBaseURL") or CODEX_BASE_URL
        model = openai.configure(api_key=login.access, base_url=base, headers=headers).responses(
            s.model, store=False
        )
        # the Codex backend only streams and sets its own output limit
        return build_request(
            model=model,
            system=SEARCH_SYSTEM,
            prompt=query,
            tools=[web_search()],
            generation=GenerationOptions(stream=True),
        )


def _request(model: Any, query: str, *tools: Any, http: HttpOverlay | None = None) -> LLMRequest:
    return build_request(
        model=model,
        system=SEARCH_SYSTEM,
        prompt=query,
        tools=tools,
        generation=GenerationOptions(stream=False, max_tokens=MAX_TOKENS),
        http=http,
    )


def _thinking(model_id: str) -> dict[str, Any]:
    """Low thinking, no thoughts returned (Gemini 3 takes a level, 2.5 a budget)."""
    if model_id.startswith("gemini-3"):
        return {"include_thoughts": False, "thinking_level": "low"}
    return {"include_thoughts": False, "thinking_budget": 1024}


def _key(login: Any) -> Any:
    assert isinstance(login, ApiKeyLogin)  # the search skips a provider without a login
    return login.key


def _opt(options: Mapping[str, Any], key: str) -> str | None:
    value = options.get(key)
    return value if isinstance(value, str) and value else None
