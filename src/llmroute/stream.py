"""``EventStream``: an async iterator of events that owns its HTTP response."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from contextlib import aclosing
from types import TracebackType
from typing import Any

import anyio
import msgspec

from .schema.errors import InvalidProviderOutputError, LLMError, StreamConsumedError
from .schema.events import LLMEvent
from .schema.response import LLMResponse, ResponseBuilder

__all__ = ["EventStream", "partial_response"]


class EventStream:
    """Iterate with ``async for``. Leaving an ``async with`` block, ``aclose()``, or dropping the
    stream after ``break`` closes the connection; nothing keeps reading a body nobody consumes.

    The generators that loops over the stream run in (``async for``, ``batches()``) are closed
    with it, so a loop left with ``break`` inside ``async with`` is not left to the garbage
    collector (trio warns about each one). They run on the stream's ``_Cursor``, never on the
    stream itself: the stream holds them and they do not hold it, so a stream dropped after
    ``break`` is freed, and its connection closed, at once."""

    __slots__ = ("_cursor", "_loops")

    def __init__(self, batches: AsyncGenerator[list[LLMEvent], None], *, model: object = None) -> None:
        self._cursor = _Cursor(batches, model=model)
        self._loops: list[AsyncGenerator[Any, None]] = []

    @property
    def provider(self) -> str | None:
        """The provider of the request's model (what ``response.cost`` prices against)."""
        return self._cursor.provider

    @property
    def model_id(self) -> str | None:
        """The request's model id."""
        return self._cursor.model_id

    def _held(self, loop: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        self._loops = [g for g in self._loops if getattr(g, "ag_frame", None) is not None]  # not the done
        self._loops.append(loop)
        return loop

    def __aiter__(self) -> AsyncGenerator[LLMEvent, None]:
        return self._held(self._cursor.events())

    async def __anext__(self) -> LLMEvent:
        return await self._cursor.next_event()

    async def next_batch(self) -> list[LLMEvent]:
        """The events not yet consumed (the rest of the current read, else the next read's);
        ``StopAsyncIteration`` at the end. Mixes with ``async for`` (``SyncClient`` iterates this way:
        one thread hop per network read, not per event)."""
        return await self._cursor.next_batch()

    @property
    def ended(self) -> bool:
        """The stream was exhausted, failed or closed: iterating it again raises ``StreamConsumedError``."""
        return self._cursor.ended

    def batches(self) -> AsyncGenerator[list[LLMEvent], None]:
        """Events in the batches they arrived in (one per network read): the fastest way to consume."""
        return self._held(self._cursor.batches())

    async def aclose(self) -> None:
        """Close every loop over the stream, then the connection; also when the caller is being
        cancelled."""
        loops, self._loops = self._loops, []
        with anyio.CancelScope(shield=True):
            for loop in loops:
                # RuntimeError: it runs in another task right now, and ends with the source
                with contextlib.suppress(RuntimeError):
                    await loop.aclose()
            await self._cursor.aclose()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def track(self) -> ResponseBuilder:
        """Fold every event this stream yields from now on; read ``.build()`` at any time."""
        return self._cursor.track()

    async def response(self) -> LLMResponse:
        """Consume the rest of the stream and return the folded response. If the stream fails, the
        error carries the partial response in ``.partial``."""
        try:
            return await self._cursor.response()
        finally:
            await self.aclose()


class _Cursor:
    """The source and the position in it, shared by every loop over one stream."""

    __slots__ = ("_batch", "_batches", "_builder", "_ended", "_i", "_model", "_targets")

    def __init__(self, batches: AsyncGenerator[list[LLMEvent], None], *, model: object = None) -> None:
        self._batches = batches
        # (provider, id) of the request's model, for ``response.cost``
        provider, model_id = getattr(model, "provider", None), getattr(model, "id", None)
        self._model = (
            (provider, model_id) if isinstance(provider, str) and isinstance(model_id, str) else (None, None)
        )
        # a Router: which model each target name stands for (``StepStart.target`` names it per step)
        targets: Any = getattr(model, "targets", ())
        self._targets = {t.key: (t.model.provider, t.model.id) for t in targets if hasattr(t, "key")}
        self._batch: list[LLMEvent] = []
        self._i = 0
        self._builder: ResponseBuilder | None = None
        self._ended = False  # exhausted, failed or closed: iterating again is a mistake

    def _check_fresh(self) -> None:
        if self._ended:
            raise StreamConsumedError(
                "this stream has already ended (a stream yields its events once); "
                "keep the events, or use client.generate() for a folded response"
            )

    def events(self) -> AsyncGenerator[LLMEvent, None]:
        self._check_fresh()
        return self._events()

    async def _events(self) -> AsyncGenerator[LLMEvent, None]:
        # ``async for`` runs here: within a read's batch each event is one generator resume, not a
        # coroutine per event as ``__anext__`` costs. The position lives on the cursor, so a loop
        # left with ``break`` continues where it stopped (another ``async for``, ``__anext__``,
        # ``batches()`` or ``response()``).
        pull = self._batches.__anext__
        while True:
            batch, i = self._batch, self._i
            n = len(batch)
            while i < n:
                event = batch[i]
                i += 1
                self._i = i
                if self._builder is not None:
                    self._builder.add(event)
                yield event
            # ``_pull`` inlined: one coroutine less per network read
            try:
                batch = await pull()
            except StopAsyncIteration:
                self._ended = True
                return
            except LLMError as exc:
                self._failed(exc)
                raise
            self._batch, self._i = batch, 0

    async def next_event(self) -> LLMEvent:
        i = self._i
        batch = self._batch
        if i < len(batch):
            self._i = i + 1
            event = batch[i]
        else:
            batch = await self._pull()
            self._batch = batch
            self._i = 1
            event = batch[0]
        if self._builder is not None:
            self._builder.add(event)
        return event

    async def _pull(self) -> list[LLMEvent]:
        """The next non-empty batch from the source; marks the stream ended when it stops or fails."""
        while True:
            try:
                batch = await self._batches.__anext__()
            except StopAsyncIteration:
                self._ended = True
                raise
            except LLMError as exc:
                self._failed(exc)
                raise
            if batch:
                return batch

    def _failed(self, exc: LLMError) -> None:
        self._ended = True
        if self._builder is not None and exc.partial is None:
            exc.partial = partial_response(self._builder, exc)

    async def next_batch(self) -> list[LLMEvent]:
        if self._i < len(self._batch):
            rest = self._batch[self._i :]
        else:
            rest = await self._pull()
        self._batch, self._i = rest, len(rest)
        if self._builder is not None:
            for event in rest:
                self._builder.add(event)
        return rest

    @property
    def ended(self) -> bool:
        return self._ended

    async def batches(self) -> AsyncGenerator[list[LLMEvent], None]:
        self._check_fresh()
        if self._i < len(self._batch):
            rest = self._batch[self._i :]
            self._i = len(self._batch)
            yield rest
        try:
            async for batch in self._batches:
                yield batch
        finally:
            self._ended = True

    async def aclose(self) -> None:
        self._ended = True
        await self._batches.aclose()

    def track(self) -> ResponseBuilder:
        if self._builder is None:
            self._builder = self._new_builder()
        return self._builder

    @property
    def provider(self) -> str | None:
        """The provider of the request's model (what ``response.cost`` prices against)."""
        return self._model[0]

    @property
    def model_id(self) -> str | None:
        """The request's model id."""
        return self._model[1]

    def _new_builder(self) -> ResponseBuilder:
        return ResponseBuilder(provider=self._model[0], model_id=self._model[1], targets=self._targets)

    async def response(self) -> LLMResponse:
        self._check_fresh()
        builder = self._builder or self._new_builder()
        self._builder = None
        try:
            async with aclosing(self.batches()) as batches:
                async for batch in batches:
                    for event in batch:
                        builder.add(event)
        except LLMError as exc:
            exc.partial = partial_response(builder, exc)
            raise
        if not builder.finished:
            raise InvalidProviderOutputError("stream ended without a finish event", partial=builder.build())
        return builder.build()


def partial_response(builder: ResponseBuilder, exc: LLMError) -> LLMResponse:
    """What arrived before ``exc``: text and tool calls so far, and usage when the provider had
    already reported it (``exc.usage``, set by the executor from the parser state)."""
    partial = builder.build()
    if partial.usage is None and exc.usage is not None:
        partial = msgspec.structs.replace(partial, usage=exc.usage)
    return partial
