"""``Router``: one Model-like value over several targets (see ``llmroute.router``)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any, Literal, get_args

import httpx
import msgspec

from ..route.embedding import EmbeddingGroup, EmbeddingModel, resolve_options
from ..route.executor import ExecutionContext, run_model_step
from ..route.model import Model, ModelGroup
from ..route.prepared import PreparedRequest
from ..route.transport import ClientTransports, Transport, TransportKind, Wire
from ..schema.attempt import Attempt
from ..schema.embedding import EmbeddingResponse, InputType
from ..schema.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    NoRouteError,
    QuotaExceededError,
    ResponseTooLargeError,
)
from ..schema.events import LLMEvent, StepStart
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool
from ..state import SharedState, open_state
from .history import for_origin, origin_of, stamp
from .limits import RateLimits, estimate_tokens, read_limits
from .target import Cooldown, Target

__all__ = ["Router", "Strategy"]

log = logging.getLogger("llmroute.router")

Strategy = Literal["weighted", "least-in-flight", "latency"]
_STRATEGIES: tuple[str, ...] = get_args(Strategy)
_MESSAGE_CAP = 300
_LATENCY_TTL = 600.0  # a latency mean older than this is forgotten (the target is explored again)


class _Health:
    """One target's health as read at the start of a call."""

    __slots__ = ("cooling", "fails", "latency", "probed", "tokens_left", "until")

    def __init__(self, values: Sequence[str | None], at: int, latency: bool) -> None:
        cd, fails, probe, limits = values[at], values[at + 1], values[at + 2], values[at + 3]
        self.until = float(cd) if cd else 0.0
        self.cooling = cd is not None
        self.fails = int(float(fails)) if fails else 0
        self.probed = probe is not None
        self.tokens_left = int(float(limits)) if limits is not None else None
        lat = values[at + 4] if latency else None
        self.latency = float(lat) if lat else 0.0


class _Slot:
    """A target as the router runs it: its model (behind the observing transport), keys, limits."""

    __slots__ = (
        "hosted",
        "index",
        "key_cd",
        "key_fails",
        "key_lat",
        "key_limits",
        "key_probe",
        "model",
        "name",
        "origin",
        "target",
        "tool_kinds",
        "window",
    )

    def __init__(self, router: Router, target: Target, prefix: str, index: int) -> None:
        self.index = index  # position in the router's targets (and its health snapshot)
        self.target = target
        self.name = target.key
        model = target.model
        self.origin = origin_of(model)
        observer = _Observer(model.route.transport, router, self)
        self.model: Model | EmbeddingModel = model.with_(route=model.route.with_(transport=observer))
        base = f"{prefix}{self.name}:"
        self.key_cd, self.key_fails, self.key_probe = base + "cd", base + "fails", base + "probe"
        self.key_limits, self.key_lat = base + "limits", base + "lat"
        chat = model.route.protocol if isinstance(model, Model) else None  # embeddings carry no tools
        self.hosted = chat.hosted_kinds if chat is not None else frozenset[str]()
        self.tool_kinds = chat.tool_kinds if chat is not None else frozenset[str]()
        self.window: int | None = target.context_window if target.context_window else _catalog_window(model)

    def cannot_carry(self, request: LLMRequest) -> str | None:
        """Why this target's protocol cannot send ``request``'s tools (checked before sending)."""
        for tool in request.tools:
            if isinstance(tool, HostedTool):
                if tool.kind not in self.hosted:
                    return f"cannot carry the hosted tool {tool.kind!r}"
            elif tool.kind not in self.tool_kinds:
                return f"cannot carry {tool.kind!r} tools"
        return None


def _catalog_window(model: Model | EmbeddingModel) -> int | None:
    try:
        info = model.info  # llmroute.catalog (loaded on first use), when it knows the model
    except Exception:  # the catalog's data failed to load: the window is unknown, not an error
        log.debug("llmroute: no catalog entry for %s", model, exc_info=True)
        return None
    return info.context_window if info is not None else None


class _Observer:
    """The target's kind of transport, bound so that every response's rate-limit headers are read."""

    __slots__ = ("inner", "router", "slot")

    def __init__(self, inner: TransportKind | None, router: Router, slot: _Slot) -> None:
        self.inner = inner
        self.router = router
        self.slot = slot

    @property
    def name(self) -> str:
        return "http" if self.inner is None else self.inner.name

    @property
    def streams_only(self) -> bool:
        return self.inner is not None and self.inner.streams_only

    @property
    def pooled(self) -> bool:
        return self.inner is not None and self.inner.pooled

    def bind(self, transports: ClientTransports) -> Transport:
        inner = transports.for_route(self.inner)
        if self.pooled:  # a pooled connection's headers are its upgrade's, not this response's
            return inner
        return _Observing(inner, self.router, self.slot)

    def __repr__(self) -> str:
        return repr(self.inner)


class _Observing:
    """``_Observer`` bound to a client: the target's transport, then its rate-limit headers read."""

    __slots__ = ("inner", "router", "slot")

    def __init__(self, inner: Transport, router: Router, slot: _Slot) -> None:
        self.inner = inner
        self.router = router
        self.slot = slot

    async def open(
        self,
        prepared: PreparedRequest,
        timeout: httpx.Timeout,  # noqa: ASYNC109
    ) -> Wire:
        wire = await self.inner.open(prepared, timeout)
        limits = read_limits(wire.status, wire.headers)
        if limits is not None:
            await self.router.remember_limits(self.slot, limits)
        return wire


def _moves_on(exc: LLMError) -> bool:
    """Whether another target may succeed where this one failed (before any event was delivered)."""
    if isinstance(exc, ContextOverflowError | AuthenticationError | QuotaExceededError):
        return True
    if isinstance(exc, InvalidRequestError):
        return exc.http is None  # refused before sending: this target's protocol cannot carry it
    if isinstance(exc, ResponseTooLargeError):
        return False
    return exc.retryable or isinstance(exc, InvalidProviderOutputError)


def _counts_against(exc: LLMError) -> bool:
    """Whether the failure says something about the target's health."""
    if isinstance(exc, InvalidRequestError | ResponseTooLargeError):
        return False
    return exc.retryable or isinstance(
        exc, AuthenticationError | QuotaExceededError | InvalidProviderOutputError
    )


class Router(ModelGroup, EmbeddingGroup):
    """Several targets used as one model: hand it to ``llmroute.request(model=...)``, ``client.stream``,
    ``generate``, tool loops, ``generate_object`` and web-search engines as you would a ``Model``;
    a router of ``EmbeddingModel``s to ``client.embed`` (every vector of one call then comes from
    the one target that answered it: a failure moves the whole call on, never a slice of it).

    ``targets``: ``Target``s, or bare ``Model``s (then tried in list order: priority = position).
    Each call tries the targets by priority (lower first); within a priority, ``strategy`` orders
    them: ``"weighted"`` (random, by ``Target.weight``), ``"least-in-flight"`` (fewest calls open in
    this process) or ``"latency"`` (lowest recent time to first event). It moves on to the next
    after a retryable failure (once the target's own retries are spent), an authentication or
    quota failure, or a context overflow (to a target whose window is larger); it skips, without
    sending, targets that cool down, are rate-limited, cannot carry a hosted tool the request
    uses, or whose context window is too small for it. Never after the first event reached the
    caller. ``response.attempts`` (and ``StepStart.attempts``) list what failed;
    ``StepStart.target`` names who answered.

    Health is kept in ``state`` (default: this process; ``redis_url=`` shares it through Redis,
    ``llmroute[redis]``), under ``router:<namespace or name>:<target>:*``: routers with the same
    namespace and target names share cooldowns and rate-limit memory (the gateway's routes share
    one namespace, so a model failing in one route is skipped in every route). ``seed`` fixes the
    weighted draws (tests)."""

    def __init__(
        self,
        targets: Sequence[Target | Model | EmbeddingModel],
        *,
        name: str = "router",
        strategy: Strategy = "weighted",
        cooldown: Cooldown | None = None,
        state: SharedState | None = None,
        redis_url: str | None = None,
        seed: int | None = None,
        namespace: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(f"name: must be a non-empty string, got {name!r}", param="name")
        if strategy not in _STRATEGIES:
            raise InvalidRequestError(
                f"strategy: expected one of {', '.join(map(repr, _STRATEGIES))}, got {strategy!r}",
                param="strategy",
            )
        if cooldown is not None and not isinstance(cooldown, Cooldown):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"cooldown: expected llmroute.router.Cooldown(...), got {type(cooldown).__name__}",
                param="cooldown",
            )
        if state is not None and not callable(getattr(state, "get_many", None)):
            hint = " (a Redis URL goes in redis_url=)" if isinstance(state, str) else ""
            raise InvalidRequestError(
                f"state: expected a llmroute.state.SharedState, got {type(state).__name__}{hint}",
                param="state",
            )
        if state is not None and redis_url is not None:
            raise InvalidRequestError("pass state= or redis_url=, not both", param="redis_url")
        listed = _targets(targets)
        self.id = name
        self.provider = "router"
        self.strategy: Strategy = strategy
        self.cooldown = cooldown or Cooldown()
        self.state: SharedState = state if state is not None else open_state(redis_url)
        self._rng = random.Random(seed)
        if namespace is not None and (not isinstance(namespace, str) or not namespace):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"namespace: must be a non-empty string, got {namespace!r}", param="namespace"
            )
        prefix = f"router:{namespace or name}:"
        self._slots = tuple(_Slot(self, t, prefix, i) for i, t in enumerate(listed))
        self._targets = tuple(listed)
        self._groups = _groups(self._slots)
        self._models = tuple(s.model for group in self._groups for s in group if isinstance(s.model, Model))
        self._embedders = tuple(
            s.model for group in self._groups for s in group if isinstance(s.model, EmbeddingModel)
        )
        self._mixed = len({s.origin for s in self._slots}) > 1
        self._inflight: dict[str, int] = dict.fromkeys((s.name for s in self._slots), 0)
        self._keys = [k for s in self._slots for k in self._slot_keys(s)]
        self._width = 5 if strategy == "latency" else 4

    def _slot_keys(self, slot: _Slot) -> list[str]:
        keys = [slot.key_cd, slot.key_fails, slot.key_probe, slot.key_limits]
        if self.strategy == "latency":
            keys.append(slot.key_lat)
        return keys

    @property
    def targets(self) -> tuple[Target, ...]:
        """The targets, as given (bare models as the ``Target``s they stand for)."""
        return self._targets

    def models(self) -> tuple[Model, ...]:
        if not self._models:
            raise NoRouteError(
                f"router {self.id!r} holds embedding models: call client.embed(router, inputs), not a chat call"
            )
        return self._models

    def embedding_models(self) -> tuple[EmbeddingModel, ...]:
        return self._embedders

    def target_model(self, name: str) -> Model | EmbeddingModel | None:
        """The model of the target called ``name`` (as ``StepStart.target`` names it)."""
        for slot in self._slots:
            if slot.name == name:
                return slot.target.model
        return None

    def __repr__(self) -> str:
        names = ", ".join(f"{s.name}@{s.target.priority}" for s in self._slots)
        return f"Router({self.id!r}: {names}; {self.strategy}, state={self.state.kind})"

    async def aclose(self) -> None:
        """Close the shared state's connections (when the router opened them)."""
        await self.state.aclose()

    # --- health ---

    async def health(self) -> dict[str, dict[str, Any]]:
        """Each target's health as the router sees it now (cooling down, failure streak, ...)."""
        snapshot = await self._snapshot()
        return {
            s.name: {
                "cooling_down": h.cooling,
                "cooldown_until": h.until or None,
                "failures": h.fails,
                "probing": h.probed,
                "tokens_left": h.tokens_left,
                "in_flight": self._inflight[s.name],
            }
            for s, h in zip(self._slots, snapshot, strict=True)
        }

    async def _snapshot(self) -> list[_Health]:
        values = await self.state.get_many(self._keys)
        w, latency = self._width, self.strategy == "latency"
        return [_Health(values, i * w, latency) for i in range(len(self._slots))]

    async def remember_limits(self, slot: _Slot, limits: RateLimits) -> None:
        """Called by the observing transport: stay away until a limit resets."""
        if limits.blocked_for is not None:
            await self.state.set(slot.key_limits, "0", ttl=limits.blocked_for)
        elif limits.tokens is not None:
            await self.state.set(slot.key_limits, str(limits.tokens), ttl=limits.tokens_for)

    async def _failed(self, slot: _Slot, exc: LLMError, health: _Health) -> None:
        policy, state = self.cooldown, self.state
        if not _counts_against(exc):
            return
        keep = policy.max_seconds * 4 + policy.probe_timeout  # a streak outlives its cooldowns
        if isinstance(exc, AuthenticationError):
            seconds = policy.auth_seconds
            await state.set(slot.key_fails, str(policy.failures), ttl=keep + seconds)
        else:
            streak = int(await state.incr(slot.key_fails, 1, ttl=keep))
            if streak < policy.failures:
                return
            seconds = min(policy.seconds * 2 ** (streak - policy.failures), policy.max_seconds)
            retry_after = getattr(exc, "retry_after", None)
            if isinstance(retry_after, int | float) and retry_after > seconds:
                seconds = float(retry_after)
        await state.set(slot.key_cd, repr(time.time() + seconds), ttl=seconds)
        if health.probed or health.fails >= policy.failures:
            await state.delete(slot.key_probe)
        log.warning(
            "llmroute: router %s: target %s cooling down for %.3gs after %s",
            self.id,
            slot.name,
            seconds,
            type(exc).__name__,
        )

    async def _succeeded(self, slot: _Slot, health: _Health, latency: float) -> None:
        if health.fails or health.probed:
            await self.state.delete(slot.key_fails, slot.key_probe, slot.key_cd)
        if self.strategy == "latency":
            await self.state.ewma(slot.key_lat, latency, ttl=_LATENCY_TTL)

    # --- order ---

    def _order(self, health: list[_Health]) -> list[tuple[_Slot, _Health]]:
        out: list[tuple[_Slot, _Health]] = []
        rng = self._rng
        for group in self._groups:
            if len(group) == 1:
                ranked = group
            elif self.strategy == "weighted":
                # Efraimidis-Spirakis: one draw per target orders the whole group by weight
                ranked = sorted(group, key=lambda s: rng.random() ** (1.0 / s.target.weight), reverse=True)
            elif self.strategy == "least-in-flight":
                ranked = sorted(group, key=lambda s: (self._inflight[s.name], -s.target.weight, rng.random()))
            else:
                ranked = sorted(group, key=lambda s: (health[s.index].latency, rng.random()))
            out.extend((s, health[s.index]) for s in ranked)
        return out

    def _refusal(self, slot: _Slot, health: _Health, request: LLMRequest | None, need: _Need) -> str | None:
        if health.cooling:
            return "cooling down"
        if health.fails >= self.cooldown.failures and health.probed:
            return "being probed by another call"
        if health.tokens_left == 0:
            return "rate-limited (nothing left until the reset)"
        if request is None:  # an embedding call: no tools, no context window to fit
            return None
        reason = slot.cannot_carry(request)
        if reason is not None:
            return reason
        window = slot.window
        if health.tokens_left is not None and need.tokens(request) > health.tokens_left:
            return f"rate-limited ({health.tokens_left} tokens left, ~{need.tokens(request)} needed)"
        if window is not None:
            if need.above is not None and window <= need.above:
                return f"context window {window} is not larger than one that overflowed"
            if need.tokens(request) > window:
                return f"context window {window} < ~{need.tokens(request)} tokens"
        return None

    # --- the call ---

    def run_step(
        self, ctx: Any, request: LLMRequest, index: int, finish: bool, loop: Any = None
    ) -> AsyncGenerator[list[LLMEvent], None]:
        return self._run(ctx, request, index, finish, loop)

    async def _run(
        self, ctx: ExecutionContext, request: LLMRequest, index: int, finish: bool, loop: Any
    ) -> AsyncGenerator[list[LLMEvent], None]:
        self.models()  # an embedding router: NoRouteError, before anything is read
        snapshot = await self._snapshot()
        attempts: list[Attempt] = []
        skipped: list[str] = []
        need = _Need()
        last: LLMError | None = None
        for slot, health in self._order(snapshot):
            reason = await self._admit(slot, health, request, need)
            if reason is not None:
                skipped.append(f"{slot.name}: {reason}")
                continue
            assert isinstance(slot.model, Model)  # a chat router's targets are chat models
            messages = for_origin(request.messages, slot.origin) if self._mixed else request.messages
            sent = msgspec.structs.replace(request, model=slot.model, messages=messages)
            started = time.perf_counter()
            latency = 0.0
            delivered = False
            self._inflight[slot.name] += 1
            try:
                async with aclosing(
                    run_model_step(_context(ctx, slot.target), sent, index, finish, loop)
                ) as batches:
                    async for batch in batches:
                        if not delivered:
                            delivered = True
                            latency = time.perf_counter() - started
                            first = batch[0]
                            if isinstance(first, StepStart):
                                batch[0] = msgspec.structs.replace(  # keeps the route's warnings
                                    first, target=slot.name, attempts=tuple(attempts)
                                )
                        if self._mixed:
                            stamp(batch, slot.origin)
                        yield batch
            except LLMError as exc:
                await self._failed(slot, exc, health)
                exc.route_attempts = tuple(attempts)
                exc.route_target = slot.name
                if delivered or not _moves_on(exc):
                    raise
                attempts.append(_attempt(slot, exc, started))
                if isinstance(exc, ContextOverflowError):
                    need.overflowed(slot.window)
                last = exc
                continue
            finally:
                self._inflight[slot.name] -= 1
            await self._succeeded(slot, health, latency)
            return
        if last is not None:
            raise last  # its route_attempts: the targets that failed before it
        raise self._none_left(skipped, snapshot)

    async def _admit(
        self, slot: _Slot, health: _Health, request: LLMRequest | None, need: _Need
    ) -> str | None:
        """Why ``slot`` is skipped for this call, or ``None`` (then a half-open target's probe
        lease is this call's: one call across processes probes it, the others skip it)."""
        reason = self._refusal(slot, health, request, need)
        if reason is None and health.fails >= self.cooldown.failures:
            lease = await self.state.set_if_absent(slot.key_probe, "1", ttl=self.cooldown.probe_timeout)
            if not lease:
                return "being probed by another call"
            health.probed = True
        return reason

    def _none_left(self, skipped: list[str], snapshot: list[_Health]) -> NoRouteError:
        error = NoRouteError(
            f"router {self.id!r}: no target can take this request now ({'; '.join(skipped)})",
            retryable=True,
            code="no_target_available",
        )
        ends = [h.until for h in snapshot if h.cooling and h.until]
        error.retry_after = max(0.0, min(ends) - time.time()) if ends else None  # pyright: ignore[reportAttributeAccessIssue]
        return error

    # --- an embedding call ---

    async def run_embed(
        self,
        ctx: Any,
        inputs: tuple[str, ...],
        dimensions: int | None,
        input_type: InputType | None,
        limit: int,
    ) -> EmbeddingResponse:
        """The whole call on one target (all its slices), moving on as a chat call does."""
        from ..route.embed_executor import run_embed

        if not self._embedders:
            raise NoRouteError(f"router {self.id!r} holds chat models: client.embed needs embedding models")
        snapshot = await self._snapshot()
        attempts: list[Attempt] = []
        skipped: list[str] = []
        last: LLMError | None = None
        for slot, health in self._order(snapshot):
            reason = await self._admit(slot, health, None, _Need())
            if reason is not None:
                skipped.append(f"{slot.name}: {reason}")
                continue
            model = slot.model
            assert isinstance(model, EmbeddingModel)
            started = time.perf_counter()
            self._inflight[slot.name] += 1
            try:
                options, warnings = resolve_options(model, dimensions, input_type)
                result = await run_embed(_context(ctx, slot.target), model, inputs, options, warnings, limit)
            except LLMError as exc:
                await self._failed(slot, exc, health)
                exc.route_attempts = tuple(attempts)
                exc.route_target = slot.name
                if not _moves_on(exc):
                    raise
                attempts.append(_attempt(slot, exc, started))
                last = exc
                continue
            finally:
                self._inflight[slot.name] -= 1
            await self._succeeded(slot, health, time.perf_counter() - started)
            return msgspec.structs.replace(result, target=slot.name, attempts=tuple(attempts))
        if last is not None:
            raise last
        raise self._none_left(skipped, snapshot)


class _Need:
    """The request's estimated size (computed once, when some target's limit makes it matter) and
    the window a context overflow showed too small."""

    __slots__ = ("above", "estimate")

    def __init__(self) -> None:
        self.estimate: int | None = None
        self.above: int | None = None

    def tokens(self, request: LLMRequest) -> int:
        if self.estimate is None:
            self.estimate = estimate_tokens(request)
        return self.estimate

    def overflowed(self, window: int | None) -> None:
        if window is not None:
            self.above = max(self.above or 0, window)


def _context(ctx: ExecutionContext, target: Target) -> ExecutionContext:
    if target.retry is None and target.timeouts is None:
        return ctx
    return ExecutionContext(
        ctx.transports,
        target.timeouts or ctx.timeouts,
        target.retry or ctx.retry,
        ctx.max_error_bytes,
        sleep=ctx.sleep,
        max_response_bytes=ctx.max_response_bytes,
        max_connections=ctx.max_connections,
        hooks=ctx.hooks,
    )


def _attempt(slot: _Slot, exc: LLMError, started: float) -> Attempt:
    message = exc.message if len(exc.message) <= _MESSAGE_CAP else exc.message[:_MESSAGE_CAP] + "..."
    return Attempt(
        target=slot.name,
        model=slot.model.id,
        provider=slot.model.provider,
        error=type(exc).__name__,
        message=message,
        status=exc.http.status if exc.http is not None else None,
        at=time.time(),
        elapsed=time.perf_counter() - started,
    )


def _targets(targets: Sequence[Target | Model | EmbeddingModel]) -> list[Target]:
    single = isinstance(targets, Target | Model | EmbeddingModel)
    if single or not isinstance(targets, Sequence) or not targets:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(
            "targets: expected a non-empty list of llmroute.Target (or Model) values", param="targets"
        )
    out: list[Target] = []
    for i, item in enumerate(targets):
        if isinstance(item, Model | EmbeddingModel):
            out.append(Target(item, priority=i))
        elif isinstance(item, Target):  # pyright: ignore[reportUnnecessaryIsInstance]
            out.append(item)
        else:
            raise InvalidRequestError(
                f"targets[{i}]: expected llmroute.Target(model, ...), a Model or an EmbeddingModel, "
                f"got {type(item).__name__}",
                param=f"targets[{i}]",
            )
    kinds = {isinstance(t.model, EmbeddingModel) for t in out}
    if len(kinds) > 1:
        raise InvalidRequestError(
            "targets: mixes chat models and embedding models; a router's targets are all one kind",
            param="targets",
        )
    seen: set[str] = set()
    for i, target in enumerate(out):
        if target.key in seen:
            if target.name is not None:
                raise InvalidRequestError(
                    f"targets[{i}]: a second target named {target.key!r}", param=f"targets[{i}]"
                )
            # the same model twice (two deployments): told apart by position, stable across processes
            out[i] = target = msgspec.structs.replace(target, name=f"{target.key}#{i}")
        seen.add(target.key)
    return out


def _groups(slots: Sequence[_Slot]) -> tuple[tuple[_Slot, ...], ...]:
    by: dict[int, list[_Slot]] = {}
    for slot in slots:
        by.setdefault(slot.target.priority, []).append(slot)
    return tuple(tuple(by[p]) for p in sorted(by))
