"""The Responses API's WebSocket mode: what a pooled connection needs to know of the protocol.

Documented by OpenAI (``/v1/responses`` WebSocket mode) and xAI: every turn is one
``response.create`` message (the HTTP body without ``stream`` and ``background``); the server keeps
the connection's most recent response in memory, so a turn that continues it sends only the new
input items plus ``previous_response_id`` (this works with ``store: false`` and zero data
retention). When the server no longer holds that response it answers with an ``error`` whose code
is ``previous_response_not_found``; a connection past its time limit answers
``websocket_connection_limit_reached``. Both mean: send the whole input again on a new connection.

``ResponsesSocketDialect`` decides when a request continues the connection's last response: its
input must be that request's input, then the response's output as llmroute lowers assistant history
(function calls by call id, name and arguments; messages by text; hosted calls by item id;
reasoning items are not compared), then at least one new item. Anything else is sent whole.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ..route.decoding import DECODE_ERRORS

__all__ = ["DIALECT", "Chain", "ResponsesSocketDialect", "Turn"]

# Events that end a response on the socket; the connection is free for the next one after them.
_TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})
# Error codes that mean "nothing was generated; send the whole input on a new connection".
_FRESH_START = frozenset({"previous_response_not_found", "websocket_connection_limit_reached"})
_TRANSPORT_ONLY = ("stream", "background")
# Input item types the model produces (lowered back from assistant history); the rest is new input.
_OUTPUT_TYPES = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "mcp_approval_request", "message"}
)


class _Head(msgspec.Struct):
    type: str = ""


class _Error(msgspec.Struct):
    code: str | None = None


class _ErrorFrame(msgspec.Struct):
    type: str = ""
    code: str | None = None
    error: _Error | None = None


class _Response(msgspec.Struct):
    id: str | None = None
    output: list[dict[str, Any]] = []


class _Terminal(msgspec.Struct):
    type: str = ""
    response: _Response | None = None


_head = msgspec.json.Decoder(_Head)
_error = msgspec.json.Decoder(_ErrorFrame)
_terminal = msgspec.json.Decoder(_Terminal)
_body = msgspec.json.Decoder(dict[str, Any])
_encode = msgspec.json.encode


class Chain(msgspec.Struct, frozen=True):
    """The response a connection's server holds: its id, the whole input it answered, and the
    comparable form of its output."""

    response_id: str
    """The id a next request sends as ``previous_response_id``."""
    input: list[Any]
    """The whole input that response answered (its history, as sent)."""
    output: tuple[Any, ...]
    """Its output in comparable form: what the next request's history must repeat to chain."""


class Turn(msgspec.Struct):
    """One request for a connection: its ``response.create`` fields and its whole input (``None``
    when it chains by itself or its input is one string: it is then never continued)."""

    data: dict[str, Any]
    """The ``response.create`` message's fields."""
    input: list[Any] | None
    """The whole input; ``None`` when the request chains by itself or its input is one string."""


def _signature(items: list[Any]) -> tuple[Any, ...] | None:
    """What must match between a response's output and the history a request lowers it to;
    ``None``: an item this comparison does not know (the request is then sent whole)."""
    out: list[Any] = []
    for raw in items:
        if not isinstance(raw, dict):
            return None
        item = cast(dict[str, Any], raw)
        kind = item.get("type")
        if kind == "reasoning":
            continue  # dropped from history when it cannot round-trip; the server holds it anyway
        if kind == "function_call":
            arguments = item.get("arguments")
            try:
                args: Any = msgspec.json.decode(arguments) if isinstance(arguments, str) and arguments else {}
            except DECODE_ERRORS:
                return None
            out.append(("call", item.get("call_id"), item.get("name"), args))
        elif kind == "custom_tool_call":
            out.append(("custom", item.get("call_id"), item.get("name"), item.get("input")))
        elif kind == "message" or (kind is None and item.get("role") == "assistant"):
            text = _text(item.get("content"))
            if text is None:
                return None
            out.append(("text", text))
        elif isinstance(kind, str) and item.get("id"):
            out.append((kind, item.get("id")))
        else:
            return None
    return tuple(out)


def _text(content: Any) -> str | None:
    """An assistant message's text; ``None`` for a part llmroute does not lower back the same way
    (a refusal, ...)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in cast(list[Any], content):
        if not isinstance(part, dict):
            return None
        fields = cast(dict[str, Any], part)
        if fields.get("type") != "output_text" or not isinstance(fields.get("text"), str):
            return None
        texts.append(fields["text"])
    return "".join(texts)


def _is_output(raw: Any) -> bool:
    if not isinstance(raw, dict):
        return False
    item = cast(dict[str, Any], raw)
    kind = item.get("type")
    if kind is None or kind == "message":
        return item.get("role") == "assistant"
    return kind in _OUTPUT_TYPES or (isinstance(kind, str) and kind.endswith("_call"))


class ResponsesSocketDialect:
    """``SocketDialect`` for the Responses API (see the module doc)."""

    name = "openai-responses"

    def plan(self, body: bytes) -> Turn:
        data = _body.decode(body)
        for key in _TRANSPORT_ONLY:
            data.pop(key, None)
        items = data.get("input")
        if not isinstance(items, list) or "previous_response_id" in data or "conversation" in data:
            return Turn(data, None)  # the caller chains by itself, or the input is one string
        return Turn(data, cast(list[Any], items))

    def full(self, turn: Turn) -> bytes:
        """The ``response.create`` message with the whole input."""
        return _encode({"type": "response.create", **turn.data})

    def incremental(self, turn: Turn, chain: Chain) -> bytes | None:
        """The message with only the new items and ``previous_response_id``, when ``turn``
        continues ``chain``; else ``None``."""
        items = turn.input
        if items is None:
            return None
        known = len(chain.input)
        if len(items) <= known or items[:known] != chain.input:
            return None
        end = known
        while end < len(items) and _is_output(items[end]):
            end += 1
        if end == len(items) or _signature(items[known:end]) != chain.output:
            return None
        fields = {**turn.data, "input": items[end:], "previous_response_id": chain.response_id}
        return _encode({"type": "response.create", **fields})

    def kind(self, message: bytes) -> str:
        """The event's ``type`` ("" when the message is not a JSON object with one)."""
        try:
            return _head.decode(message).type
        except DECODE_ERRORS:
            return ""

    def is_terminal(self, kind: str) -> bool:
        return kind in _TERMINAL

    def fresh_start(self, message: bytes, incremental: bool) -> bool:
        """An error frame saying the request was not run and may be sent whole on a new
        connection: the connection's time limit, or (for an incremental request) a response the
        server no longer holds. A caller's own ``previous_response_id`` is never replaced."""
        try:
            frame = _error.decode(message)
        except DECODE_ERRORS:
            return False
        code = frame.error.code if frame.error is not None else frame.code
        if frame.type != "error" or code not in _FRESH_START:
            return False
        return incremental or code != "previous_response_not_found"

    def chain(self, turn: Turn, message: bytes) -> Chain | None:
        """The state a completed response leaves on the connection (``None``: nothing to continue)."""
        if turn.input is None:
            return None
        try:
            done = _terminal.decode(message)
        except DECODE_ERRORS:
            return None
        response = done.response
        if done.type != "response.completed" or response is None or not response.id:
            return None
        signature = _signature(response.output)
        if signature is None:
            return None
        return Chain(response.id, turn.input, signature)


DIALECT = ResponsesSocketDialect()
