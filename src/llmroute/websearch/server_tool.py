"""The server-side ``web_search`` tool: any main model searches through one function tool, while the
search itself runs on a separate backend model (GLM's ``web_search``, Gemini's ``googleSearch``).

    server_search = websearch.ServerWebSearch(
        engines=[websearch.Engine("glm", glm.configure().chat("glm-4.7"), "GLM: Chinese / domestic news", default=True),
                 websearch.Engine("google", google.configure().gemini("gemini-2.5-flash"), "Gemini: global web")],
        inject_policy="selective",
    )
    response = await client.generate(request, tools=[server_search, *my_tools])

The runtime runs it as a server tool (``tools.server``): per call chain it decides on each step
whether the tool is offered, executes the model's ``web_search`` calls itself and feeds the result
back for the original call id; the main model's route never changes.

Injection (per chain): ``always`` offers the tool on every step. ``selective`` offers it once the
chain is *sticky*: set when the latest user message shows search intent (``classify_intent``) or
a ``web_search`` call ran, reset when a step finishes with ``stop``. Google-preferred intent narrows
the ``engine`` enum to Gemini-backed engines (or ids containing ``google``) when there are any.
Each step's request records the decision in ``metadata["web_search"]`` (``Injection``);
``ServerWebSearch.apply(request)`` gives the first step's request for ``client.prepare``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

import msgspec

from ..route.executor import ExecutionContext
from ..schema.content import TextPart
from ..schema.errors import ConfigError, LLMError, QuotaExceededError, RateLimitError, TimeoutError
from ..schema.events import LLMEvent, ToolCall, ToolResult
from ..schema.request import LLMRequest
from ..schema.response import StepResult
from ..schema.tools import ToolDefinition
from ..tools.runtime import error_events
from ..tools.server import ServerTool, ServerToolSession
from ..tools.tool import InvalidToolInput, Tool
from .backends import DEFAULT_COUNT, RECENCY, Recency, SearchBackend, SearchOutcome, SearchQuery, backend_for

__all__ = [
    "DESCRIPTION",
    "TOOL_NAME",
    "Engine",
    "EngineConfig",
    "InjectPolicy",
    "Injection",
    "ServerWebSearch",
    "WebSearchConfig",
    "tool_definition",
]

TOOL_NAME = "web_search"
DESCRIPTION = "Perform web search for news and web pages using configured search engines."
InjectPolicy = Literal["selective", "always"]
InjectionReason = Literal["always", "intent", "sticky", "no-intent", "reset"]


class Engine(msgspec.Struct, frozen=True):
    """A search engine the main model may pick."""

    id: str
    """The name the main model picks the engine by."""
    model: Any
    """The backend model that runs the search (a ``Model``)."""
    description: str = ""
    """What the engine is good at, for the main model."""
    default: bool = False
    """Used when the main model names no engine."""
    backend: Any = None
    """A ``SearchBackend`` to use instead of the one chosen for ``model`` (``backends.backend_for``)."""

    def __post_init__(self) -> None:
        # Caught here, not at the first search (backend_for(None) fails there); an empty id is
        # ServerWebSearch's to name with its path.
        if not isinstance(self.id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"Engine.id: expected a string, got {type(self.id).__name__}", param="id")
        if self.model is None and self.backend is None:
            raise ConfigError(
                f"Engine {self.id!r}: model is None; pass a Model from a provider facade (or backend=)",
                param="model",
            )

    @property
    def google(self) -> bool:
        """Backed by a Gemini / Code Assist route, or named for Google."""
        protocol = getattr(getattr(getattr(self.model, "route", None), "protocol", None), "name", "")
        return "google" in self.id.lower() or str(protocol).startswith("gemini")

    def searcher(self) -> SearchBackend:
        return self.backend if self.backend is not None else backend_for(self.model)


class _Args(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    query: Annotated[str, msgspec.Meta(min_length=1)]
    engine: str | None = None
    recency: Recency | None = None
    count: Annotated[int, msgspec.Meta(ge=1, le=50)] | None = None


def tool_definition(engines: Sequence[Engine]) -> ToolDefinition:
    """The function tool the main model sees for these engines."""
    listing = "; ".join(f"{e.id}: {e.description}" if e.description else e.id for e in engines)
    default = next((e.id for e in engines if e.default), None)
    if len(engines) == 1:
        default = engines[0].id
    engine_doc = f"Search engine to use. {listing}."
    if default is not None:
        engine_doc += f" Default: {default}."
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "engine": {"type": "string", "enum": [e.id for e in engines], "description": engine_doc},
            "query": {"type": "string", "description": "The search query."},
            "recency": {
                "type": "string",
                "enum": list(RECENCY),
                "description": "Only results from this recent period.",
            },
            "count": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Number of results."},
        },
        "required": ["query"],
    }
    return ToolDefinition(TOOL_NAME, DESCRIPTION, schema)


class Injection(msgspec.Struct, frozen=True):
    """One step's decision about offering ``web_search`` (in ``metadata["web_search"]``)."""

    injected: bool
    """``web_search`` is offered on this step."""
    reason: InjectionReason
    """Why: ``always``, ``intent``, ``sticky``, ``no-intent``, or ``reset`` (sticky ended by a ``stop``
    step)."""
    engines: tuple[str, ...] = ()
    """The engine ids the tool lists."""


class SearchIntentView(msgspec.Struct, frozen=True):
    """The two flags of a classifier's answer this tool reads."""

    web_search: bool
    """The message asks for a web search."""
    google_preferred: bool = False
    """It names Google."""


Classifier = Callable[[str], Any]


def _default_classifier() -> Classifier:
    """``websearch.intent.classify_intent``; this module only needs its two flags."""
    from .intent import classify_intent

    return classify_intent


def _intent(classify: Classifier, text: str) -> SearchIntentView:
    """Adapter over the classifier's result (anything with ``web_search`` / ``google_preferred``)."""
    found = classify(text)
    return SearchIntentView(
        bool(getattr(found, "web_search", False)), bool(getattr(found, "google_preferred", False))
    )


def _latest_user_text(request: LLMRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return "\n".join(p.text for p in message.content if isinstance(p, TextPart))
    return ""


class EngineConfig(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """One engine in a config file (``webSearch.engines[n]``)."""

    id: str
    """The name the main model picks the engine by."""
    provider_key: str
    """The ``models`` entry (or route) that runs the search."""
    description: str = ""
    """What the engine is good at, for the main model."""
    default: bool = False
    """Used when the main model names no engine."""


class WebSearchConfig(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """The config file's ``webSearch``: ``{"engines": [...], "injectPolicy": ...}``."""

    engines: list[EngineConfig]
    """The engines the main model may pick from."""
    inject_policy: InjectPolicy = "selective"
    """``always``: offer the tool on every step; ``selective``: once the user's message shows search
    intent or a search ran, until a step ends with ``stop``."""


class _ConfigRoot(msgspec.Struct, frozen=True, rename="camel"):
    web_search: WebSearchConfig


class ServerWebSearch(ServerTool):
    """The server-side ``web_search`` tool (see the module docstring). ``classify`` replaces the
    intent classifier (``websearch.intent.classify_intent``)."""

    def __init__(
        self,
        engines: Sequence[Engine],
        *,
        inject_policy: InjectPolicy = "selective",
        classify: Classifier | None = None,
    ) -> None:
        _check_engines(engines, "engines")
        if inject_policy not in ("selective", "always"):
            raise ConfigError(f"inject_policy must be 'selective' or 'always', got {inject_policy!r}")
        self.engines = tuple(engines)
        self.inject_policy: InjectPolicy = inject_policy
        self._classify = classify
        self.definition = tool_definition(self.engines)
        google = tuple(e for e in self.engines if e.google)
        self._google_definition = tool_definition(google) if google else self.definition
        self._validator = Tool(self.definition, None, _Args)

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | str | bytes, models: Mapping[str, Any], **kwargs: Any
    ) -> ServerWebSearch:
        """From ``{"webSearch": {...}}`` (a mapping or JSON); ``providerKey`` names a ``models``
        entry. A bad shape or an unknown key raises ``ConfigError`` naming the path."""
        if isinstance(config, str | bytes):
            try:
                config = json.loads(config)
            except ValueError as exc:
                raise ConfigError(f"web search config is not valid JSON: {exc}") from None
        try:
            root = msgspec.convert(config, _ConfigRoot)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"web search config: {exc}") from None
        return cls.from_settings(root.web_search, models, path="$.webSearch", **kwargs)

    @classmethod
    def from_settings(
        cls, settings: WebSearchConfig, models: Mapping[str, Any], *, path: str = "$.webSearch", **kwargs: Any
    ) -> ServerWebSearch:
        engines: list[Engine] = []
        for i, entry in enumerate(settings.engines):
            model = models.get(entry.provider_key)
            if model is None:
                known = ", ".join(sorted(models)) or "none"
                raise ConfigError(
                    f"{path}.engines[{i}].providerKey: {entry.provider_key!r} is not a configured model"
                    f" (known: {known})"
                )
            engines.append(Engine(entry.id, model, entry.description, entry.default))
        _check_engines(engines, f"{path}.engines")
        return cls(engines, inject_policy=settings.inject_policy, **kwargs)

    def always(self) -> ServerWebSearch:
        """The same search offered on every step (``inject_policy="always"``): for a request that
        asked for web search itself (the gateway's Anthropic and Gemini doors)."""
        if self.inject_policy == "always":
            return self
        return ServerWebSearch(self.engines, inject_policy="always", classify=self._classify)

    def session(self, ctx: ExecutionContext, request: LLMRequest) -> _Session:
        return _Session(self, ctx, request)

    def decide(self, request: LLMRequest) -> Injection:
        """The first step's decision for ``request``."""
        return _Session(self, None, request).decision()

    def apply(self, request: LLMRequest) -> LLMRequest:
        """The request the first step sends (hand it to ``client.prepare`` to see the tool list)."""
        return _Session(self, None, request).prepare(request)

    def classify(self, text: str) -> SearchIntentView:
        return _intent(self._classify or _default_classifier(), text)

    def engine(self, id: str | None) -> Engine | str:
        """The engine for a call's ``engine`` argument, or the error message for the model."""
        ids = ", ".join(e.id for e in self.engines)
        if id is None:
            if len(self.engines) == 1:
                return self.engines[0]
            default = next((e for e in self.engines if e.default), None)
            if default is not None:
                return default
            return f"web_search: choose an engine; valid engines: {ids}"
        found = next((e for e in self.engines if e.id == id), None)
        return found if found is not None else f"web_search: unknown engine {id!r}; valid engines: {ids}"

    async def run(self, ctx: ExecutionContext, call: ToolCall) -> list[LLMEvent]:
        """Execute one ``web_search`` call: a result for ``call.id``, or a recoverable error."""
        try:
            args: _Args = self._validator.parse(call.input)
        except InvalidToolInput as exc:
            return error_events(call, exc.message)
        engine = self.engine(args.engine)
        if isinstance(engine, str):
            return error_events(call, engine)
        query = SearchQuery(args.query, args.recency or "noLimit", args.count or DEFAULT_COUNT)
        try:
            outcome = await engine.searcher().search(ctx, query)
        except LLMError as exc:
            return error_events(call, _failure(engine.id, exc))
        return [_result(call, engine.id, outcome)]

    def __repr__(self) -> str:
        return (
            f"ServerWebSearch(engines={[e.id for e in self.engines]!r}, inject_policy={self.inject_policy!r})"
        )


def _check_engines(engines: Sequence[Engine], path: str) -> None:
    if not engines:
        raise ConfigError(f"{path}: at least one search engine is required")
    seen: set[str] = set()
    for i, engine in enumerate(engines):
        if not engine.id:
            raise ConfigError(f"{path}[{i}].id: an engine id is required")
        if engine.id in seen:
            raise ConfigError(f"{path}[{i}].id: duplicate engine id {engine.id!r}")
        seen.add(engine.id)
    defaults = [e.id for e in engines if e.default]
    if len(defaults) > 1:
        raise ConfigError(f"{path}: more than one default engine ({', '.join(defaults)})")


def _failure(engine: str, exc: LLMError) -> str:
    """What the main model reads when a backend fails: the kind of failure, never the raw message
    (which may quote upstream bodies)."""
    if isinstance(exc, QuotaExceededError):
        kind = "the search quota is exhausted"
    elif isinstance(exc, RateLimitError):
        kind = "the search backend is rate limited"
    elif isinstance(exc, TimeoutError):
        kind = "the search backend timed out"
    else:
        status = exc.http.status if exc.http is not None else None
        kind = f"the search backend failed ({type(exc).__name__}{f', HTTP {status}' if status else ''})"
    return f"web_search on engine {engine!r} failed: {kind}. Answer without it or try another engine."


def _result(call: ToolCall, engine: str, outcome: SearchOutcome) -> ToolResult:
    value = {
        "summary": outcome.summary,
        "hits": [msgspec.to_builtins(hit) for hit in outcome.hits],
        "engine": engine,
    }
    backend: dict[str, Any] = {"engine": engine, "model": outcome.model}
    if outcome.usage is not None:
        backend["usage"] = msgspec.to_builtins(outcome.usage)
        # counted into ``response.cost`` (``Cost.search``); None: unknown, so the total is too
        backend["cost"] = str(outcome.cost.total) if outcome.cost is not None else None
    return ToolResult(call.id, call.name, value, provider_metadata={"web_search": backend})


class _Session(ServerToolSession):
    names = frozenset({TOOL_NAME})

    def __init__(self, tool: ServerWebSearch, ctx: ExecutionContext | None, request: LLMRequest) -> None:
        self.tool = tool
        self.ctx = ctx
        self.always = tool.inject_policy == "always"
        self.google = False
        self.reason: InjectionReason = "always" if self.always else "no-intent"
        self.sticky = False
        if not self.always:
            intent = tool.classify(_latest_user_text(request))
            self.sticky = intent.web_search
            self.google = intent.google_preferred and intent.web_search
            if self.sticky:
                self.reason = "intent"

    def decision(self) -> Injection:
        injected = self.always or self.sticky
        definition = self._definition()
        engines = tuple(definition.input_schema["properties"]["engine"]["enum"]) if injected else ()
        return Injection(injected, self.reason, engines)

    def _definition(self) -> ToolDefinition:
        return self.tool._google_definition if self.google else self.tool.definition  # pyright: ignore[reportPrivateUsage]

    def prepare(self, request: LLMRequest) -> LLMRequest:
        decision = self.decision()
        tools = tuple(t for t in request.tools if not (isinstance(t, ToolDefinition) and t.name == TOOL_NAME))
        if decision.injected:
            tools += (self._definition(),)
        metadata = {**(request.metadata or {}), TOOL_NAME: msgspec.to_builtins(decision)}
        return msgspec.structs.replace(request, tools=tools, metadata=metadata)

    async def execute(self, call: ToolCall) -> list[LLMEvent]:
        assert self.ctx is not None, "a session from decide/apply runs no calls"
        return await self.tool.run(self.ctx, call)

    def step_finished(self, step: StepResult) -> None:
        if step.finish_reason == "stop":
            if self.sticky:
                self.sticky, self.reason = False, "reset"
        elif any(r.name == TOOL_NAME and not r.provider_executed for r in step.tool_results):
            self.sticky, self.reason = True, "sticky"
