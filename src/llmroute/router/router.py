"""``Router``: one Model-like value over several targets (see ``llmroute.router``)."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any, Literal, get_args

import anyio
import msgspec

from ..route.embedding import EmbeddingGroup, EmbeddingModel, resolve_options
from ..route.executor import ExecutionContext, run_model_step
from ..route.hooks import HealthChange, HookRunner
from ..route.model import Model, ModelGroup
from ..route.policy import RetryPolicy
from ..schema.attempt import Attempt
from ..schema.embedding import EmbeddingResponse, InputType
from ..schema.errors import ContextOverflowError, InvalidRequestError, LLMError, NoRouteError
from ..schema.events import LLMEvent, StepFinish, StepStart
from ..schema.request import LLMRequest
from ..schema.usage import Usage
from ..state import SharedState, open_state
from . import affinity as sessions
from .affinity import Affinity, Session, Sessions, check_affinity, explain
from .failover import cheapest_first
from .health import Incident, moves_on, parse_float, verdict
from .history import for_origin, stamp
from .latency import EXPLORE
from .limits import TOKENS_WATCHED, RateLimits, estimate_tokens
from .slot import CURRENT, Call, Slot
from .target import Cooldown, Target, listed_targets

__all__ = ["Router", "Strategy"]

log = logging.getLogger("llmroute.router")

Strategy = Literal["weighted", "least-in-flight", "latency"]
_STRATEGIES: tuple[str, ...] = get_args(Strategy)
_MESSAGE_CAP = 300
_POLL = 0.25  # a wait whose end is unknown (a probe, a cap) looks again this often
_MINUTE = 60.0


class _Health:
    """One target's shared health as read at the start of a call (wall-clock times)."""

    __slots__ = ("fails", "incident", "limit_until", "probe_until", "tokens_left")

    def __init__(self, values: Sequence[str | None], at: int) -> None:
        self.incident = Incident.parse(values[at])
        fails = parse_float(values[at + 1])
        self.fails = int(fails) if fails else 0
        probe = values[at + 2]
        self.probe_until = parse_float(probe) if probe is not None else None
        if probe is not None and self.probe_until is None:
            self.probe_until = 0.0  # held, end unknown
        self.limit_until: float | None = None
        self.tokens_left: int | None = None
        limits = values[at + 3]
        if limits:
            until, _, tokens = limits.partition(" ")
            end, left = parse_float(until), parse_float(tokens)
            if end is not None and left is not None:
                self.limit_until, self.tokens_left = end, int(left)

    def half_open(self, now: float) -> bool:
        return self.incident is not None and now >= self.incident.until


class _Block:
    """Why a target cannot take the call now: ``until`` (wall clock) when its block ends at the
    latest; ``settles``: it may end any moment before (a probe answering, a call ending);
    ``permanent`` when it never could."""

    __slots__ = ("kind", "permanent", "reason", "settles", "until")

    def __init__(
        self, reason: str, until: float | None = None, kind: str = "", permanent: bool = False
    ) -> None:
        self.reason = reason
        self.until = until
        self.kind = kind
        self.permanent = permanent
        self.settles = kind in ("probe", "cap")


class _Pick:
    """A target chosen for the next attempt."""

    __slots__ = ("fallback", "health", "probe", "slot", "started", "tokens")

    def __init__(
        self, slot: Slot, health: _Health, started: float, probe: bool, fallback: bool, tokens: int
    ) -> None:
        self.slot = slot
        self.health = health
        self.started = started  # wall clock: when the health this pick was made on was read
        self.probe = probe  # holds the half-open lease (or the last resort's)
        self.fallback = fallback  # another target could take the call now
        self.tokens = tokens  # the estimate reserved in the tpm budget (0: none)


class _Run:
    """One routed call across its attempts."""

    __slots__ = (
        "attempts",
        "deadline",
        "last",
        "need",
        "pinned",
        "recorded",
        "session",
        "skipped",
        "tried",
        "usage",
    )

    def __init__(self, session: Session | None = None) -> None:
        self.attempts: list[Attempt] = []
        self.tried: set[int] = set()
        self.need = _Need()
        self.last: LLMError | None = None
        self.deadline: float | None = None  # monotonic: how long the call may wait for a target
        self.session = session  # with affinity: the call's session (its record read with the health)
        self.pinned: Slot | None = None  # the target the session is pinned to
        self.skipped: Attempt | None = None  # the pinned target, passed over without sending
        self.usage: Usage | None = None  # the answered step's usage (for the session's record)
        self.recorded = False  # the session's record was written


class Router(ModelGroup, EmbeddingGroup):
    """Several targets used as one model: hand it to ``llmroute.request(model=...)``, ``client.stream``,
    ``generate``, tool loops, ``generate_object`` and web-search engines as you would a ``Model``;
    a router of ``EmbeddingModel``s to ``client.embed`` (every vector of one call then comes from
    the one target that answered it: a failure moves the whole call on, never a slice of it).

    ``targets``: ``Target``s, or bare ``Model``s (then tried in list order: priority = position).
    Each call tries the targets by priority (lower first); within a priority, ``strategy`` orders
    them: ``"weighted"`` (random, by ``Target.weight``), ``"least-in-flight"`` (fewest calls open in
    this process) or ``"latency"`` (lowest time to first event, see ``llmroute.router.latency``).
    It moves on to the next after a retryable failure (once the target's own retries are spent;
    a 429 at once when another target can take the call), an authentication or quota failure, or
    a context overflow (to a target whose window is larger); it skips, without sending, targets
    that cool down, are rate-limited, at their ``max_in_flight``, over their ``rpm``/``tpm``, cannot
    carry a hosted tool the request uses, or whose context window is too small for it. Never
    after the first event reached the caller. ``response.attempts`` (and ``StepStart.attempts``)
    list what failed; ``StepStart.target`` names who answered.

    When no target can take a call now, one call probes the target whose first cooldown ends
    first (a blip is not an outage) and the others wait for it, or for the first block to end, up
    to ``max_wait`` seconds (within the call's ``total`` deadline); then ``NoRouteError``
    (``retryable``, ``retry_after``). A request no target could ever take is a ``NoRouteError``
    that is not retryable, naming each target's reason.

    Health is kept in ``state`` (default: this process; ``redis_url=`` shares it through Redis,
    ``llmroute[redis]``), under ``router:<namespace or name>:<target>:*``: routers with the same
    namespace and target names share cooldowns and rate-limit memory (the gateway's routes share
    one namespace, so a model failing in one route is skipped in every route). Latency, in-flight
    counts and the failure-rate window are this process's own. ``seed`` fixes the random draws
    (tests)."""

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
        max_wait: float = 5.0,
        affinity: bool | Affinity = False,
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
        if namespace is not None and (not isinstance(namespace, str) or not namespace):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"namespace: must be a non-empty string, got {namespace!r}", param="namespace"
            )
        wait: Any = max_wait
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait < float("inf"):
            raise InvalidRequestError(
                f"max_wait: must be a finite number of seconds >= 0, got {max_wait!r}", param="max_wait"
            )
        self.affinity = check_affinity(affinity)
        listed = listed_targets(targets)
        self.id = name
        self.provider = "router"
        self.strategy: Strategy = strategy
        self.cooldown = cooldown or Cooldown()
        self.max_wait = float(max_wait)
        self.state: SharedState = state if state is not None else open_state(redis_url)
        self._rng = random.Random(seed)
        prefix = f"router:{namespace or name}:"
        self._slots = tuple(Slot(self, t, prefix, i) for i, t in enumerate(listed))
        self._by_name = {s.name: s for s in self._slots}
        self._sessions = (
            Sessions(self.affinity, f"{prefix}pin:{name}:") if self.affinity is not None else None
        )
        self._targets = tuple(listed)
        self._groups = _groups(self._slots)
        self._models = tuple(s.model for group in self._groups for s in group if isinstance(s.model, Model))
        self._embedders = tuple(
            s.model for group in self._groups for s in group if isinstance(s.model, EmbeddingModel)
        )
        self._mixed = len({s.origin for s in self._slots}) > 1
        self._keys = [k for s in self._slots for k in (s.key_cd, s.key_fails, s.key_probe, s.key_limits)]
        self._no_429: dict[RetryPolicy, RetryPolicy] = {}
        self._changed: anyio.Event | None = None  # set when a call ends while others wait
        self._waiting = 0
        self.transitions: dict[tuple[str, str], int] = {}
        """How often each target entered each state (``(target, "cooling" | "healthy" |
        "rate-limited")`` -> count), in this process: the router's metrics."""

    @property
    def targets(self) -> tuple[Target, ...]:
        """The targets, as given (bare models as the ``Target``s they stand for)."""
        return self._targets

    def models(self) -> tuple[Model, ...]:
        if not self._models:
            raise NoRouteError(
                f"router {self.id!r} holds embedding models: call client.embed(router, inputs)"
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
        """Each target's health as the router sees it now: shared (cooldown, streak, probe,
        rate-limit block) and this process's own (in flight, latency, failure window)."""
        snapshot = await self._snapshot()
        now, mono = time.time(), time.monotonic()
        out: dict[str, dict[str, Any]] = {}
        for s, h in zip(self._slots, snapshot, strict=True):
            incident = h.incident
            calls, fails = s.failures.counts(mono)
            budget = s.budget
            budget.refusal(mono, None)  # drops an expired count
            out[s.name] = {
                "cooling_down": incident is not None and now < incident.until,
                "cooldown_until": incident.until if incident is not None else None,
                "half_open": h.half_open(now),
                "level": incident.level if incident is not None else 0,
                "failures": h.fails,
                "probing": h.probe_until is not None,
                "rate_limited_until": h.limit_until if h.tokens_left == 0 else None,
                "tokens_left": h.tokens_left,
                "requests_left": None if budget.requests is None else max(0, int(budget.requests)),
                "in_flight": s.in_flight,
                "latency": s.latency.mean,
                "window": {"calls": calls, "failures": fails},
                "transitions": {k: n for (t, k), n in self.transitions.items() if t == s.name},
            }
        return out

    async def _snapshot(self, run: _Run | None = None) -> list[_Health]:
        """Every target's health, and (the call's first look, with affinity) its session's
        record, in one read of the shared state."""
        session = run.session if run is not None else None
        if session is None or session.looked or run is None:
            values = await self.state.get_many(self._keys)
        else:
            values = await self.state.get_many([*self._keys, session.key])
            assert self._sessions is not None
            self._sessions.read(session, values[-1])
            if session.previous is not None:
                run.pinned = self._by_name.get(session.pinned(sessions.now()) or "")
        return [_Health(values, i * 4) for i in range(len(self._slots))]

    async def remember_limits(
        self, slot: Slot, limits: RateLimits, seq: int, hooks: HookRunner | None = None
    ) -> None:
        """Called by the observing transport: stay away until a limit resets; count down what is left."""
        slot.budget.read(limits, seq, time.monotonic())
        if limits.blocked_for is not None:
            await self._block(slot, limits.blocked_for, hooks, "rate-limit headers")
        elif limits.tokens is not None and limits.tokens < TOKENS_WATCHED:
            until = time.time() + limits.tokens_for
            await self.state.set(slot.key_limits, f"{until!r} {limits.tokens}", ttl=limits.tokens_for)

    async def _block(self, slot: Slot, seconds: float, hooks: HookRunner | None, reason: str) -> None:
        seconds = min(seconds, self.cooldown.max_seconds)
        slot.blocked_at = time.monotonic()
        until = time.time() + seconds
        await self.state.set(slot.key_limits, f"{until!r} 0", ttl=seconds)
        await self._changed_to(slot, "rate-limited", reason, seconds, 0, hooks)

    async def _changed_to(
        self, slot: Slot, state: str, reason: str, seconds: float, level: int, hooks: HookRunner | None
    ) -> None:
        key = (slot.name, state)
        self.transitions[key] = self.transitions.get(key, 0) + 1
        if state == "cooling":
            log.warning(
                "llmroute: router %s: target %s cooling down for %.3gs after %s (level %d)",
                self.id,
                slot.name,
                seconds,
                reason,
                level,
            )
        elif state == "healthy":
            log.info("llmroute: router %s: target %s is healthy again (%s)", self.id, slot.name, reason)
        if hooks is not None and hooks.by_name["on_health"]:
            await hooks.health(HealthChange(self.id, slot.name, state, reason, seconds, level))

    async def _ok(self, pick: _Pick, hooks: HookRunner | None) -> None:
        """The target answered (a success, or any answer that shows it alive)."""
        slot, health = pick.slot, pick.health
        slot.failures.add(time.monotonic(), False)
        if health.incident is not None:  # this call was sent in an incident: a probe, and it ended it
            await self.state.delete(slot.key_cd, slot.key_fails, slot.key_probe)
            slot.failures.clear()
            await self._changed_to(slot, "healthy", "probe answered", 0.0, 0, hooks)
        elif health.fails or (slot.failed_at and slot.failed_at >= _mono_of(pick.started)):
            await self.state.delete(slot.key_fails)  # the streak is broken

    async def _failed(self, pick: _Pick, exc: LLMError, hooks: HookRunner | None) -> None:
        """A failure that counts (``Cooldown``'s per-class policy said so)."""
        slot, policy, state = pick.slot, self.cooldown, self.state
        mono, now = time.monotonic(), time.time()
        slot.failures.add(mono, True)
        slot.failed_at = mono
        hint = getattr(exc, "retry_after", None)
        hint = float(hint) if isinstance(hint, int | float) else None
        current = Incident.parse(await state.get(slot.key_cd))
        if current is not None:
            if current.since >= pick.started:
                return  # this call was in flight when the incident began: part of it
            # sent in the incident (a probe): a failed probe makes the cooldown longer
            incident = Incident.start(policy, current.kind, now, current.level + 1, hint)
            await state.set(slot.key_cd, incident.encode(), ttl=incident.ttl(now))
            await self._changed_to(
                slot, "cooling", type(exc).__name__, incident.until - now, incident.level, hooks
            )
            return
        streak = int(await state.incr(slot.key_fails, 1, ttl=max(_MINUTE, 6 * policy.window)))
        rate = slot.failures.tripped(mono, policy)
        if streak < policy.failures and not rate:
            return
        incident = Incident.start(policy, "failure", now, 0, hint)
        if await state.set_if_absent(slot.key_cd, incident.encode(), ttl=incident.ttl(now)):
            slot.failures.clear()
            reason = type(exc).__name__ + ("" if streak >= policy.failures else " (failure rate)")
            await self._changed_to(slot, "cooling", reason, incident.until - now, 0, hooks)

    async def _refused_credentials(self, pick: _Pick, exc: LLMError, hooks: HookRunner | None) -> None:
        """An authentication or quota failure: cooled down at once."""
        slot, now = pick.slot, time.time()
        current = Incident.parse(await self.state.get(slot.key_cd))
        if current is not None and current.since >= pick.started:
            return
        incident = Incident.start(self.cooldown, "auth", now)
        await self.state.set(slot.key_cd, incident.encode(), ttl=incident.ttl(now))
        await self._changed_to(slot, "cooling", type(exc).__name__, incident.until - now, 0, hooks)

    def _noted(self, pick: _Pick, exc: LLMError | None, delivered: bool) -> bool:
        """Counts what the attempt's end says in this process; true when the shared state must
        hear of it too (``_ended``): anything but a plain answer from a healthy target."""
        if exc is not None or pick.probe or pick.tokens or pick.health.incident is not None:
            return True
        if not delivered:
            return False  # cancelled before any event: it says nothing
        slot = pick.slot
        if pick.health.fails or (slot.failed_at and slot.failed_at >= _mono_of(pick.started)):
            return True
        slot.failures.add(time.monotonic(), False)
        return False

    async def _ended(self, pick: _Pick, exc: LLMError | None, alive: bool, hooks: HookRunner | None) -> None:
        """What the attempt's end says about the target, written where the router keeps it
        (``alive``: without an error, whether an event arrived)."""
        if exc is None:
            if alive:
                await self._ok(pick, hooks)
            return
        kind = verdict(exc, self.cooldown)
        if kind == "failure":
            await self._failed(pick, exc, hooks)
        elif kind == "auth":
            await self._refused_credentials(pick, exc, hooks)
        elif kind == "rate-limit" and pick.slot.blocked_at < _mono_of(pick.started):
            # (its headers, read as the answer arrived, blocked it already when they said how long)
            hint = getattr(exc, "retry_after", None)
            seconds = (
                float(hint)
                if isinstance(hint, int | float) and hint > 0
                else self.cooldown.rate_limit_seconds
            )
            await self._block(pick.slot, seconds, hooks, "429")
        elif kind == "alive":
            await self._ok(pick, hooks)

    # --- order ---

    def _order(self, health: list[_Health], request: LLMRequest | None) -> list[Slot]:
        """Every target in the order this call tries them: by priority, then ``strategy`` within a
        priority. (``request`` is for orders that depend on it.)"""
        out: list[Slot] = []
        rng = self._rng
        now = time.monotonic()
        for group in self._groups:
            if len(group) == 1:
                out.extend(group)
            elif self.strategy == "weighted":
                out.extend(_by_weight(group, rng))
            elif self.strategy == "least-in-flight":
                out.extend(sorted(group, key=lambda s: (s.in_flight, -s.target.weight, rng.random())))
            else:
                known = [s.latency.mean for s in group if s.latency.mean is not None]
                prior = min(known) if known else 0.0
                ranked = sorted(group, key=lambda s: (s.latency.score(now, prior), rng.random()))
                if rng.random() < EXPLORE:  # keep every estimate fresh: a random one first
                    chosen = _by_weight(group, rng)[0]
                    ranked.remove(chosen)
                    ranked.insert(0, chosen)
                out.extend(ranked)
        return out

    def _blocked(
        self, slot: Slot, health: _Health, request: LLMRequest | None, need: _Need, now: float
    ) -> _Block | None:
        """Why ``slot`` cannot take the request now (``None``: it can), permanent reasons first
        (``request`` ``None``: an embedding call, which carries no tools and fills no window)."""
        reason = slot.cannot_carry(request) if request is not None else None
        if reason is not None:
            return _Block(reason, permanent=True)
        window = slot.context if request is not None else None
        if window is not None:
            if need.above is not None and window <= need.above:
                return _Block(
                    f"context window {window} is not larger than one that overflowed", permanent=True
                )
            if need.tokens(request) > window:
                return _Block(f"context window {window} < ~{need.tokens(request)} tokens", permanent=True)
        incident = health.incident
        if incident is not None:
            if now < incident.until:
                why = " after an authentication or quota failure" if incident.kind == "auth" else ""
                if incident.level:
                    why = f" ({incident.level} failed probes)" if incident.level > 1 else " (a failed probe)"
                return _Block(f"cooling down for {incident.until - now:.3g}s{why}", incident.until, "cooling")
            if health.probe_until is not None:
                return _Block("being probed by another call", health.probe_until or None, "probe")
        if health.limit_until is not None and health.tokens_left is not None:
            if health.tokens_left <= 0:
                return _Block("rate-limited (nothing left until the reset)", health.limit_until, "limit")
            if need.tokens(request) > health.tokens_left:
                return _Block(
                    f"rate-limited ({health.tokens_left} tokens left, ~{need.tokens(request)} needed)",
                    health.limit_until,
                    "limit",
                )
        mono = time.monotonic()
        budget = slot.budget
        refused = budget.refusal(mono, need.tokens(request) if budget.counts_tokens(mono) else None)
        if refused is not None:
            return _Block(refused[0], now + (refused[1] - mono), "limit")
        cap = slot.target.max_in_flight
        if cap is not None and slot.in_flight >= cap:
            return _Block(f"at its cap of {cap} calls in flight", None, "cap")
        return None

    async def _admit(
        self, slot: Slot, request: LLMRequest | None, need: _Need, now: float
    ) -> tuple[_Block | None, int]:
        """The operator's own budgets (``Target.rpm``/``tpm``): a unit (and the estimate) taken in
        the shared window, or the block until they fit."""
        target, state = slot.target, self.state
        reserved = 0
        if target.tpm is not None:
            reserved = need.tokens(request)
            counted = await state.window(slot.key_tpm, reserved, _MINUTE, limit=target.tpm)
            if not counted.allowed:
                never = reserved > target.tpm
                reason = f"over its budget of {target.tpm} tokens a minute (~{reserved} needed)"
                return _Block(reason, None if never else now + counted.retry_after, "limit", never), 0
        if target.rpm is not None:
            counted = await state.window(slot.key_rpm, 1, _MINUTE, limit=target.rpm)
            if not counted.allowed:
                if reserved:
                    await state.window(slot.key_tpm, -reserved, _MINUTE)
                reason = f"over its budget of {target.rpm} requests a minute"
                return _Block(reason, now + counted.retry_after, "limit"), 0
        return None, reserved

    async def _picks(
        self, request: LLMRequest | None, run: _Run, ctx: ExecutionContext
    ) -> AsyncGenerator[_Pick, None]:
        """The targets to try, one at a time, as the call goes: the open ones in order; when none
        is, the last resort, then waiting; ``NoRouteError`` when nothing will do."""
        while True:
            started = time.time()
            snapshot = await self._snapshot(run)
            order = [s for s in self._order(snapshot, request) if s.index not in run.tried]
            pinned = run.pinned
            if pinned is not None and pinned.index not in run.tried:
                order.remove(pinned)
                order.insert(0, pinned)
            blocks = [self._blocked(s, snapshot[s.index], request, run.need, started) for s in order]
            if (
                pinned is not None
                and request is not None
                and (order[:1] != [pinned] or blocks[0] is not None)
            ):
                order, blocks = self._moving(run, order, blocks, request)
            moving = False
            for i, slot in enumerate(order):
                if blocks[i] is not None:
                    continue
                health = snapshot[slot.index]
                probe = False
                if health.half_open(started):  # one call (across processes) probes it
                    lease_end = time.time() + self.cooldown.probe_timeout
                    if not await self.state.set_if_absent(
                        slot.key_probe, repr(lease_end), ttl=self.cooldown.probe_timeout
                    ):
                        blocks[i] = _Block("being probed by another call", None, "probe")
                        continue
                    probe = True
                blocks[i], reserved = await self._admit(slot, request, run.need, started)
                if blocks[i] is not None:
                    if probe:
                        await self.state.delete(slot.key_probe)
                    continue
                fallback = any(b is None for b in blocks[i + 1 :])
                run.tried.add(slot.index)
                if pinned is not None and slot is not pinned:
                    self._moved(run, slot)
                yield _Pick(slot, health, started, probe, fallback, reserved)
                if run.last is None:
                    return  # answered (or the error ended the call)
                if slot is pinned:
                    moving = True  # the pin failed: the others, in a moving session's order
                    break
            if moving:
                continue
            if run.last is not None:
                return  # every target that could be tried failed: the last error is raised
            reasons = {s.name: b.reason for s, b in zip(order, blocks, strict=True) if b is not None}
            transient = [
                (s, b) for s, b in zip(order, blocks, strict=True) if b is not None and not b.permanent
            ]
            if not transient:
                raise NoRouteError(
                    f"router {self.id!r}: no target can take this request "
                    f"({'; '.join(f'{k}: {v}' for k, v in reasons.items())})",
                    retryable=False,
                    code="no_capable_target",
                    reasons=reasons,
                )
            # the last resort: one call probes the target whose first cooldown ends first
            cooling = [
                (b.until or 0.0, s)
                for s, b in transient
                if b.kind == "cooling"
                and (incident := snapshot[s.index].incident) is not None
                and incident.level == 0
                and incident.kind == "failure"
            ]
            if cooling:
                _, slot = min(cooling, key=lambda x: x[0])
                lease_end = time.time() + self.cooldown.probe_timeout
                if await self.state.set_if_absent(
                    slot.key_probe, repr(lease_end), ttl=self.cooldown.probe_timeout
                ):
                    blocked, reserved = await self._admit(slot, request, run.need, started)
                    if blocked is None:
                        run.tried.add(slot.index)
                        if pinned is not None and slot is not pinned:
                            self._moved(run, slot)
                        yield _Pick(slot, snapshot[slot.index], started, True, False, reserved)
                        return
                    await self.state.delete(slot.key_probe)
            await self._wait_or_raise(run, ctx, reasons, [b for _, b in transient])

    def _moving(
        self, run: _Run, order: list[Slot], blocks: list[_Block | None], request: LLMRequest
    ) -> tuple[list[Slot], list[_Block | None]]:
        """The session's pinned target failed, or cannot take the call: the others in the order
        a moving session tries them (the cheapest cold call first, within a priority whose
        weights are equal), the pinned one, when blocked, noted as skipped."""
        pinned = run.pinned
        assert pinned is not None
        head: list[tuple[Slot, _Block | None]] = []
        rest = list(zip(order, blocks, strict=True))
        if order[:1] == [pinned]:
            head, rest = rest[:1], rest[1:]
            block = blocks[0]
            if block is not None and run.skipped is None:
                run.skipped = Attempt(
                    target=pinned.name,
                    model=pinned.model.id,
                    provider=pinned.model.provider,
                    error="Skipped",
                    message=f"pinned, but {block.reason}",
                    at=time.time(),
                    pinned=True,
                )
        pairs = head + cheapest_first(rest, request, run.need.tokens(request))
        return [s for s, _ in pairs], [b for _, b in pairs]

    def _moved(self, run: _Run, slot: Slot) -> None:
        """The session leaves its pinned target for ``slot``: reported in ``attempts`` and logged."""
        pinned = run.pinned
        assert pinned is not None
        if run.skipped is not None:
            run.attempts.append(run.skipped)
            run.skipped = None
        why = run.attempts[-1].message if run.attempts else "it cannot take the call"
        log.info(
            "llmroute: router %s: a session moves from %s to %s (%s)", self.id, pinned.name, slot.name, why
        )

    async def _wait_or_raise(
        self, run: _Run, ctx: ExecutionContext, reasons: dict[str, str], blocks: list[_Block]
    ) -> None:
        """Wait for the first block to end, a probe to answer or a call to end, within the call's
        ``max_wait`` (and ``total`` deadline); or raise the retryable ``NoRouteError``."""
        mono, now = time.monotonic(), time.time()
        if run.deadline is None:
            total = ctx.timeouts.total
            run.deadline = mono + (self.max_wait if total is None else min(self.max_wait, total))
        left = run.deadline - mono
        known = [max(0.0, b.until - now) for b in blocks if b.until is not None]
        first = min(known) if known else None  # the earliest end of any block (at the latest)
        fixed = [max(0.0, b.until - now) for b in blocks if b.until is not None and not b.settles]
        soonest = min(fixed) if fixed else None  # the earliest end known to be one
        unknown = len(fixed) < len(blocks)  # a probe or a cap: it may end any moment
        if left <= 0 or (not unknown and soonest is not None and soonest > left):
            raise NoRouteError(
                f"router {self.id!r}: no target can take this request now "
                f"({'; '.join(f'{k}: {v}' for k, v in reasons.items())})",
                retryable=True,
                code="no_target_available",
                retry_after=first,
                reasons=reasons,
            )
        seconds = left
        if soonest is not None:
            seconds = min(seconds, soonest + 0.001)
        if unknown:
            seconds = min(seconds, _POLL)
        changed = self._changed
        if changed is None:
            changed = self._changed = anyio.Event()
        self._waiting += 1
        try:
            with anyio.move_on_after(seconds):
                await changed.wait()
        finally:
            self._waiting -= 1

    async def _step_finished(self, batch: list[LLMEvent], run: _Run, slot: Slot) -> None:
        """At the step's ``step-finish`` (the batch's last event, or the one before ``finish``):
        the cache miss it shows named on it, and the session's record written (its pin) before
        the caller sees the step end and sends the next."""
        session = run.session
        assert session is not None
        for i in range(len(batch) - 1, max(len(batch) - 3, -1), -1):
            event = batch[i]
            if isinstance(event, StepFinish):
                run.usage = event.usage
                miss = explain(session, slot.name, event.usage, sessions.now())
                if miss is not None:
                    batch[i] = msgspec.structs.replace(event, cache_miss=miss)
                    log.info("llmroute: router %s: cache miss (%s): %s", self.id, miss.reason, miss.message)
                await self._record(run, slot)
                return

    async def _record(self, run: _Run, slot: Slot) -> None:
        """The session's record: ``slot`` holds it now (and what its cache holds)."""
        session = run.session
        assert session is not None
        run.recorded = True
        record = session.record(slot.name, sessions.now(), run.usage)
        value = record.encode()
        await self.state.set(session.key, value, ttl=2 * session.ttl)
        assert self._sessions is not None
        self._sessions.wrote(session, value, record)

    def _signal(self) -> None:
        changed = self._changed
        if changed is not None and self._waiting:
            self._changed = None
            changed.set()

    def _context(self, ctx: ExecutionContext, pick: _Pick) -> ExecutionContext:
        target = pick.slot.target
        retry = target.retry or ctx.retry
        if pick.probe:
            retry = _NO_RETRY  # a probe asks once: a dead target costs one request
        elif pick.fallback and 429 in retry.statuses:  # another target can take it: move on at once
            moved = self._no_429.get(retry)
            if moved is None:
                moved = self._no_429[retry] = msgspec.structs.replace(retry, statuses=retry.statuses - {429})
            retry = moved
        if retry is ctx.retry and target.timeouts is None:
            return ctx
        return ExecutionContext(
            ctx.transports,
            target.timeouts or ctx.timeouts,
            retry,
            ctx.max_error_bytes,
            sleep=ctx.sleep,
            max_response_bytes=ctx.max_response_bytes,
            max_connections=ctx.max_connections,
            hooks=ctx.hooks,
        )

    # --- the call ---

    def run_step(
        self, ctx: Any, request: LLMRequest, index: int, finish: bool, loop: Any = None
    ) -> AsyncGenerator[list[LLMEvent], None]:
        return self._run(ctx, request, index, finish, loop)

    async def _run(
        self, ctx: ExecutionContext, request: LLMRequest, index: int, finish: bool, loop: Any
    ) -> AsyncGenerator[list[LLMEvent], None]:
        self.models()  # an embedding router: NoRouteError, before anything is read
        sessions = self._sessions
        run = _Run(sessions.open(request) if sessions is not None else None)
        session = run.session
        hooks = ctx.hooks
        async with aclosing(self._picks(request, run, ctx)) as picks:
            async for pick in picks:
                slot = pick.slot
                assert isinstance(slot.model, Model)  # a chat router's targets are chat models
                run.last = None
                messages = for_origin(request.messages, slot.origin) if self._mixed else request.messages
                sent = msgspec.structs.replace(request, model=slot.model, messages=messages)
                budget = slot.budget
                counts = budget.counts_tokens(time.monotonic())
                call = Call(slot, run.need.tokens(request) if counts else None, hooks)
                started = time.perf_counter()
                delivered = False
                error: LLMError | None = None
                used = 0
                slot.in_flight += 1
                CURRENT.set(call)
                try:
                    async with aclosing(
                        run_model_step(self._context(ctx, pick), sent, index, finish, loop)
                    ) as batches:
                        async for batch in batches:
                            if not delivered:
                                delivered = True
                                CURRENT.set(None)
                                if call.pending:
                                    slot.latency.answered(call.pending, time.monotonic())
                                    call.pending = 0
                                first = batch[0]
                                if isinstance(first, StepStart):
                                    batch[0] = msgspec.structs.replace(  # keeps the route's warnings
                                        first, target=slot.name, attempts=tuple(run.attempts)
                                    )
                            if pick.tokens:
                                used = _used(batch, used)
                            if session is not None and not run.recorded:
                                await self._step_finished(batch, run, slot)
                            if self._mixed:
                                stamp(batch, slot.origin)
                            yield batch
                except LLMError as exc:
                    error = exc
                finally:
                    CURRENT.set(None)
                    slot.in_flight -= 1
                    if call.pending:
                        slot.latency.ended(call.pending)
                    await self._settle(pick, error, delivered, used, hooks)
                    if session is not None and delivered and error is None and not run.recorded:
                        with anyio.CancelScope(shield=True):  # the pin, however the stream ended
                            await self._record(run, slot)
                if error is None:
                    return
                self._moving_on(run, slot, error, started, delivered)
            if run.last is not None:
                raise run.last  # its route_attempts: the targets that failed before it

    async def _settle(
        self, pick: _Pick, error: LLMError | None, alive: bool, used: int, hooks: HookRunner | None
    ) -> None:
        """What the attempt showed, and the probe's lease back, however it ended (a ``break`` and a
        cancellation too: shielded, they are short state writes); waiting calls told."""
        slot = pick.slot
        if self._noted(pick, error, alive):
            with anyio.CancelScope(shield=True):
                if pick.tokens and used != pick.tokens:
                    await self.state.window(slot.key_tpm, used - pick.tokens, _MINUTE)
                await self._ended(pick, error, alive, hooks)
                if pick.probe:
                    await self.state.delete(slot.key_probe)
        self._signal()

    def _moving_on(self, run: _Run, slot: Slot, error: LLMError, started: float, delivered: bool) -> None:
        """A failed attempt: raised when nothing else may answer, else noted for the next pick."""
        error.route_attempts = tuple(run.attempts)
        error.route_target = slot.name
        if delivered or not moves_on(error):
            raise error
        run.attempts.append(_attempt(slot, error, started, slot is run.pinned))
        if isinstance(error, ContextOverflowError):
            run.need.overflowed(slot.context)
        run.last = error

    # --- an embedding call ---

    async def run_embed(
        self,
        ctx: Any,
        inputs: tuple[str, ...],
        dimensions: int | None,
        input_type: InputType | None,
        limit: int,
    ) -> EmbeddingResponse:
        """The whole call (every slice) on one target, picked, limited, moved on from and noted as
        a chat call is: never slices on two targets, whose vectors would not be comparable."""
        from ..route.embed_executor import run_embed

        if not self._embedders:
            raise NoRouteError(f"router {self.id!r} holds chat models: client.embed needs embedding models")
        run = _Run()
        run.need.estimate = sum(map(len, inputs)) // 4 + 1  # ~4 characters a token
        async with aclosing(self._picks(None, run, ctx)) as picks:
            async for pick in picks:
                slot, model, started = pick.slot, pick.slot.model, time.perf_counter()
                assert isinstance(model, EmbeddingModel)
                run.last = result = error = None
                slot.in_flight += 1
                try:
                    options, warnings = resolve_options(model, dimensions, input_type)
                    result = await run_embed(
                        self._context(ctx, pick), model, inputs, options, warnings, limit
                    )
                except LLMError as exc:
                    error = exc
                finally:
                    slot.in_flight -= 1
                    usage = result.usage if result is not None else error.usage if error is not None else None
                    used = (
                        usage.input_tokens or 0 if usage is not None else 0
                    )  # billed, slices that failed aside
                    await self._settle(pick, error, result is not None, used, ctx.hooks)
                if result is not None:
                    return msgspec.structs.replace(result, target=slot.name, attempts=tuple(run.attempts))
                assert error is not None
                self._moving_on(run, slot, error, started, False)
            if run.last is not None:
                raise run.last
        raise NoRouteError(f"router {self.id!r}: no target answered")  # the picks end in an error first


_NO_RETRY = RetryPolicy(max_retries=0)


def _mono_of(wall: float) -> float:
    """A wall-clock time as the monotonic clock's (for comparing with this process's marks)."""
    return time.monotonic() - (time.time() - wall)


def _used(batch: list[LLMEvent], used: int) -> int:
    for event in batch:
        if isinstance(event, StepFinish) and event.usage is not None:
            used += (event.usage.input_tokens or 0) + (event.usage.output_tokens or 0)
    return used


def _by_weight(group: Sequence[Slot], rng: random.Random) -> list[Slot]:
    # Efraimidis-Spirakis: one draw per target orders the whole group by weight
    return sorted(group, key=lambda s: rng.random() ** (1.0 / s.target.weight), reverse=True)


class _Need:
    """The request's estimated size (computed once, when some target's limit makes it matter) and
    the window a context overflow showed too small."""

    __slots__ = ("above", "estimate")

    def __init__(self) -> None:
        self.estimate: int | None = None
        self.above: int | None = None

    def tokens(self, request: LLMRequest | None) -> int:
        if self.estimate is None:  # an embedding call sets its estimate before it asks
            self.estimate = estimate_tokens(request) if request is not None else 0
        return self.estimate

    def overflowed(self, window: int | None) -> None:
        if window is not None:
            self.above = max(self.above or 0, window)


def _attempt(slot: Slot, exc: LLMError, started: float, pinned: bool = False) -> Attempt:
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
        pinned=pinned,
    )


def _groups(slots: Sequence[Slot]) -> tuple[tuple[Slot, ...], ...]:
    by: dict[int, list[Slot]] = {}
    for slot in slots:
        by.setdefault(slot.target.priority, []).append(slot)
    return tuple(tuple(by[p]) for p in sorted(by))
