"""``SyncClient``: the ``Client`` for code without an event loop.

Every call runs on one ``Client`` inside an event loop of its own, in a daemon thread, through an
anyio ``BlockingPortal``; so behaviour (retries, deadlines, the tool loop, errors) is the async
client's. ``stream`` returns a plain iterator that fetches one network read's events per thread hop.

    with llmroute.SyncClient() as client:
        for event in client.stream(request):
            ...
        response = client.generate(request)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar, Unpack

import anyio
import httpx
from anyio.from_thread import BlockingPortal

from .client import CallOptions, Client
from .route.policy import RetryPolicy, Timeouts
from .route.prepared import PreparedRequest
from .schema.errors import ClientClosedError, StreamConsumedError
from .schema.events import LLMEvent
from .schema.request import LLMRequest
from .schema.response import LLMResponse, ResponseBuilder
from .stream import EventStream

if TYPE_CHECKING:
    from .tokens import TokenCount
    from .tools.structured import ObjectOptions, ObjectResponse, OutputType

__all__ = ["SyncClient", "SyncEventStream"]

_T = TypeVar("_T")


def _start_portal() -> tuple[BlockingPortal, threading.Thread]:
    ready: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            ready.set_result(portal)
            await portal.sleep_until_stopped()

    # A daemon thread: a client that is never closed must not keep the interpreter from exiting.
    thread = threading.Thread(target=anyio.run, args=(serve,), name="llmroute-sync", daemon=True)
    thread.start()
    return ready.result(), thread


def _stop_portal(portal: BlockingPortal, thread: threading.Thread, client: Client) -> None:
    try:
        portal.call(client.aclose)
        portal.call(portal.stop)
    except RuntimeError:  # the loop is already gone (interpreter shutdown)
        return
    thread.join(5)


class SyncEventStream:
    """Iterate with ``for``; ``close()`` (or leaving ``with``) closes the connection at once.
    ``response()`` folds the events not yet iterated into an ``LLMResponse``."""

    def __init__(self, portal: BlockingPortal, stream: EventStream) -> None:
        self._portal = portal
        self._stream = stream
        self._buffer: list[LLMEvent] = []
        self._i = 0

    def __iter__(self) -> Iterator[LLMEvent]:
        if self._stream.ended and self._i >= len(self._buffer):
            raise StreamConsumedError(
                "this stream has already ended (a stream yields its events once); "
                "keep the events, or use client.generate() for a folded response"
            )
        return self

    def __next__(self) -> LLMEvent:
        if self._i >= len(self._buffer):
            try:
                self._buffer = self._portal.call(self._stream.next_batch)
            except StopAsyncIteration:
                raise StopIteration from None
            self._i = 0
        event = self._buffer[self._i]
        self._i += 1
        return event

    def track(self) -> ResponseBuilder:
        """Fold every event this stream yields from now on (as ``EventStream.track``); read
        ``.build()`` at any time."""
        builder = self._stream.track()
        for event in self._buffer[self._i :]:  # fetched, not yet handed out
            builder.add(event)
        return builder

    def response(self) -> LLMResponse:
        """Consume the rest and fold it (``StreamConsumedError`` if the stream already ended)."""
        builder = self._stream.track()
        for event in self._buffer[self._i :]:
            builder.add(event)
        self._buffer, self._i = [], 0
        return self._portal.call(self._stream.response)

    def close(self) -> None:
        self._portal.call(self._stream.aclose)

    def __enter__(self) -> SyncEventStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class SyncClient:
    """``Client`` with blocking methods: ``prepare``, ``generate``, ``generate_object`` and
    ``stream`` (an iterator). Use as ``with llmroute.SyncClient() as client`` or call ``close()``.
    Arguments are ``Client``'s; ``http``, if given, is an ``httpx.AsyncClient`` it will use."""

    def __init__(
        self,
        http: httpx.AsyncClient | None = None,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        max_error_bytes: int = 64 * 1024,
        max_response_bytes: int | None = None,
        hooks: Iterable[object] | None = None,
    ) -> None:
        self._client = Client(
            http,
            timeouts=timeouts,
            retry=retry,
            max_error_bytes=max_error_bytes,
            max_response_bytes=max_response_bytes,
            hooks=hooks,
        )
        self._portal, thread = _start_portal()
        self._finalizer = weakref.finalize(self, _stop_portal, self._portal, thread, self._client)

    @property
    def client(self) -> Client:
        """The async client every call runs on."""
        return self._client

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def _call(self, fn: Callable[[], Awaitable[_T]]) -> _T:
        if not self._finalizer.alive:
            raise ClientClosedError("this SyncClient is closed; create a new one (or use it inside `with`)")
        return self._portal.call(fn)

    def close(self) -> None:
        """Close connections and stop the event-loop thread. Idempotent."""
        self._finalizer()

    def __enter__(self) -> SyncClient:
        if self.closed:
            raise ClientClosedError("this SyncClient is closed")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SyncClient({self._client!r})"

    def prepare(self, request: LLMRequest) -> PreparedRequest:
        """The exact method, URL, headers and body bytes, without sending anything."""
        return self._call(lambda: self._client.prepare(request))

    def count_tokens(self, request: LLMRequest) -> TokenCount:
        """The request's input tokens (as ``Client.count_tokens``)."""
        return self._call(lambda: self._client.count_tokens(request))

    def check_context(self, request: LLMRequest) -> TokenCount | None:
        """The pre-flight context-window check (as ``Client.check_context``)."""
        return self._call(lambda: self._client.check_context(request))

    def stream(self, request: LLMRequest, **options: Unpack[CallOptions]) -> SyncEventStream:
        """Events as they arrive, as an iterator (arguments as for ``Client.stream``)."""

        async def start() -> EventStream:
            return self._client.stream(request, **options)

        return SyncEventStream(self._portal, self._call(start))

    def generate(self, request: LLMRequest, **options: Unpack[CallOptions]) -> LLMResponse:
        """Stream and fold into an ``LLMResponse`` (arguments as for ``Client.stream``)."""
        return self._call(lambda: self._client.generate(request, **options))

    def generate_object(
        self, request: LLMRequest, schema: OutputType[_T], **options: Unpack[ObjectOptions]
    ) -> ObjectResponse[_T]:
        """JSON matching ``schema``, as ``ObjectResponse(value, response)`` (see
        ``Client.generate_object``)."""
        return self._call(lambda: self._client.generate_object(request, schema, **options))
