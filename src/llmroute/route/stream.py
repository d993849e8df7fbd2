"""``EventStream``: an async iterator of events that owns its HTTP response."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import TracebackType

import msgspec

from ..schema.errors import InvalidProviderOutputError, LLMError
from ..schema.events import LLMEvent
from ..schema.response import LLMResponse, ResponseBuilder

__all__ = ["EventStream", "partial_response"]


class EventStream:
    """Iterate with ``async for``. Leaving an ``async with`` block, ``aclose()``, or dropping the
    stream after ``break`` closes the connection; nothing keeps reading a body nobody consumes."""

    __slots__ = ("_batch", "_batches", "_builder", "_i")

    def __init__(self, batches: AsyncGenerator[list[LLMEvent], None]) -> None:
        self._batches = batches
        self._batch: list[LLMEvent] = []
        self._i = 0
        self._builder: ResponseBuilder | None = None

    def __aiter__(self) -> AsyncGenerator[LLMEvent, None]:
        return self._events()

    async def _events(self) -> AsyncGenerator[LLMEvent, None]:
        # ``async for`` runs here: within a read's batch each event is one generator resume, not a
        # coroutine per event as ``__anext__`` costs. The position lives on the stream, so a loop
        # left with ``break`` continues where it stopped (another ``async for``, ``__anext__``,
        # ``batches()`` or ``response()``).
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
            try:
                batch = await self._batches.__anext__()
            except StopAsyncIteration:
                return
            except LLMError as exc:
                if self._builder is not None and exc.partial is None:
                    exc.partial = partial_response(self._builder, exc)
                raise
            self._batch, self._i = batch, 0

    async def __anext__(self) -> LLMEvent:
        i = self._i
        batch = self._batch
        if i < len(batch):
            self._i = i + 1
            event = batch[i]
        else:
            while True:
                try:
                    batch = await self._batches.__anext__()
                except LLMError as exc:
                    if self._builder is not None and exc.partial is None:
                        exc.partial = partial_response(self._builder, exc)
                    raise
                if batch:
                    break
            self._batch = batch
            self._i = 1
            event = batch[0]
        if self._builder is not None:
            self._builder.add(event)
        return event

    async def batches(self) -> AsyncGenerator[list[LLMEvent], None]:
        """Events in the batches they arrived in (one per network read): the fastest way to consume."""
        if self._i < len(self._batch):
            rest = self._batch[self._i :]
            self._i = len(self._batch)
            yield rest
        async for batch in self._batches:
            yield batch

    async def aclose(self) -> None:
        await self._batches.aclose()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def track(self) -> ResponseBuilder:
        """Fold every event this stream yields from now on; read ``.build()`` at any time."""
        if self._builder is None:
            self._builder = ResponseBuilder()
        return self._builder

    async def response(self) -> LLMResponse:
        """Consume the rest of the stream and return the folded response. If the stream fails, the
        error carries the partial response in ``.partial``."""
        builder = self._builder or ResponseBuilder()
        self._builder = None
        try:
            async for batch in self.batches():
                for event in batch:
                    builder.add(event)
        except LLMError as exc:
            exc.partial = partial_response(builder, exc)
            raise
        finally:
            await self.aclose()
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
