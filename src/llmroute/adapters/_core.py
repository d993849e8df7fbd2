"""What the framework adapters share: the llmroute side of a call (the client, the target, thinking
levels, hosted tools, cost), with no framework imported."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..schema.errors import InvalidRequestError, LLMError
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool

if TYPE_CHECKING:
    from ..client import Client
    from ..route.model import Model, ModelGroup
    from ..route.policy import Timeouts
    from ..schema.response import LLMResponse
    from ..stream import EventStream
    from ..sync import SyncClient

__all__ = [
    "THINKING_BUDGETS",
    "Backend",
    "Effort",
    "check_target",
    "cost_details",
    "hosted_tool",
    "http_status",
    "merge_options",
    "thinking_options",
]

Effort = Literal["minimal", "low", "medium", "high", "xhigh"]

THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
}
"""Thinking-token budgets for the protocols that take a budget rather than an effort (Anthropic,
Bedrock, Gemini), by effort level; ``True`` means ``medium``."""


def check_target(model: object) -> Model | ModelGroup:
    """``model`` is an llmroute ``Model`` (from a provider facade) or a ``Router``; anything else
    is an ``InvalidRequestError`` naming the argument."""
    from ..route.model import Model, ModelGroup

    if isinstance(model, Model | ModelGroup):
        return model
    raise InvalidRequestError(
        "model: expected an llmroute Model (e.g. openai.configure().chat('gpt-4o-mini')) or a Router, "
        f"got {type(model).__name__}",
        param="model",
    )


class Backend:
    """The llmroute client an adapter calls through: the one given, or one it makes per event loop
    (an httpx pool belongs to the loop that opened it) and closes in ``aclose``. Sync callers get
    one ``SyncClient`` (its own loop in a thread)."""

    def __init__(self, target: Model | ModelGroup, client: Client | None = None) -> None:
        from ..client import Client

        if client is not None and not isinstance(client, Client):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"client: expected an llmroute.Client or None, got {type(client).__name__}", param="client"
            )
        self.target = target
        self.given = client
        self._owned: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop] | None, Client]] = {}
        self._sync: SyncClient | None = None
        self._lock = threading.Lock()  # LangChain's .batch calls from a thread pool

    @property
    def client(self) -> Client:
        """The client for the running event loop."""
        if self.given is not None:
            return self.given
        from ..client import Client

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio (or no loop): one client
            loop = None
        key = id(loop)
        held = self._owned.get(key)
        if held is not None and (held[0] is None or held[0]() is loop) and not held[1].closed:
            return held[1]
        # drop clients of loops that are gone (their pools cannot be used again)
        for k, (ref, _) in list(self._owned.items()):
            if ref is not None and ref() is None:
                del self._owned[k]
        client = Client()
        self._owned[key] = (weakref.ref(loop) if loop is not None else None, client)
        return client

    @property
    def sync(self) -> SyncClient:
        """A ``SyncClient`` for callers without an event loop (it wraps the given client's
        settings when there is one)."""
        with self._lock:
            if self._sync is None or self._sync.closed:
                from ..sync import SyncClient

                given = self.given
                self._sync = (
                    SyncClient(timeouts=given.timeouts, retry=given.retry, hooks=given.hooks)
                    if given is not None
                    else SyncClient()
                )
            return self._sync

    def stream(self, request: LLMRequest, *, timeouts: Timeouts | None = None) -> EventStream:
        return self.client.stream(request, timeouts=timeouts)

    async def aclose(self) -> None:
        """Close the clients this backend made (never the one it was given)."""
        owned, self._owned = self._owned, {}
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for ref, client in owned.values():
            if ref is None or ref() is running:
                await client.aclose()
        self.close_sync()

    def close_sync(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None


def merge_options(*layers: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
    """Provider options by namespace, later layers winning key by key."""
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for namespace, values in (layer or {}).items():
            out.setdefault(namespace, {}).update(values)
    return out or None


def thinking_options(models: Iterable[Model], level: bool | str) -> dict[str, dict[str, Any]]:
    """A framework's one thinking setting (``True``/``False`` or an effort level) as provider
    options for each of ``models``' protocols: Anthropic and Bedrock a ``thinking`` budget, Gemini
    ``thinkingConfig``, OpenAI Responses ``reasoning.effort`` with a summary, Chat
    ``reasoning_effort`` (OpenRouter ``reasoning.effort``)."""
    if not isinstance(level, bool) and level not in THINKING_BUDGETS:
        raise InvalidRequestError(
            f"thinking: expected True, False or one of {sorted(THINKING_BUDGETS)}, got {level!r}",
            param="thinking",
        )
    effort = "medium" if level is True else level
    out: dict[str, dict[str, Any]] = {}
    for model in models:
        options = out.setdefault(model.provider, {})
        protocol = model.route.protocol.name
        if protocol.startswith("anthropic") or protocol == "bedrock-converse":
            if level is False:
                options["thinking"] = {"type": "disabled"}
            else:
                options["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGETS[str(effort)]}
        elif protocol.startswith("gemini"):
            budget = 0 if level is False else THINKING_BUDGETS[str(effort)]
            options["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": level is not False}
        elif protocol == "openai-responses":
            if level is False:
                options["reasoning"] = {"effort": "none"}
            else:
                options["reasoning"] = {"effort": effort, "summary": "auto"}
        elif model.provider == "openrouter":
            options["reasoning"] = {"enabled": False} if level is False else {"effort": effort}
        else:
            options["reasoning_effort"] = "none" if level is False else effort
    return out


def hosted_tool(kind: str, options: Mapping[str, Any]) -> HostedTool:
    """A framework's built-in tool as llmroute's hosted tool of the same ``kind`` (options that are
    ``None`` are left out, so the provider's defaults apply)."""
    return HostedTool(kind, {k: v for k, v in options.items() if v is not None})


def http_status(error: LLMError) -> int | None:
    """The HTTP status the provider answered with, when the failure came with one."""
    return error.http.status if error.http is not None else None


def cost_details(response: LLMResponse) -> dict[str, Any] | None:
    """``response.cost`` as JSON-ready values (Decimal amounts as strings, exact), or ``None``
    when the catalog has no price and the provider reported none."""
    try:
        cost = response.cost
    except LLMError:
        return None
    if cost is None:
        return None
    out: dict[str, Any] = {"total": str(cost.total), "source": cost.source}
    for name in ("input", "cache_read", "cache_write", "output", "tools"):
        value = getattr(cost, name)
        if value is not None:
            out[name] = str(value)
    return out
