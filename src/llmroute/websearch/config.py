"""opencode's configuration and stored logins, read the way the grounded-search tool needs them.

``config`` is opencode's ``opencode.json`` (JSON or JSONC: comments and trailing commas), as a
mapping or a path; per provider it reads ``provider.<id>.options``: ``apiKey``, ``baseURL``, the
model under ``websearch_grounded.model`` (the legacy ``websearch.model`` when the new key is
absent), and for Google ``projectId`` and the OAuth ``clientId`` / ``clientSecret`` used to refresh
a login. ``auth`` is opencode's ``auth.json`` (mapping or path):
``{"google": {"type": "oauth", "access", "refresh", "expires"}, "openrouter": {"type": "api", "key"}}``.

Credentials, first found wins (``env`` replaces ``os.environ`` when given):

| provider | order |
|---|---|
| ``google`` | config ``apiKey`` -> auth record (``api`` key, or ``oauth`` token: Code Assist) -> ``GEMINI_API_KEY`` -> ``GOOGLE_API_KEY`` |
| ``openai`` | ``oauth`` record (ChatGPT Codex backend) -> config ``apiKey`` -> ``OPENAI_API_KEY`` |
| ``openrouter`` | config ``apiKey`` -> ``api`` record -> ``OPENROUTER_API_KEY`` |
| ``anthropic`` | config ``apiKey`` -> ``api`` record -> ``ANTHROPIC_API_KEY`` |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from ..route.redact import Secret
from ..schema.errors import InvalidRequestError

__all__ = [
    "DEFAULT_MODELS",
    "PROVIDERS",
    "ApiKeyLogin",
    "ConfigError",
    "OAuthLogin",
    "ProviderId",
    "ProviderSettings",
    "load_auth",
    "load_config",
    "parse_jsonc",
    "settings_for",
]

ProviderId = Literal["google", "openai", "openrouter", "anthropic"]
PROVIDERS: tuple[ProviderId, ...] = ("google", "openai", "openrouter", "anthropic")

DEFAULT_MODELS: dict[str, str] = {
    "google": "gemini-2.5-flash",
    "openai": "gpt-5-mini",
    "openai-oauth": "gpt-5",  # the ChatGPT Codex backend serves the full model family only
    "openrouter": "openai/gpt-5-mini",
    "anthropic": "claude-sonnet-4-5",
}

ENV: dict[str, tuple[str, ...]] = {
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
}


class ConfigError(InvalidRequestError):
    """The configuration or the stored logins cannot be read (the message says which and where)."""


class ApiKeyLogin(msgspec.Struct, frozen=True):
    """An API key and where it came from."""

    key: Secret
    """The key."""
    source: str
    """Where it came from: ``config``, ``auth``, or the environment variable's name."""


class OAuthLogin(msgspec.Struct, frozen=True):
    """An OAuth login from ``auth.json``."""

    access: Secret
    """The access token."""
    refresh: Secret | None = None
    """The refresh token."""
    expires: int | None = None
    """When ``access`` expires (ms since the epoch)."""
    account_id: str | None = None
    """For ChatGPT, the account id opencode stores beside the tokens."""
    source: str = "auth"
    """Where it came from."""


Login = ApiKeyLogin | OAuthLogin


class ProviderSettings(msgspec.Struct, frozen=True):
    """What the search needs for one provider."""

    id: str
    """The provider (``google``, ``openai``, ...)."""
    login: Login | None
    """Its login (``None``: not configured)."""
    model: str
    """The model that searches."""
    base_url: str | None = None
    """A base URL instead of the provider's."""
    options: dict[str, Any] = {}
    """The provider's raw options from the config (project id, OAuth client, ...)."""


# -- reading files ------------------------------------------------------------------------------------


def parse_jsonc(text: str, where: str = "config") -> Any:
    """JSON with ``//`` and ``/* */`` comments and trailing commas (opencode's JSONC)."""
    try:
        return msgspec.json.decode(_strip_jsonc(text))
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON/JSONC ({exc})") from None


def _strip_jsonc(text: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "}]":
            # a trailing comma before a closing bracket (whitespace and comments already skipped)
            k = len(out) - 1
            while k >= 0 and out[k].isspace():
                k -= 1
            if k >= 0 and out[k] == ",":
                del out[k]
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _load(source: Mapping[str, Any] | str | os.PathLike[str] | None, what: str) -> dict[str, Any]:
    if source is None:
        return {}
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"{what} must be a mapping or a path, got {type(source).__name__}")
    path = Path(source).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    data = parse_jsonc(text, f"{what} {path}")
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path}: expected a JSON object at the top level")
    return cast("dict[str, Any]", data)


def load_config(source: Mapping[str, Any] | str | os.PathLike[str] | None) -> dict[str, Any]:
    """opencode's config as a dict (``{}`` for ``None``)."""
    return _load(source, "config")


def load_auth(source: Mapping[str, Any] | str | os.PathLike[str] | None) -> dict[str, Login]:
    """opencode's ``auth.json`` as logins per provider id; records of other types are skipped."""
    logins: dict[str, Login] = {}
    for provider, record in _load(source, "auth").items():
        if not isinstance(record, dict):
            continue
        entry = cast("dict[str, Any]", record)
        kind = entry.get("type")
        if kind == "api" and _text(entry.get("key")):
            logins[provider] = ApiKeyLogin(Secret(entry["key"]), "auth")
        elif kind == "oauth" and _text(entry.get("access")):
            refresh, expires = _text(entry.get("refresh")), entry.get("expires")
            logins[provider] = OAuthLogin(
                Secret(entry["access"]),
                Secret(refresh) if refresh else None,
                expires if isinstance(expires, int) else None,
                _text(entry.get("accountId")) or None,
            )
    return logins


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value.strip() else ""


# -- per-provider settings ----------------------------------------------------------------------------


def _object(value: Any, path: str) -> dict[str, Any] | None:
    """A JSON object, or ``None`` when absent; another type is a ``ConfigError`` naming ``path``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"config {path}: expected an object, got {_json_type(value)}")
    return cast("dict[str, Any]", value)


def _string(options: Mapping[str, Any], key: str, path: str) -> str:
    """A string option (``""`` when absent or blank); another type is a ``ConfigError`` that names
    the path and the type, never the value (it may be a key)."""
    value = options.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"config {path}.{key}: expected a string, got {_json_type(value)}")
    return _text(value)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string" if isinstance(value, str) else type(value).__name__


def _options(config: Mapping[str, Any], provider: str) -> dict[str, Any]:
    providers = _object(config.get("provider"), "$.provider")
    entry = _object(providers.get(provider), f"$.provider.{provider}") if providers else None
    options = _object(entry.get("options"), f"$.provider.{provider}.options") if entry else None
    return options or {}


def _model(options: Mapping[str, Any], provider: str) -> str | None:
    for key in ("websearch_grounded", "websearch"):
        path = f"$.provider.{provider}.options.{key}"
        section = _object(options.get(key), path)
        if section is not None:
            model = _string(section, "model", path)
            if model:
                return model
    return None


def _base_url(options: Mapping[str, Any], provider: str) -> str | None:
    path = f"$.provider.{provider}.options"
    url = _string(options, "baseURL", path) or None
    if url is not None and (
        not url.startswith(("http://", "https://")) or not url.split("://", 1)[1].strip("/")
    ):
        scheme = url.split("://", 1)[0] if "://" in url else "no scheme"
        raise ConfigError(
            f"config {path}.baseURL: expected an http(s) URL such as https://api.example.com/v1, got {scheme}"
        )
    return url


def _env_key(provider: str, env: Mapping[str, str]) -> ApiKeyLogin | None:
    for name in ENV[provider]:
        if _text(env.get(name)):
            return ApiKeyLogin(Secret(env[name]), name)
    return None


def settings_for(
    provider: str,
    config: Mapping[str, Any],
    auth: Mapping[str, Login],
    env: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """The provider's settings with its login picked by the precedence in the module doc."""
    if provider not in ENV:
        raise ConfigError(f"unknown web search provider {provider!r}; known: {', '.join(PROVIDERS)}")
    env = os.environ if env is None else env
    options = _options(config, provider)
    api_key = _string(options, "apiKey", f"$.provider.{provider}.options")
    configured = ApiKeyLogin(Secret(api_key), "config") if api_key else None
    record = auth.get(provider)
    login: Login | None
    if provider == "google":
        login = configured or record or _env_key(provider, env)
    elif provider == "openai":
        oauth = record if isinstance(record, OAuthLogin) else None
        login = oauth or configured or _env_key(provider, env)
    else:
        api = record if isinstance(record, ApiKeyLogin) else None
        login = configured or api or _env_key(provider, env)
    default = DEFAULT_MODELS[
        "openai-oauth" if provider == "openai" and isinstance(login, OAuthLogin) else provider
    ]
    base_url = _base_url(options, provider)
    return ProviderSettings(provider, login, _model(options, provider) or default, base_url, options)
