"""Replay recorded responses through httpx with controllable chunk boundaries.

vcrpy replays a body as one chunk; real networks split bytes anywhere (inside a UTF-8 character, an
SSE line ending, an event-stream frame). ``ReplayTransport`` serves cassette interactions and
``RechunkTransport`` wraps any transport, both cutting bodies by a ``Chunking`` rule.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from typing import Literal

import anyio
import httpx
import msgspec

from .cassette import Cassette, Interaction

__all__ = ["Chunking", "RechunkTransport", "ReplayMismatchError", "ReplayTransport"]

_DROP = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class Chunking(msgspec.Struct, frozen=True):
    """How a body is cut: whole, fixed-size, seeded random sizes in [1, max_size], or byte by byte."""

    mode: Literal["whole", "fixed", "random", "bytewise"] = "whole"
    """``whole``, ``fixed``, ``random`` or ``bytewise``."""
    size: int = 16384
    """The chunk size (``fixed``), or the largest one (``random``)."""
    seed: int = 0
    """The random generator's seed (``random``)."""

    @classmethod
    def whole(cls) -> Chunking:
        return cls("whole")

    @classmethod
    def fixed(cls, size: int) -> Chunking:
        return cls("fixed", size)

    @classmethod
    def random(cls, seed: int, max_size: int = 64) -> Chunking:
        return cls("random", max_size, seed)

    @classmethod
    def bytewise(cls) -> Chunking:
        return cls("bytewise", 1)

    def split(self, data: bytes) -> list[bytes]:
        if self.mode == "whole" or not data:
            return [data] if data else []
        if self.mode in ("fixed", "bytewise"):
            n = max(1, self.size)
            return [data[i : i + n] for i in range(0, len(data), n)]
        rng = random.Random(self.seed)
        out: list[bytes] = []
        i = 0
        while i < len(data):
            n = rng.randint(1, max(1, self.size))
            out.append(data[i : i + n])
            i += n
        return out


class _ChunkStream(httpx.AsyncByteStream):
    def __init__(self, chunks: Sequence[bytes], delay: float, owner: ReplayTransport | None) -> None:
        self._chunks = chunks
        self._delay = delay
        self._owner = owner
        self.closed = False
        if owner is not None:
            owner.open_streams += 1

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            if self.closed:
                return
            if self._delay:
                await anyio.sleep(self._delay)
            yield chunk

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            if self._owner is not None:
                self._owner.open_streams -= 1


class ReplayMismatchError(AssertionError):
    """The code under test sent a request the cassette does not hold next."""


class ReplayTransport(httpx.AsyncBaseTransport):
    """Serves a cassette's interactions in order. ``requests`` keeps what was actually sent, so tests
    can compare it with the recorded request; ``open_streams`` counts bodies not yet closed."""

    def __init__(
        self,
        cassette: Cassette | Sequence[Interaction],
        chunking: Chunking | None = None,
        *,
        delay: float = 0.0,
        check_url: bool = True,
    ) -> None:
        self.interactions = list(cassette.interactions if isinstance(cassette, Cassette) else cassette)
        self.chunking = chunking or Chunking.whole()
        self.delay = delay
        self.check_url = check_url
        self.requests: list[httpx.Request] = []
        self.open_streams = 0

    @property
    def remaining(self) -> int:
        return len(self.interactions) - len(self.requests)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = len(self.requests)
        if index >= len(self.interactions):
            raise ReplayMismatchError(
                f"unexpected request #{index + 1}: {request.method} {request.url.copy_with(query=None)}"
            )
        await request.aread()
        self.requests.append(request)
        recorded = self.interactions[index]
        if self.check_url:
            want = httpx.URL(recorded.request.url)
            if (request.method, request.url.host, request.url.path) != (
                recorded.request.method,
                want.host,
                want.path,
            ):
                raise ReplayMismatchError(
                    f"request #{index + 1} differs: sent {request.method} {request.url.host}{request.url.path}, "
                    f"recorded {recorded.request.method} {want.host}{want.path}"
                )
        response = recorded.response
        headers = [(k, v) for k, vs in response.headers.items() if k not in _DROP for v in vs]
        return httpx.Response(
            response.status,
            headers=headers,
            stream=_ChunkStream(self.chunking.split(response.body), self.delay, self),
            request=request,
        )


class RechunkTransport(httpx.AsyncBaseTransport):
    """Wraps a transport (a real one, or one vcrpy patches) and re-cuts each response body."""

    def __init__(self, inner: httpx.AsyncBaseTransport, chunking: Chunking) -> None:
        self.inner = inner
        self.chunking = chunking

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROP]
        return httpx.Response(
            response.status_code,
            headers=headers,
            stream=_ChunkStream(self.chunking.split(body), 0.0, None),
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
