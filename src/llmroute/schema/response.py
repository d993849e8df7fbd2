"""``LLMResponse``: the fold of an event stream, and the builder that folds it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from . import clock
from .attempt import Attempt
from .cache import CacheMiss, CacheStats
from .content import (
    ApprovalRequestPart,
    AssistantPart,
    MediaPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from .cost import Cost
from .events import (
    ApprovalRequest,
    Citation,
    Finish,
    FinishReason,
    LLMEvent,
    Media,
    ProviderError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolError,
    ToolResult,
)
from .notices import RequestWarning
from .usage import Usage

__all__ = ["LLMResponse", "ResponseBuilder", "StepResult", "steps_cost"]


class StepResult(msgspec.Struct, frozen=True):
    """One model call inside a (possibly multi-step) response."""

    index: int
    """The step's number, from 0."""
    message: Message
    """The assistant message this step produced."""
    finish_reason: FinishReason
    """Why the model stopped this step."""
    usage: Usage | None
    """This step's token counts (``None``: none reported)."""
    tool_results: tuple[ToolResult, ...] = ()
    """Results of the caller-run tools this step's calls asked for."""
    target: str | None = None
    """Through a ``Router``: the target that answered this step."""
    provider: str | None = None
    """The provider that served the step (``Model.provider``)."""
    model_id: str | None = None
    """The model id the step was sent to (``Model.id``)."""
    at: datetime | None = None
    """When the step's answer arrived (UTC): its cost uses the prices in force then (DeepSeek's
    off-peak hours, a price change), whenever it is read."""
    cache_miss: CacheMiss | None = None
    """Through a ``Router`` with affinity: why this step read less from the prompt cache than the
    session's previous call left there."""

    @property
    def cost(self) -> Cost | None:
        """What this model call cost (the provider's figure or the catalog's; ``None`` when unknown).
        Computed on access from ``usage`` at the prices of ``at``: nothing is priced while the stream
        runs, and reading it later gives the same figure."""
        return _step_cost(self.provider, self.model_id, self.usage, self.at)


class LLMResponse(msgspec.Struct, frozen=True):
    """What ``Client.generate`` returns. ``text``/``reasoning`` are the final step's; ``tool_calls``,
    ``citations``, ``media`` and ``usage`` cover every step."""

    text: str
    """The final step's answer text."""
    reasoning: str
    """The final step's reasoning text."""
    tool_calls: tuple[ToolCall, ...]
    """Every tool call, over every step."""
    tool_results: tuple[ToolResult, ...]
    """Every tool result, over every step (hosted and local)."""
    citations: tuple[Citation, ...]
    """Every citation, over every step."""
    usage: Usage | None
    """Token counts over every step (``None`` when none was reported)."""
    finish_reason: FinishReason
    """Why the response ended (``unknown`` when the stream did not finish)."""
    message: Message
    """The final step's assistant message."""
    steps: tuple[StepResult, ...]
    """One ``StepResult`` per model call, in order."""
    text_blocks: dict[str, str]
    """The text of every text block by block id, over every step (``Citation.block_id`` indexes it)."""
    errors: tuple[ProviderError, ...]
    """``provider-error`` events the stream carried."""
    events: tuple[LLMEvent, ...]
    """Every event, in order (empty when the stream was folded without keeping them)."""
    media: tuple[Media, ...] = ()
    """Images and audio the model produced, in order, over every step."""
    complete: bool = True
    """The stream reached its ``finish`` (``False``: a partial response, e.g. on ``LLMError.partial``)."""
    tool_errors: tuple[ToolError, ...] = ()
    """Failed local tool calls of every step; ``.exception`` holds what a handler raised."""
    approval_requests: tuple[ApprovalRequest, ...] = ()
    """Calls the provider wants approved before it runs them; answer with ``llmroute.approval``."""
    attempts: tuple[Attempt, ...] = ()
    """Through a ``Router``: every target that failed (or refused) before another answered, in
    order, over all steps; empty when the first choice answered (or without a router)."""
    provider: str | None = None
    """The provider of the request's model (``Model.provider``)."""
    model_id: str | None = None
    """The request's model id (``Model.id``)."""
    warnings: tuple[RequestWarning, ...] = ()
    """Options a route did not send (each once, over every step): see ``RequestWarning``."""

    @property
    def cost(self) -> Cost | None:
        """What the response cost in USD: every step (each priced on its own usage, so a long-context
        tier applies per call) plus the server-side ``web_search`` backend calls. ``None`` when any
        part is unknown (``llmroute.catalog.cost_reason`` says why) - never a partial sum."""
        total: Cost | None = None
        for step in self.steps:
            if step.usage is None:
                continue
            cost = step.cost  # each step on its own model: a Router may answer steps with different targets
            if cost is None:
                return None
            total = cost if total is None else total + cost
        search = _search_cost(self.tool_results)
        return None if total is None or search is None else total.with_search(search)

    @property
    def cache(self) -> CacheStats:
        """The prompt cache over every step: input tokens, reads, writes, ``hit_ratio``
        (``llmroute.cache_stats(responses)`` sums a session's)."""
        stats = CacheStats()
        for step in self.steps:
            stats = stats.add(step.usage)
        return stats

    @property
    def cache_miss(self) -> CacheMiss | None:
        """The first step's ``cache_miss`` that is set: why a call read less from the prompt cache
        than the session's previous call left there (through a ``Router`` with affinity)."""
        return next((s.cache_miss for s in self.steps if s.cache_miss is not None), None)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The assistant (and tool-result) messages to append to the history for the next turn."""
        out: list[Message] = []
        for step in self.steps:
            out.append(step.message)
            local = [r for r in step.tool_results if not r.provider_executed]
            if local:
                out.append(
                    Message(
                        "tool",
                        tuple(ToolResultPart(r.id, r.name, r.result, is_error=r.is_error) for r in local),
                    )
                )
        return tuple(out)


def steps_cost(
    provider: str | None,
    model_id: str | None,
    usages: Sequence[Usage],
    tool_results: Sequence[ToolResult] = (),
    *,
    at: datetime | None = None,
) -> Cost | None:
    """The cost of a run of model calls (one ``Usage`` each, made at ``at``; default now) plus the
    server-side web_search backend calls in ``tool_results``; ``None`` when no call reported usage
    or any part is unknown."""
    total: Cost | None = None
    for usage in usages:
        cost = _step_cost(provider, model_id, usage, at)
        if cost is None:
            return None
        total = cost if total is None else total + cost
    if total is None:
        return None
    search = _search_cost(tool_results)
    return None if search is None else total.with_search(search)


def _step_cost(
    provider: str | None, model_id: str | None, usage: Usage | None, at: datetime | None
) -> Cost | None:
    if usage is None:
        return None
    if usage.reported_cost is not None:
        return Cost(total=usage.reported_cost, source="provider")
    if not provider or not model_id:
        return None
    from ..catalog import cost  # the catalog loads on first use (floor 1; data packages are optional)

    return cost(provider, model_id, usage, at=at)


def _search_cost(results: Sequence[ToolResult]) -> Decimal | None:
    """The server-side web_search backend's cost, from each result's ``web_search`` metadata
    (``websearch.server_tool``); ``None`` when a backend call's cost is unknown."""
    total = Decimal(0)
    for result in results:
        backend = (result.provider_metadata or {}).get("web_search")
        if isinstance(backend, dict) and "cost" in backend:
            value: object = backend["cost"]  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(value, str):
                return None
            total += Decimal(value)
    return total


class _Block:
    __slots__ = ("chunks", "encrypted", "kind", "metadata", "signature")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.chunks: list[str] = []
        self.signature: str | None = None
        self.encrypted: str | None = None
        self.metadata: dict[str, Any] | None = None


class ResponseBuilder:
    """Folds events into an ``LLMResponse``; usable part-way to report what arrived before a failure."""

    def __init__(
        self,
        keep_events: bool = True,
        *,
        provider: str | None = None,
        model_id: str | None = None,
        targets: Mapping[str, tuple[str, str]] | None = None,
    ) -> None:
        self._keep_events = keep_events
        self.provider = provider
        self.model_id = model_id
        # a Router's target names -> (provider, model id), for the cost of the steps each answered
        self._targets = targets or {}
        self.events: list[LLMEvent] = []
        self._order: list[_Block | ToolCall | ToolResult | Media | ApprovalRequest] = []
        self._blocks: dict[str, _Block] = {}
        self._steps: list[StepResult] = []
        self._step_results: list[ToolResult] = []
        self._text_blocks: dict[str, str] = {}
        self.tool_calls: list[ToolCall] = []
        self.tool_results: list[ToolResult] = []
        self.citations: list[Citation] = []
        self.media: list[Media] = []
        self.approval_requests: list[ApprovalRequest] = []
        self.errors: list[ProviderError] = []
        self.tool_errors: list[ToolError] = []
        self.warnings: dict[RequestWarning, None] = {}  # ordered, each once across steps
        self.usage: Usage | None = None
        self.finish_reason: FinishReason = "unknown"
        self.finished = False
        self._step_usage: Usage | None = None
        self._step_reason: FinishReason = "unknown"
        self._step_at: datetime | None = None
        self._step_miss: CacheMiss | None = None
        self._target: str | None = None
        self.attempts: list[Attempt] = []

    def _block(self, kind: str, id: str) -> _Block:
        block = self._blocks.get(id)
        if block is None or block.kind != kind:
            block = _Block(kind)
            self._blocks[id] = block
            self._order.append(block)
            if kind == "text":
                self._text_blocks[id] = ""
        return block

    def add(self, event: LLMEvent) -> None:
        if self._keep_events:
            self.events.append(event)
        if isinstance(event, TextDelta):
            self._block("text", event.id).chunks.append(event.text)
        elif isinstance(event, ReasoningDelta):
            self._block("reasoning", event.id).chunks.append(event.text)
        elif isinstance(event, TextStart):
            self._block("text", event.id).metadata = event.provider_metadata
        elif isinstance(event, ReasoningStart):
            self._block("reasoning", event.id).metadata = event.provider_metadata
        elif isinstance(event, TextEnd):
            if event.provider_metadata:  # e.g. Anthropic citations that must round-trip with the text
                block = self._block("text", event.id)
                block.metadata = {**(block.metadata or {}), **event.provider_metadata}
        elif isinstance(event, ReasoningEnd):
            block = self._block("reasoning", event.id)
            block.signature = event.signature or block.signature
            block.encrypted = event.encrypted or block.encrypted
            if event.provider_metadata:
                block.metadata = {**(block.metadata or {}), **event.provider_metadata}
        elif isinstance(event, ToolCall):
            self.tool_calls.append(event)
            self._order.append(event)
        elif isinstance(event, ToolResult):
            self.tool_results.append(event)
            if event.provider_executed:
                self._order.append(event)
            else:
                self._step_results.append(event)
        elif isinstance(event, Citation):
            self.citations.append(event)
        elif isinstance(event, Media):
            self.media.append(event)
            self._order.append(event)
        elif isinstance(event, ApprovalRequest):
            self.approval_requests.append(event)
            self._order.append(event)
        elif isinstance(event, StepFinish):
            self._step_reason = event.reason
            self._step_usage = event.usage
            self._step_miss = event.cache_miss
            self._step_at = clock.now()
            self._close_step(event.index)
        elif isinstance(event, Finish):
            self.finish_reason = event.reason
            self.usage = event.usage
            self.finished = True
            if self._order or not self._steps:
                self._step_reason, self._step_usage = event.reason, event.usage
                self._step_at = clock.now()
                self._close_step(len(self._steps))
        elif isinstance(event, ProviderError):
            self.errors.append(event)
        elif isinstance(event, ToolError):
            self.tool_errors.append(event)
        elif isinstance(event, StepStart):
            if event.target is not None:
                self._target = event.target
                self.attempts.extend(event.attempts)
            if event.warnings:
                self.warnings.update(dict.fromkeys(event.warnings))

    def _snapshot_step(self, index: int) -> StepResult:
        parts: list[AssistantPart] = []
        for item in self._order:
            if isinstance(item, _Block):
                text = "".join(item.chunks)
                if item.kind == "text":
                    parts.append(TextPart(text, item.metadata))
                else:
                    parts.append(ReasoningPart(text, item.signature, item.encrypted, item.metadata))
            elif isinstance(item, Media):
                parts.append(MediaPart(item.mime_type, item.data, provider_metadata=item.provider_metadata))
            elif isinstance(item, ToolCall):
                parts.append(
                    ToolCallPart(
                        item.id, item.name, item.input, item.provider_executed, item.provider_metadata
                    )
                )
            elif isinstance(item, ApprovalRequest):
                parts.append(ApprovalRequestPart(item.id, item.name, item.input, item.provider_metadata))
            else:
                parts.append(
                    ToolResultPart(
                        item.id, item.name, item.result, item.is_error, True, item.provider_metadata
                    )
                )
        return StepResult(
            index,
            Message("assistant", tuple(parts)),
            self._step_reason,
            self._step_usage,
            tuple(self._step_results),
            self._target,
            *self._targets.get(self._target or "", (self.provider, self.model_id)),
            self._step_at,
            self._step_miss,
        )

    def _current_text_blocks(self) -> dict[str, str]:
        blocks = dict(self._text_blocks)
        for id, block in self._blocks.items():
            if block.kind == "text":
                blocks[id] = "".join(block.chunks)
        return blocks

    def _close_step(self, index: int) -> None:
        self._steps.append(self._snapshot_step(index))
        self._step_at = None
        self._step_miss = None
        self._text_blocks = self._current_text_blocks()
        self._order = []
        self._blocks = {}
        self._step_results = []

    def build(self) -> LLMResponse:
        """The response so far. Safe to call on an unfinished stream (``complete`` is then False)."""
        steps = list(self._steps)
        if self._order or self._blocks or self._step_results or not steps:
            steps.append(self._snapshot_step(len(steps)))  # the open step, provisionally
        last = steps[-1]
        text = "".join(p.text for p in last.message.content if isinstance(p, TextPart))
        reasoning = "".join(p.text for p in last.message.content if isinstance(p, ReasoningPart))
        usage = self.usage
        if usage is None:
            for step in steps:
                if step.usage is not None:
                    usage = step.usage if usage is None else usage + step.usage
        return LLMResponse(
            text=text,
            reasoning=reasoning,
            tool_calls=tuple(self.tool_calls),
            tool_results=tuple(self.tool_results),
            citations=tuple(self.citations),
            usage=usage,
            finish_reason=self.finish_reason if self.finished else "unknown",
            message=last.message,
            steps=tuple(steps),
            text_blocks=self._current_text_blocks(),
            errors=tuple(self.errors),
            events=tuple(self.events),
            media=tuple(self.media),
            complete=self.finished,
            tool_errors=tuple(self.tool_errors),
            approval_requests=tuple(self.approval_requests),
            attempts=tuple(self.attempts),
            provider=self.provider,
            model_id=self.model_id,
            warnings=tuple(self.warnings),
        )
