"""The gateway's configuration file, validated at start: a bad entry fails with its path.

    {"keys": ["gw-key-1"],
     "models": {"main": {"provider": "compatible", "base_url": "http://127.0.0.1:9000/v1",
                         "api_key_env": "UPSTREAM_KEY", "model": "m"},
                "glm":  {"provider": "glm", "model": "glm-4.7", "public": false}},
     "webSearch": {"engines": [{"id": "glm", "providerKey": "glm", "description": "…", "default": true}],
                   "injectPolicy": "selective"}}

``provider`` names a facade (``openai``, ``anthropic``, ``google``, ``glm``, ``xai``, ``openrouter``,
``azure``, ``bedrock``), ``compatible`` (with ``base_url``) or an OpenAI-compatible family
(``groq``, ``deepseek``, ...). The key is ``api_key``, else the variable named by ``api_key_env``
(which must be set), else the facade's usual variable (checked at start when the route is keyed
by one: unset, the gateway does not start). ``settings`` are extra ``configure(...)``
arguments (``region``, ...), ``options`` extra model options. ``public: false`` hides an entry
from clients (a search backend). ``maxBodyBytes`` caps a request body.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from ..route.auth import HeaderAuth
from ..route.model import Model
from ..route.redact import Secret
from ..schema.errors import ConfigError, LLMError
from ..websearch.server_tool import ServerWebSearch, WebSearchConfig

__all__ = ["DEFAULT_MAX_BODY_BYTES", "Gateway", "GatewayConfig", "ModelEntry", "load"]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

_FACADES = ("openai", "anthropic", "google", "glm", "xai", "openrouter", "azure", "bedrock")


class ModelEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    provider: str
    model: str
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    public: bool = True
    settings: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    options: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])


class GatewayConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    keys: list[str]
    models: dict[str, Any]  # each a ModelEntry, converted one by one so errors name the entry
    web_search: WebSearchConfig | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


class Gateway:
    """A loaded configuration: the models by name, which are public, the server search tool, and
    every secret the gateway knows (scrubbed from anything it returns)."""

    def __init__(
        self,
        keys: tuple[str, ...],
        models: dict[str, Model],
        public: tuple[str, ...],
        web_search: ServerWebSearch | None,
        max_body_bytes: int,
        secrets: tuple[str, ...],
    ) -> None:
        self.keys = keys
        self.models = models
        self.public = public
        self.web_search = web_search
        self.max_body_bytes = max_body_bytes
        self.secrets = secrets

    def __repr__(self) -> str:
        return f"Gateway(models={sorted(self.models)!r}, public={list(self.public)!r}, keys={len(self.keys)})"


def load(source: str | Path | Mapping[str, Any], *, environ: Mapping[str, str] | None = None) -> Gateway:
    """A ``Gateway`` from a JSON file path or an already-parsed mapping. Raises ``ConfigError``
    naming the bad path (``$.models.main.api_key_env``)."""
    env = os.environ if environ is None else environ
    raw: Any
    if isinstance(source, str | Path):
        try:
            raw = json.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read gateway config {str(source)!r}: {exc.strerror}") from None
        except ValueError as exc:
            raise ConfigError(f"gateway config {str(source)!r} is not valid JSON: {exc}") from None
    else:
        raw = source
    try:
        config = msgspec.convert(raw, GatewayConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"gateway config: {exc}") from None
    if not config.keys or not all(config.keys):
        raise ConfigError("$.keys: at least one non-empty client key is required")
    if config.max_body_bytes < 1024:
        raise ConfigError("$.maxBodyBytes: must be at least 1024")
    if not config.models:
        raise ConfigError("$.models: at least one model is required")
    models: dict[str, Model] = {}
    secrets: list[str] = list(config.keys)
    entries: dict[str, ModelEntry] = {}
    for name, value in config.models.items():
        path = f"$.models.{name}"
        entry = entries[name] = _entry(value, path)
        key = _api_key(entry, path, env)
        if key is not None:
            secrets.append(key)
        models[name] = _model(entry, key, path)
        if key is None:
            _check_default_key(name, models[name], path, env)
    public = tuple(name for name, entry in entries.items() if entry.public)
    if not public:
        raise ConfigError("$.models: no public model (every entry has public: false)")
    search = None
    if config.web_search is not None:
        search = ServerWebSearch.from_settings(config.web_search, models, path="$.webSearch")
        if search.inject_policy == "selective":
            try:
                search.classify("")  # fail at start, not on every request
            except ImportError:
                raise ConfigError(
                    "$.webSearch.injectPolicy: 'selective' needs llmroute.websearch.intent (not installed)"
                ) from None
    return Gateway(tuple(config.keys), models, public, search, config.max_body_bytes, tuple(secrets))


def _entry(value: Any, path: str) -> ModelEntry:
    try:
        return msgspec.convert(value, ModelEntry)
    except msgspec.ValidationError as exc:
        text = str(exc)
        if " - at `$" in text:
            raise ConfigError(f"gateway config: {text.replace(' - at `$', f' - at `{path}', 1)}") from None
        raise ConfigError(f"gateway config: {text} - at `{path}`") from None


def _api_key(entry: ModelEntry, path: str, env: Mapping[str, str]) -> str | None:
    if entry.api_key is not None and entry.api_key_env is not None:
        raise ConfigError(f"{path}: give api_key or api_key_env, not both")
    if entry.api_key_env is not None:
        value = env.get(entry.api_key_env)
        if not value:
            raise ConfigError(f"{path}.api_key_env: environment variable {entry.api_key_env} is not set")
        return value
    return entry.api_key


def _check_default_key(name: str, model: Model, path: str, env: Mapping[str, str]) -> None:
    """A model keyed by its facade's usual variable: fail at start when that variable is unset (it
    would otherwise start and answer every request 502 ``upstream_auth``). Token, SigV4 and
    keyless (local ``compatible``) routes are not keyed this way and are not checked."""
    auth = model.route.auth
    if not isinstance(auth, HeaderAuth) or auth.key.peek_explicit():
        return
    names = auth.key.env
    if any(env.get(variable, "").strip() for variable in names):
        return
    where = f"set {' or '.join(names)}, or give" if names else "give"
    raise ConfigError(
        f"{path}: model {name!r} ({model.provider}) has no API key: {where} api_key_env (or api_key)"
    )


def _model(entry: ModelEntry, key: str | None, path: str) -> Model:
    provider = entry.provider
    kwargs: dict[str, Any] = dict(entry.settings)
    if key is not None:
        kwargs["api_key"] = Secret(key)
    if entry.base_url is not None:
        kwargs["base_url"] = entry.base_url
    compatible = importlib.import_module("llmroute.providers.compatible")
    try:
        if provider in _FACADES:
            facade = importlib.import_module(f"llmroute.providers.{provider}").configure(**kwargs)
        elif provider == "compatible":
            if entry.base_url is None:
                raise ConfigError(f"{path}.base_url: required for provider 'compatible'")
            facade = compatible.configure(**kwargs)
        elif provider in compatible.FAMILIES:
            facade = compatible.configure(provider, **kwargs)
        else:
            known = ", ".join(sorted({*_FACADES, "compatible", *compatible.FAMILIES}))
            raise ConfigError(f"{path}.provider: unknown provider {provider!r} (known: {known})")
        return facade.model(entry.model, **entry.options)
    except ConfigError:
        raise
    except (LLMError, TypeError, ImportError) as exc:  # a facade refusing its settings
        raise ConfigError(f"{path}: {exc}") from None
