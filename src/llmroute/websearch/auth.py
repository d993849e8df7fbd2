"""OAuth logins for grounded search, on the core's HTTP client (no second one).

- **Gemini Code Assist** (``cloudcode-pa`` ``v1internal``): ``GoogleToken`` hands out the access
  token of an opencode ``oauth`` login, refreshed at Google's token endpoint shortly before it
  expires (when a refresh token and an OAuth client are configured); ``CodeAssistProjects`` finds
  the Code Assist project with ``v1internal:loadCodeAssist`` (onboarding a user who has no tier
  yet with ``v1internal:onboardUser``), cached per token.
- **ChatGPT Codex backend**: ``chatgpt_account_id`` reads the account id the backend wants in the
  ``chatgpt-account-id`` header from the access token's claims.

Failures are ``AuthenticationError`` (or the core's typed HTTP errors); no token ever appears in a
message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections.abc import Callable
from typing import Any, cast

import anyio
import httpx
import msgspec

from ..route.classify import from_response
from ..route.redact import Secret
from ..schema.errors import AuthenticationError, LLMError, TimeoutError, TransportError
from .config import ConfigError, OAuthLogin

__all__ = [
    "GOOGLE_TOKEN_URL",
    "CodeAssistProjects",
    "GoogleToken",
    "chatgpt_account_id",
]

GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"
REFRESH_MARGIN = 60.0  # seconds before expiry at which a token is refreshed
_TIMEOUT = httpx.Timeout(30.0)


class GoogleToken:
    """The access token of a Google OAuth login, refreshed ``REFRESH_MARGIN`` seconds before
    ``expires`` when ``refresh`` and ``client_id`` are known; otherwise the stored token is used as
    is (Google answers 401 once it has expired, which the search reports as an auth error)."""

    __slots__ = (
        "_access",
        "_expires",
        "_http",
        "_lock",
        "_refresh",
        "client_id",
        "client_secret",
        "clock",
        "token_url",
    )

    def __init__(
        self,
        login: OAuthLogin,
        http: Callable[[], httpx.AsyncClient],
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_url: str = GOOGLE_TOKEN_URL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._access = login.access
        self._refresh = login.refresh
        self._expires = login.expires / 1000.0 if login.expires is not None else None
        self._http = http
        self._lock = anyio.Lock()
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_url = token_url
        self.clock = clock

    @property
    def can_refresh(self) -> bool:
        return self._refresh is not None and bool(self.client_id)

    def expire(self) -> None:
        """Treat the token as expired: the next call refreshes it (after a 401 from the service)."""
        self._expires = 0.0

    def _fresh(self) -> bool:
        return self._expires is None or self._expires - self.clock() > REFRESH_MARGIN

    async def __call__(self) -> str:
        async with self._lock:
            if not self._fresh() and self._refresh is not None and self.client_id:
                await self._refresh_now(self._refresh)
            return self._access.reveal()

    async def _refresh_now(self, refresh: Secret) -> None:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": refresh.reveal(),
            "client_id": self.client_id or "",
        }
        if self.client_secret:
            form["client_secret"] = self.client_secret
        secrets = tuple(v for v in (refresh.reveal(), self.client_secret, self._access.reveal()) if v)
        try:
            response = await self._http().post(self.token_url, data=form, timeout=_TIMEOUT)
        except httpx.HTTPError as exc:
            raise TransportError(
                f"google oauth: token refresh failed ({type(exc).__name__})", provider="google"
            ) from None
        if response.status_code >= 300:
            error = from_response(
                response.status_code, response.headers, response.content[:4096], method="POST",
                url=self.token_url, provider="google oauth", secrets=secrets,
            )  # fmt: skip
            if isinstance(error, AuthenticationError) or response.status_code == 400:
                raise AuthenticationError(
                    f"google oauth: the login could not be refreshed (HTTP {response.status_code}); sign in again",
                    kind="expired",
                    provider="google",
                    http=error.http,
                )
            raise error
        data = _json(response.content)
        token = data.get("access_token")
        if not isinstance(token, str) or not token:
            raise AuthenticationError(
                "google oauth: the token endpoint returned no access_token", kind="expired", provider="google"
            )
        self._access = Secret(token)
        lifetime = data.get("expires_in")
        self._expires = self.clock() + float(lifetime) if isinstance(lifetime, int | float) else None


class CodeAssistProjects:
    """The Code Assist project of a login, found once per access token (cached by its hash).

    ``v1internal:loadCodeAssist`` names the project the service manages for the user (a string or
    ``{"id": ...}``); a user with a tier but no managed project uses the configured one; a user
    with no tier yet is onboarded (``v1internal:onboardUser`` on the default allowed tier, its
    long-running operation polled every ``poll_interval`` seconds for at most ``onboard_timeout``).
    Failing all that, a ``ConfigError`` names the reasons Google gives."""

    __slots__ = ("_cache", "_http", "onboard_timeout", "poll_interval")

    def __init__(
        self,
        http: Callable[[], httpx.AsyncClient],
        *,
        poll_interval: float = 5.0,
        onboard_timeout: float = 120.0,
    ) -> None:
        self._http = http
        self._cache: dict[str, str] = {}
        self.poll_interval = poll_interval
        self.onboard_timeout = onboard_timeout

    async def project(self, base_url: str, token: str, configured: str | None = None) -> str:
        key = hashlib.sha256(f"{base_url}\0{token}".encode()).hexdigest()
        found = self._cache.get(key)
        if found is None:
            found = await self._resolve(_CodeAssistCalls(self._http, base_url, token), configured)
            self._cache[key] = found
        return found

    async def _resolve(self, calls: _CodeAssistCalls, configured: str | None) -> str:
        metadata = dict(_METADATA, duetProject=configured) if configured else dict(_METADATA)
        body: dict[str, Any] = {"metadata": metadata}
        if configured:
            body["cloudaicompanionProject"] = configured
        loaded = await calls.load(body)
        managed = _project_id(loaded.get("cloudaicompanionProject"))
        if managed:
            return managed
        if loaded.get("currentTier"):
            if configured:
                return configured
            raise _no_project(loaded)
        onboarded = await self._onboard(calls, _default_tier(loaded), configured)
        project = _project_id(_dict(onboarded.get("response")).get("cloudaicompanionProject"))
        if project:
            return project
        if configured:
            return configured
        raise _no_project(loaded)

    async def _onboard(self, calls: _CodeAssistCalls, tier: str, configured: str | None) -> dict[str, Any]:
        # the free tier runs in a project Google manages: naming one fails with Precondition Failed
        body: dict[str, Any] = {"tierId": tier, "metadata": dict(_METADATA)}
        if tier != _FREE_TIER and configured:
            body["cloudaicompanionProject"] = configured
            body["metadata"]["duetProject"] = configured
        operation = await calls.post("onboardUser", body)
        waited = 0.0
        while operation.get("done") is not True:
            if waited >= self.onboard_timeout:
                raise TimeoutError(
                    f"google code assist: onboarding did not finish within {self.onboard_timeout:g} s; try again",
                    deadline="total",
                    provider="google",
                )
            await anyio.sleep(self.poll_interval)
            waited += self.poll_interval
            name = operation.get("name")
            if isinstance(name, str) and name:
                operation = await calls.get(name)
            else:  # no operation to poll: asking again reports the same onboarding
                operation = await calls.post("onboardUser", body)
        if isinstance(operation.get("error"), dict):
            message = _dict(operation["error"]).get("message")
            raise ConfigError(f"google code assist: onboarding failed: {message or 'no reason given'}")
        return operation


_METADATA: dict[str, str] = {
    "ideType": "IDE_UNSPECIFIED",
    "platform": "PLATFORM_UNSPECIFIED",
    "pluginType": "GEMINI",
}
_FREE_TIER = "free-tier"
_LEGACY_TIER = "legacy-tier"


class _CodeAssistCalls:
    """The ``v1internal`` calls of project discovery, with the core's error mapping."""

    __slots__ = ("_headers", "_http", "base_url", "token")

    def __init__(self, http: Callable[[], httpx.AsyncClient], base_url: str, token: str) -> None:
        self._http = http
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}

    async def load(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.post("loadCodeAssist", body)
        except LLMError as error:
            # a VPC Service Controls perimeter refuses the call for standard-tier users
            if error.http is not None and "SECURITY_POLICY_VIOLATED" in (error.http.body or ""):
                return {"currentTier": {"id": "standard-tier"}}
            raise

    async def post(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/v1internal:{method}"
        return await self._call("POST", url, method, msgspec.json.encode(body))

    async def get(self, operation: str) -> dict[str, Any]:
        return await self._call("GET", f"{self.base_url}/v1internal/{operation}", "getOperation", None)

    async def _call(self, verb: str, url: str, method: str, content: bytes | None) -> dict[str, Any]:
        try:
            response = await self._http().request(
                verb, url, content=content, headers=self._headers, timeout=_TIMEOUT
            )
        except httpx.HTTPError as exc:
            raise TransportError(
                f"google code assist: {method} failed ({type(exc).__name__})", provider="google"
            ) from None
        if response.status_code >= 300:
            raise from_response(
                response.status_code, response.headers, response.content[:4096], method=verb, url=url,
                provider="google code assist", secrets=(self.token,),
            )  # fmt: skip
        return _json(response.content)


def _dict(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _project_id(value: Any) -> str | None:
    """A project named as a string or as ``{"id": ...}``."""
    if isinstance(value, dict):
        value = _dict(value).get("id")
    return value if isinstance(value, str) and value else None


def _default_tier(loaded: dict[str, Any]) -> str:
    for tier in cast("list[Any]", loaded.get("allowedTiers") or []):
        entry = _dict(tier)
        if entry.get("isDefault") and isinstance(entry.get("id"), str):
            return cast(str, entry["id"])
    return _LEGACY_TIER


def _no_project(loaded: dict[str, Any]) -> ConfigError:
    reasons = [
        str(_dict(t).get("reasonMessage"))
        for t in cast("list[Any]", loaded.get("ineligibleTiers") or [])
        if _dict(t).get("reasonMessage")
    ]
    why = f": {'; '.join(reasons)}" if reasons else ""
    return ConfigError(
        "google code assist: no project for this login" + why
        + "; set provider.google.options.projectId or GOOGLE_CLOUD_PROJECT"
    )  # fmt: skip


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return {}
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


def chatgpt_account_id(access_token: str) -> str | None:
    """The ChatGPT account id in an OpenAI access token's claims (the JWT payload's
    ``https://api.openai.com/auth.chatgpt_account_id``), or ``None`` when it has none."""
    parts = access_token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = msgspec.json.decode(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return None
    if not isinstance(claims, dict):
        return None
    auth = cast("dict[str, Any]", claims).get("https://api.openai.com/auth")
    account = cast("dict[str, Any]", auth).get("chatgpt_account_id") if isinstance(auth, dict) else None
    if isinstance(account, str) and account:
        return account
    direct = cast("dict[str, Any]", claims).get("chatgpt_account_id")
    return direct if isinstance(direct, str) and direct else None
