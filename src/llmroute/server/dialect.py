"""The inbound seam: one ``Dialect`` per API the gateway speaks to its clients, as ``route.Protocol``
is one per API it speaks upstream.

A dialect is a value (a frozen Struct of functions) that owns its wire format whole, four parts:

1. ``decode``: the client's body (and path parameters) to an ``Inbound``: the ``LLMRequest``
   (typed, every field lowered or refused by name), the model the client named, whether it
   streams, and what the reply needs to know of the request (its ``reply`` value).
2. ``whole``: a finished ``LLMResponse`` to the non-streamed answer's bytes.
3. ``stream``: a ``Renderer`` for one streamed answer: its opening bytes, each event's bytes, the
   bytes that end it after a failure, and those that end it after the finish.
4. ``error``: a ``Failure`` (the gateway's own refusal, or an upstream error, already scrubbed) as
   the dialect's error body.

``server/app.py`` only serves: it authenticates, checks sizes and limits, resolves the model,
runs the upstream call, relays the renderer's bytes (one write per upstream read), prices and
logs. It never reads or writes a dialect's JSON. Adding an inbound API is one module under
``server/dialects/`` that ends with its ``DIALECT`` value, and one row in
``server.dialects.DIALECTS``; the routes are built from that table.

Writing one (what the gateway guarantees and expects):

- ``decode`` raises ``InvalidRequestError`` (its message names the field, ``param`` too where one
  is at fault) for a body it cannot take; the gateway answers 400 in the dialect's ``error``
  shape. Everything it does not raise on must be in the request, or refused: a field is never
  dropped without a word. It must not do I/O; ``decode_body`` (``dialects/conversation.py``)
  turns msgspec's errors into the gateway's, and ``Conversation`` reads turns into messages.
- The request's ``model`` is an ``Unresolved`` placeholder holding the client's name; the gateway
  replaces it with the configured model (or route) before anything is sent.
- A ``Renderer`` is made per streamed answer and lives on one task: keep its state on ``self``.
  ``event`` is the hot path (every event of every stream): append bytes to ``out`` and return;
  ``out`` is written once per upstream read. Events of the gateway's own server tools (names in
  ``hidden``) must not reach the client as calls (SSE comments are fine: ``sse_comment``).
- ``end(finish, cost)``: ``finish`` is the run's ``Finish`` (``None`` if none came), ``cost`` its
  price when known; the usage reported to the client comes from there.
- ``failed(failure)``: the stream already answered 200, so the failure is the stream's last
  bytes, in the dialect's own error event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

import msgspec

from ..schema.cost import Cost
from ..schema.events import Finish, LLMEvent, ToolCall, ToolResult
from ..schema.notices import RequestWarning
from ..schema.request import LLMRequest, ModelRef
from ..schema.response import LLMResponse
from .failure import Failure
from .upstream import Upstream

__all__ = ["AnyDialect", "Arrival", "Counter", "Dialect", "Inbound", "Renderer", "Unresolved", "sse_comment"]

ReplyT = TypeVar("ReplyT")
"""What a dialect's reply needs of the request beyond the model's name (Chat: whether usage is
streamed, which tools are custom); ``None`` when nothing."""

_encode = msgspec.json.Encoder().encode


class Unresolved(ModelRef):
    """The model a client named, before the gateway resolves it: a decoded request's ``model``."""

    __slots__ = ("id", "provider")

    def __init__(self, name: str) -> None:
        self.id = name
        self.provider = "unresolved"

    def __repr__(self) -> str:
        return f"Unresolved({self.id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unresolved) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)


class Inbound(msgspec.Struct, Generic[ReplyT], frozen=True):
    """One client request, decoded by its dialect."""

    model: str
    """The model (or route) the client named: the gateway's public name."""
    stream: bool
    """The client asked for a streamed answer."""
    request: LLMRequest
    """The request, lowered; its ``model`` is ``Unresolved(model)`` until the gateway sets it."""
    reply: ReplyT
    """What the dialect's ``whole`` and ``stream`` need of the request (its own type)."""
    warnings: tuple[RequestWarning, ...] = ()
    """Fields the upstream does not take, left out (sent to the client as ``x-llmroute-warnings``)."""
    search: bool = False
    """The client declared its API's web search tool and the gateway's own ``web_search`` serves
    it: the gateway offers that tool on every step of this request."""


class Arrival:
    """What ``Dialect.prepare`` reads: where the request goes (the resolved model's protocols),
    the client's headers and query, and whether the gateway runs its own ``web_search``."""

    __slots__ = ("headers", "query", "search", "upstream")

    def __init__(
        self, upstream: Upstream, headers: Mapping[str, str], query: Mapping[str, str], search: bool
    ) -> None:
        self.upstream, self.headers, self.query, self.search = upstream, headers, query, search


class Renderer(Protocol):
    """One streamed answer in a dialect's wire format (see the module's notes)."""

    def opening(self) -> bytes:
        """The bytes sent before the first event (a role chunk, ``response.created``, ...)."""
        ...

    def event(self, event: LLMEvent, out: list[bytes]) -> None:
        """Append the bytes of one event (often none) to ``out``."""
        ...

    def failed(self, failure: Failure) -> bytes:
        """The stream's last bytes after a failure (upstream, or a bug: ``failure.INTERNAL``)."""
        ...

    def end(self, finish: Finish | None, cost: Cost | None) -> bytes:
        """The stream's last bytes after the run finished (close open items, usage, terminator)."""
        ...


class Counter(msgspec.Struct, Generic[ReplyT], frozen=True):
    """A dialect's token-counting endpoint (Anthropic ``/v1/messages/count_tokens``, Gemini
    ``:countTokens``): its request decodes like the dialect's own (``prepare`` runs on it too), and
    the count (exact: the provider's endpoint; else the gateway's estimate) is the reply."""

    paths: tuple[str, ...]
    """The ``POST`` route templates it serves (matched before the dialect's own)."""
    decode: Callable[[bytes, Mapping[str, str]], Inbound[ReplyT]]
    """The body and path parameters to the ``Inbound`` whose input is counted."""
    reply: Callable[[int, bool], bytes]
    """The input tokens and whether they are the provider's count, as the JSON answer."""


class Dialect(msgspec.Struct, Generic[ReplyT], frozen=True):
    """An inbound API: its routes and its four parts (see the module's notes)."""

    name: str
    """The dialect's name in logs and errors (``openai-chat``, ``openai-responses``)."""
    paths: tuple[str, ...]
    """The ``POST`` route templates it serves (Starlette syntax: ``/v1beta/models/{model}:generateContent``)."""
    decode: Callable[[bytes, Mapping[str, str]], Inbound[ReplyT]]
    """The body and the route's path parameters to an ``Inbound``; ``InvalidRequestError`` names a bad field."""
    whole: Callable[[Inbound[ReplyT], LLMResponse, frozenset[str]], bytes]
    """The non-streamed answer's JSON bytes; the third argument: the server tools' names, left out."""
    stream: Callable[[Inbound[ReplyT], frozenset[str]], Renderer]
    """A renderer for one streamed answer; the second argument: the server tools' names, left out."""
    error: Callable[[Failure], bytes]
    """A failure as the dialect's JSON error body (its status and headers are the ``Failure``'s)."""
    key_headers: tuple[str, ...] = ("x-api-key",)
    """Headers a client may carry the gateway key in, tried in order after ``Authorization: Bearer``."""
    stream_media_type: str = "text/event-stream"
    """The ``content-type`` of a streamed answer."""
    prepare: Callable[[Inbound[ReplyT], Arrival], Inbound[ReplyT]] | None = None
    """Once the model is resolved: what depends on where the request goes (a field only one
    upstream API has: carried there, reported or refused elsewhere) and on the client's headers."""
    count: Counter[ReplyT] | None = None
    """The dialect's token-counting endpoint, when its API has one."""
    key_query: str | None = None
    """A query parameter a client may carry the gateway key in (Gemini's ``?key=``), tried last."""


AnyDialect: TypeAlias = Dialect[Any]
"""Any dialect, its reply type erased: what the route table holds."""


def sse_comment(event: ToolCall | ToolResult) -> bytes:
    """A server tool's call or result as an SSE comment: visible on the wire, ignored by clients."""
    if isinstance(event, ToolCall):
        return b": " + event.name.encode() + b" call " + _encode(event.input) + b"\n\n"
    return b": " + event.name.encode() + b" result " + (b"error" if event.is_error else b"done") + b"\n\n"
