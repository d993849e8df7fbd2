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
from clients (a search backend). ``maxBodyBytes`` caps a request body. ``"kind": "embedding"``
makes an entry an embedding model (``facade.embedding(model, **options)``: ``dimensions``,
``input_type`` and body fields), served at ``POST /v1/embeddings`` (docs/embeddings.md) and only
there; the ``cohere`` and ``voyage`` facades serve embeddings only.

Operating it (``docs/gateway-operations.md``): ``keys`` entries may be objects with an ``id``, the
key or its ``sha256:`` hash, allowed ``models``, ``rpm``, ``tpm``, ``budgetUsd`` and ``budgetPeriod``;
``redisUrl`` shares their counts across workers and instances; ``cors``, ``retry``, ``metrics``,
``accessLog``, ``headerTimeout``, ``bodyTimeout`` and ``telemetry`` are top-level settings.

``virtualrouter.routing`` names routes over the ``models`` entries; a client's ``model`` selects a
route like a model (docs/routing.md)::

    "virtualrouter": {"routing": {"default": [{"model": "claude", "priority": 0},
                                              {"model": "gpt", "priority": 1}],
                                  "longcontext": ["gemini"],
                                  "web_search": ["glm", "gemini"]},
                      "longContextThreshold": 60000}

A target is a ``models`` name, or an object (``model``, ``priority``, ``weight``, ``contextWindow``,
``maxRetries``); a bare name's priority is its position. A request to any other route whose input
is estimated above ``longContextThreshold`` tokens goes to ``longcontext``; ``webSearch`` engines
may name a route as their ``providerKey``. Health (cooldowns, rate-limit memory) is shared by every
route and, with ``redisUrl``, by every gateway process.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import msgspec

from ..providers.registry import EMBEDDING_FACADES, Facade, facade_names, named_facades
from ..route.auth import HeaderAuth
from ..route.embedding import EmbeddingModel
from ..route.model import Model
from ..route.policy import RetryPolicy
from ..route.redact import Secret
from ..router import Cooldown, Router, Strategy, Target
from ..schema.errors import ConfigError, InvalidRequestError, LLMError
from ..state import SharedState, open_state
from ..state.base import check_url
from ..websearch.server_tool import ServerWebSearch, WebSearchConfig
from .sessions import AffinityEntry, CacheEntry

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "BudgetPeriod",
    "Cors",
    "Gateway",
    "GatewayConfig",
    "Key",
    "KeyEntry",
    "ModelEntry",
    "RetryEntry",
    "RouteTarget",
    "VirtualRouter",
    "load",
]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


class ModelEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One ``models`` entry: an upstream model and how to reach it."""

    provider: str
    """A facade (``openai``, ``anthropic``, ...), ``compatible`` (with ``base_url``) or an
    OpenAI-compatible family (``groq``, ...)."""
    model: str
    """The upstream model id."""
    base_url: str | None = None
    """The upstream's base URL (required for ``compatible``; else the facade's)."""
    api_key: str | None = None
    """The upstream key itself (prefer ``api_key_env``)."""
    api_key_env: str | None = None
    """The environment variable holding the upstream key (must be set at start)."""
    public: bool = True
    """Clients may call it by name; ``false`` hides it (a search backend, a route target)."""
    settings: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """Extra ``configure(...)`` arguments of the facade (``region``, ...)."""
    options: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    """Extra arguments of the facade's ``model(...)`` (``facade.model(model, **options)``)."""
    kind: Literal["chat", "embedding"] = "chat"
    """``embedding``: an embedding model (``facade.embedding(model, **options)``), served at
    ``POST /v1/embeddings`` only."""


BudgetPeriod = Literal["hour", "day", "week", "month", "total"]


class KeyEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """A client key with an id (what logs and metrics show) and optional limits."""

    id: str
    """Shown in logs, metrics and limit errors instead of the key."""
    key: str
    """The secret clients send, or ``sha256:<hex>`` of it (so the config need not hold it)."""
    models: list[str] | None = None
    """Public models this key may use (default: all)."""
    rpm: int | None = None
    """Requests per minute."""
    tpm: int | None = None
    """Tokens (input + output, as the upstream reports them) per minute."""
    budget_usd: float | None = None
    """Spend allowed per ``budget_period``, in USD (from catalog prices)."""
    budget_period: BudgetPeriod = "month"
    """Calendar period (UTC) the budget resets on; ``total`` never resets."""


class Cors(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    origins: list[str]
    """Browser origins allowed to call the gateway (``https://app.example``, or ``*``)."""


class RetryEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """The gateway's own retries of a failed upstream call (before any byte reached the client)."""

    max_retries: int = 2
    """``RetryPolicy.max_retries``."""
    initial_backoff: float = 0.5
    """``RetryPolicy.initial_backoff`` (seconds)."""
    max_backoff: float = 30.0
    """``RetryPolicy.max_backoff`` (seconds)."""
    max_retry_after: float = 60.0
    """``RetryPolicy.max_retry_after`` (seconds)."""


class RouteTarget(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """One target of a route: a ``models`` entry and how the route uses it."""

    model: str
    """The name of an entry in ``models``."""
    priority: int = 0
    """Lower is tried first."""
    weight: float = 1.0
    """Share of its priority's traffic."""
    context_window: int | None = None
    """Tokens the model accepts (default: the catalog's)."""
    max_retries: int | None = None
    """This target's own retries before the route moves on (default: the gateway's ``retry``)."""
    max_in_flight: int | None = None
    """``Target.max_in_flight``: at most this many calls open on it at once, per worker."""
    rpm: int | None = None
    """``Target.rpm``: the operator's budget of requests a minute (shared with ``redisUrl``)."""
    tpm: int | None = None
    """``Target.tpm``: the operator's budget of tokens a minute (shared with ``redisUrl``)."""


class CooldownEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """``llmroute.router.Cooldown`` in the config file (the same defaults)."""

    failures: int = 3
    """``Cooldown.failures``: failed calls in a row that start a cooldown."""
    failure_rate: float = 0.5
    """``Cooldown.failure_rate``: or this share of the calls in the last ``window`` seconds."""
    window: float = 10.0
    """``Cooldown.window``: the seconds ``failureRate`` looks back over."""
    min_calls: int = 10
    """``Cooldown.min_calls``: ``failureRate`` counts once the window holds this many calls."""
    seconds: float = 1.0
    """``Cooldown.seconds``: the first cooldown of an incident (doubled per failed probe)."""
    max_seconds: float = 60.0
    """``Cooldown.max_seconds``: the longest cooldown."""
    auth_seconds: float = 300.0
    """``Cooldown.auth_seconds``: the cooldown after an authentication or quota failure."""
    rate_limit_seconds: float = 1.0
    """``Cooldown.rate_limit_seconds``: how long a 429 without ``Retry-After`` blocks a target."""
    timeouts: bool = True
    """``Cooldown.timeouts``: whether a deadline that fired counts as a failure."""
    probe_timeout: float = 60.0
    """``Cooldown.probe_timeout``: the longest one caller holds the half-open probe."""


class VirtualRouter(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    routing: dict[str, list[str | RouteTarget]]
    """Route name -> its targets."""
    long_context_threshold: int = 60_000
    """Estimated input tokens above which a request goes to the ``longcontext`` route."""
    strategy: Strategy = "weighted"
    """How targets of one priority share traffic: weighted, least-in-flight or latency."""
    cooldown: CooldownEntry | None = None
    """When a failing target is skipped (default: 3 failures in a row or half of 10 s's calls,
    1 s doubling per failed probe up to 60 s, a half-open probe)."""
    max_wait: float = 5.0
    """``Router.max_wait``: how long a request may wait when no target can take it now."""
    affinity: bool | AffinityEntry = True
    """``Router(affinity=...)``: each session stays on one target while its prompt cache lives
    (``false``: every request is routed on its own)."""


LONG_CONTEXT = "longcontext"


class TelemetryEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """OpenTelemetry for the gateway (``llmroute.telemetry``: a SERVER span per request, GenAI spans
    and metrics for its upstream calls); needs ``llmroute[otel]``."""

    otel: bool = False
    """Trace and meter requests with the global OpenTelemetry providers (set up from the standard
    ``OTEL_*`` environment when nothing has set them)."""
    capture_content: bool = False
    """Record prompts and answers on the spans (redacted as logs are); off by default."""


class GatewayConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """The configuration file (camelCase keys; see the module docstring and
    ``docs/gateway-operations.md``)."""

    keys: list[str | KeyEntry]
    """Client keys: a string is a key, an object (``KeyEntry``) gives it an id and limits."""
    models: dict[str, Any]  # each a ModelEntry, converted one by one so errors name the entry
    """Public model name -> upstream (a ``ModelEntry`` each)."""
    web_search: WebSearchConfig | None = None
    """The server-side ``web_search`` tool's engines and when it is injected."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Larger request bodies are refused with 413 before they are read whole."""
    redis_url: str | None = None
    """Count limits and budgets in Redis, shared by every worker and instance (``redis://``,
    ``rediss://``, ``unix://``)."""
    cors: Cors | None = None
    """Browser origins allowed to call the gateway."""
    retry: RetryEntry | None = None
    """The gateway's own retries of an upstream call (default: the library's, 2 retries)."""
    metrics: bool = True
    """Serve ``GET /metrics`` (needs ``llmroute[metrics]``)."""
    access_log: bool = True
    """One JSON line per request on the ``llmroute.server.access`` logger."""
    header_timeout: float = 10.0
    """Seconds a connection may take to send a request head (slow-loris connections are closed)."""
    body_timeout: float = 30.0
    """Seconds a request body may take to arrive (then 408 ``body_timeout``)."""
    virtualrouter: VirtualRouter | None = None
    """Named routes over the ``models`` entries, selected by a client's ``model``."""
    telemetry: TelemetryEntry | None = None
    """OpenTelemetry traces and metrics (``{"otel": true}``; ``llmroute serve --otel`` too)."""
    cache: CacheEntry | None = None
    """The prompt-cache policy of requests whose client sent none (``CachePolicy``'s fields)."""


class Key(msgspec.Struct, frozen=True):
    """A loaded client key: its id, the SHA-256 of the secret, and its limits."""

    id: str
    """Shown in logs, metrics and limit errors instead of the key."""
    digest: bytes
    """SHA-256 of the secret (the secret is not kept)."""
    models: frozenset[str] | None = None
    """Public models this key may use (``None``: all)."""
    rpm: int | None = None
    """Requests per minute."""
    tpm: int | None = None
    """Tokens (input + output) per minute."""
    budget_usd: float | None = None
    """Spend allowed per ``budget_period``, in USD."""
    budget_period: BudgetPeriod = "month"
    """Calendar period (UTC) the budget resets on; ``total`` never resets."""

    def __repr__(self) -> str:
        return f"Key({self.id!r})"

    @property
    def limited(self) -> bool:
        return self.rpm is not None or self.tpm is not None or self.budget_usd is not None


class Gateway:
    """A loaded configuration: the models by name, which are public, the server search tool, and
    every secret the gateway knows (scrubbed from anything it returns)."""

    def __init__(
        self,
        keys: tuple[Key, ...],
        models: dict[str, Model],
        public: tuple[str, ...],
        web_search: ServerWebSearch | None,
        max_body_bytes: int,
        secrets: tuple[str, ...],
        config: GatewayConfig | None = None,
        routes: dict[str, Router] | None = None,
        state: SharedState | None = None,
        embeddings: dict[str, EmbeddingModel] | None = None,
    ) -> None:
        self.keys = keys
        self.embeddings = embeddings or {}
        """Embedding models by name (``"kind": "embedding"`` entries), for ``POST /v1/embeddings``."""
        self.routes = routes or {}
        """Routes by name (``virtualrouter.routing``); clients select them like models."""
        self.state = state
        """The shared state the routes keep their health in (``None`` without routes)."""
        self.models = models
        self.public = public
        self.web_search = web_search
        self.max_body_bytes = max_body_bytes
        self.secrets = secrets
        config = config or GatewayConfig(keys=[], models={})
        self.redis_url = config.redis_url
        self.cors_origins = tuple(config.cors.origins) if config.cors is not None else ()
        self.retry: RetryPolicy | None = None
        if config.retry is not None:
            r = config.retry
            self.retry = RetryPolicy(
                max_retries=r.max_retries,
                initial_backoff=r.initial_backoff,
                max_backoff=r.max_backoff,
                max_retry_after=r.max_retry_after,
            )
        self.metrics = config.metrics
        self.access_log = config.access_log
        telemetry = config.telemetry or TelemetryEntry()
        self.otel = telemetry.otel
        """Turn ``llmroute.telemetry`` on while the app runs."""
        self.capture_content = telemetry.capture_content
        self.header_timeout = config.header_timeout
        self.body_timeout = config.body_timeout
        self.cache = config.cache.policy() if config.cache is not None else None
        """The ``CachePolicy`` of requests whose client sent none (``cache``)."""
        vr = config.virtualrouter
        self.long_context_threshold = vr.long_context_threshold if vr is not None else None
        # where upstreams live (host:port and host): scrubbed from anything a client sees
        self.upstream_hosts = _hosts({**models, **self.embeddings})

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
    if not config.keys:
        raise ConfigError("$.keys: at least one non-empty client key is required")
    if config.max_body_bytes < 1024:
        raise ConfigError("$.maxBodyBytes: must be at least 1024")
    if not config.models:
        raise ConfigError("$.models: at least one model is required")
    _check_limits(config)
    models: dict[str, Model] = {}
    embeddings: dict[str, EmbeddingModel] = {}
    secrets: list[str] = [k for k in config.keys if isinstance(k, str)]
    secrets += [k.key for k in config.keys if isinstance(k, KeyEntry) and not k.key.startswith("sha256:")]
    entries: dict[str, ModelEntry] = {}
    for name, value in config.models.items():
        path = f"$.models.{name}"
        entry = entries[name] = _entry(value, path)
        key = _api_key(entry, path, env)
        if key is not None:
            secrets.append(key)
        built: Model | EmbeddingModel
        if entry.kind == "embedding":
            built = embeddings[name] = _embedding(entry, key, path)
        else:
            built = models[name] = _model(entry, key, path)
        if key is None:
            _check_default_key(name, built, path, env)
    public = tuple(name for name, entry in entries.items() if entry.public)
    if not public:
        raise ConfigError("$.models: no public model (every entry has public: false)")
    state: SharedState | None = None
    routes: dict[str, Router] = {}
    if config.virtualrouter is not None:
        state = open_state(config.redis_url)
        routes = _routes(config.virtualrouter, models, state, embeddings)
        public += tuple(routes)
    search = None
    if config.web_search is not None:
        search = ServerWebSearch.from_settings(config.web_search, {**models, **routes}, path="$.webSearch")
        if search.inject_policy == "selective":
            try:
                search.classify("")  # fail at start, not on every request
            except ImportError:
                raise ConfigError(
                    "$.webSearch.injectPolicy: 'selective' needs llmroute.websearch.intent (not installed)"
                ) from None
    keys = _keys(config.keys, public)
    return Gateway(
        keys, models, public, search, config.max_body_bytes, tuple(secrets), config, routes, state, embeddings
    )


def _routes(
    vr: VirtualRouter,
    models: Mapping[str, Model],
    state: SharedState,
    embeddings: Mapping[str, EmbeddingModel] | None = None,
) -> dict[str, Router]:
    """One ``Router`` per route, all keeping health in ``state`` under one namespace."""
    path = "$.virtualrouter"
    if not vr.routing:
        raise ConfigError(f"{path}.routing: at least one route is required")
    if vr.long_context_threshold < 1:
        raise ConfigError(f"{path}.longContextThreshold: must be at least 1")
    if not 0 <= vr.max_wait < float("inf"):
        raise ConfigError(f"{path}.maxWait: must be a number of seconds >= 0")
    if isinstance(vr.affinity, AffinityEntry) and vr.affinity.ttl is not None and not vr.affinity.ttl > 0:
        raise ConfigError(f"{path}.affinity.ttl: must be a number of seconds > 0")
    cooldown = None
    if vr.cooldown is not None:
        try:
            cooldown = Cooldown(**msgspec.structs.asdict(vr.cooldown))
        except LLMError as exc:
            raise ConfigError(f"{path}.cooldown: {exc.message.removeprefix('Cooldown.')}") from None
    routes: dict[str, Router] = {}
    for name, entries in vr.routing.items():
        where = f"{path}.routing.{name}"
        if not name or name in models or name in (embeddings or {}):
            raise ConfigError(f"{where}: a route needs a name no model entry has")
        if not entries:
            raise ConfigError(f"{where}: at least one target is required")
        targets: list[Target] = []
        for i, entry in enumerate(entries):
            spec = RouteTarget(entry, priority=i) if isinstance(entry, str) else entry
            model = models.get(spec.model)
            if model is None and spec.model in (embeddings or {}):
                raise ConfigError(
                    f"{where}[{i}].model: {spec.model!r} is an embedding model; routes are of chat models"
                )
            if model is None:
                known = ", ".join(sorted(models))
                raise ConfigError(
                    f"{where}[{i}].model: {spec.model!r} is not a configured model (known: {known})"
                )
            if any(t.name == spec.model for t in targets):
                raise ConfigError(f"{where}[{i}].model: {spec.model!r} is already a target of this route")
            try:
                retry = RetryPolicy(max_retries=spec.max_retries) if spec.max_retries is not None else None
                targets.append(
                    Target(
                        model,
                        spec.priority,
                        spec.weight,
                        spec.model,
                        spec.context_window,
                        retry,
                        max_in_flight=spec.max_in_flight,
                        rpm=spec.rpm,
                        tpm=spec.tpm,
                    )
                )
            except LLMError as exc:
                field = (exc.message.split(":", 1)[0].rpartition(".")[2]) or "model"
                raise ConfigError(f"{where}[{i}].{_camel(field)}: {exc.message.split(': ', 1)[-1]}") from None
        routes[name] = Router(
            targets,
            name=name,
            strategy=vr.strategy,
            cooldown=cooldown,
            state=state,
            namespace="gateway",
            max_wait=vr.max_wait,
            affinity=vr.affinity.affinity() if isinstance(vr.affinity, AffinityEntry) else vr.affinity,
        )
    return routes


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _check_limits(config: GatewayConfig) -> None:
    if config.redis_url is not None:
        try:
            check_url(config.redis_url)
        except InvalidRequestError as exc:  # its message never echoes the URL's password
            raise ConfigError("$.redisUrl: " + str(exc).removeprefix("redis_url: ")) from None
    if config.cors is not None:
        for i, origin in enumerate(config.cors.origins):
            if origin != "*" and urlsplit(origin).scheme not in ("http", "https"):
                raise ConfigError(f"$.cors.origins[{i}]: must be an http(s) origin or '*'")
    if config.retry is not None:
        try:
            RetryPolicy(
                max_retries=config.retry.max_retries,
                initial_backoff=config.retry.initial_backoff,
                max_backoff=config.retry.max_backoff,
                max_retry_after=config.retry.max_retry_after,
            )
        except LLMError as exc:
            raise ConfigError(f"$.retry: {exc.message.removeprefix('RetryPolicy.')}") from None
    for name in ("header_timeout", "body_timeout"):
        if not getattr(config, name) > 0:
            camel = "headerTimeout" if name == "header_timeout" else "bodyTimeout"
            raise ConfigError(f"$.{camel}: must be a number of seconds above 0")


def _keys(entries: list[str | KeyEntry], public: tuple[str, ...]) -> tuple[Key, ...]:
    keys: list[Key] = []
    seen: set[str] = set()
    digests: dict[bytes, int] = {}
    for i, entry in enumerate(entries):
        path = f"$.keys[{i}]"
        if isinstance(entry, str):
            if not entry:
                raise ConfigError(f"{path}: at least one non-empty client key is required")
            key = Key(f"key-{i + 1}", hashlib.sha256(entry.encode("utf-8", "surrogatepass")).digest())
        else:
            if not entry.id or entry.id in seen:
                raise ConfigError(f"{path}.id: must be non-empty and unique")
            seen.add(entry.id)
            key = _key(entry, path, public)
        # one secret in two entries: which id, models and limits apply would be arbitrary
        if (first := digests.setdefault(key.digest, i)) != i:
            suffix = ".key" if not isinstance(entry, str) else ""
            raise ConfigError(f"{path}{suffix}: the same key as $.keys[{first}]")
        keys.append(key)
    return tuple(keys)


def _key(entry: KeyEntry, path: str, public: tuple[str, ...]) -> Key:
    if entry.key.startswith("sha256:"):
        try:
            digest = bytes.fromhex(entry.key.removeprefix("sha256:"))
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise ConfigError(f"{path}.key: sha256: must be followed by 64 hex digits")
    elif entry.key:
        digest = hashlib.sha256(entry.key.encode("utf-8", "surrogatepass")).digest()
    else:
        raise ConfigError(f"{path}.key: must not be empty")
    for j, name in enumerate(entry.models or ()):
        if name not in public:
            raise ConfigError(f"{path}.models[{j}]: {name!r} is not a public model")
    for name, value in (("rpm", entry.rpm), ("tpm", entry.tpm)):
        if value is not None and value < 1:
            raise ConfigError(f"{path}.{name}: must be at least 1")
    if entry.budget_usd is not None and entry.budget_usd < 0:
        raise ConfigError(f"{path}.budgetUsd: must be 0 or more")
    models = frozenset(entry.models) if entry.models is not None else None
    return Key(entry.id, digest, models, entry.rpm, entry.tpm, entry.budget_usd, entry.budget_period)


def _hosts(models: Mapping[str, Model | EmbeddingModel]) -> tuple[str, ...]:
    hosts: set[str] = set()
    for model in models.values():
        parts = urlsplit(model.route.endpoint.base_url)
        if parts.hostname:
            hosts.add(parts.netloc.rpartition("@")[2])
            hosts.add(parts.hostname)
    return tuple(sorted(hosts, key=len, reverse=True))  # host:port before host


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


def _check_default_key(name: str, model: Model | EmbeddingModel, path: str, env: Mapping[str, str]) -> None:
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
    if any(entry.provider == f.name for f in EMBEDDING_FACADES):
        raise ConfigError(
            f'{path}.provider: {entry.provider!r} serves embeddings only: add "kind": "embedding"'
        )
    facade = _facade(entry, key, path, named_facades())
    try:
        return facade.model(entry.model, **entry.options)
    except (LLMError, TypeError, ImportError) as exc:  # a facade refusing its settings
        raise ConfigError(f"{path}: {exc}") from None


def _embedding(entry: ModelEntry, key: str | None, path: str) -> EmbeddingModel:
    facade = _facade(entry, key, path, {**named_facades(), **{f.name: f for f in EMBEDDING_FACADES}})
    try:
        return facade.embedding(entry.model, **entry.options)
    except (LLMError, TypeError, ImportError) as exc:  # a facade refusing its settings, or its options
        raise ConfigError(f"{path}: {exc}") from None


def _facade(entry: ModelEntry, key: str | None, path: str, named: Mapping[str, Facade]) -> Any:
    """The entry's facade, configured (``api_key``, ``base_url``, ``settings``)."""
    provider = entry.provider
    kwargs: dict[str, Any] = dict(entry.settings)
    if key is not None:
        kwargs["api_key"] = Secret(key)
    if entry.base_url is not None:
        kwargs["base_url"] = entry.base_url
    compatible = importlib.import_module("llmroute.providers.compatible")
    try:
        if provider in named:
            return named[provider].load().configure(**kwargs)
        if provider == "compatible":
            if entry.base_url is None:
                raise ConfigError(f"{path}.base_url: required for provider 'compatible'")
            return compatible.configure(**kwargs)
        if provider in compatible.FAMILIES:
            return compatible.configure(provider, **kwargs)
        known = ", ".join(sorted({*facade_names(), *named}))
        raise ConfigError(f"{path}.provider: unknown provider {provider!r} (known: {known})")
    except ConfigError:
        raise
    except (LLMError, TypeError, ImportError) as exc:  # a facade refusing its settings
        raise ConfigError(f"{path}: {exc}") from None
