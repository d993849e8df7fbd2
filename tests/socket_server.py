"""A Responses API server on 127.0.0.1 for WebSocket-mode tests and benchmarks, with an HTTP twin.

``SocketServer`` (websockets' threaded server) keeps per-connection state as OpenAI's does: the
last response of each connection, in memory. A ``response.create`` with ``previous_response_id``
continues it (its input is appended to what the connection holds) and one naming any other
response gets the documented ``previous_response_not_found`` error frame. ``forget()`` evicts
every connection's state; ``drop_idle()`` closes every idle connection from the server's side.

``HttpServer`` answers ``POST /v1/responses`` with the same scripted answers as SSE. ``script``
decides each answer from the whole conversation: a ``lookup`` function call per step until
``steps - 1`` tool results are in, then a text answer. Ids are deterministic, so both servers give
the same events for the same conversation.

``latency`` (one-way seconds) and ``bandwidth`` (bytes/s of the request upload) simulate a network:
a new connection costs two round trips (TCP, then TLS 1.3; the upgrade itself is not charged),
each request one round trip plus its upload time.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync import server as ws_server

PAD = "x" * 2000  # every tool result carries this much, so a conversation grows like an agent's


def script(
    context: list[dict[str, Any]], steps: int
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(response id, events, output items) answering ``context``."""
    done = sum(1 for item in context if item.get("type") == "function_call_output")
    rid = f"resp_{done}_{len(context)}"
    if done < steps - 1:
        args = json.dumps({"n": done})
        item = {
            "type": "function_call",
            "id": f"fc_{done}",
            "call_id": f"call_{done}",
            "name": "lookup",
            "arguments": args,
            "status": "completed",
        }
        body = [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": "", "status": "in_progress"},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "item_id": item["id"],
                "delta": args,
            },
            {
                "type": "response.function_call_arguments.done",
                "output_index": 0,
                "item_id": item["id"],
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
    else:
        text = f"Done after {done} lookups."
        item = {
            "type": "message",
            "id": f"msg_{done}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        body = [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": [], "status": "in_progress"},
            },
            {
                "type": "response.content_part.added",
                **where,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
            {"type": "response.output_text.delta", **where, "delta": text[:5]},
            {"type": "response.output_text.delta", **where, "delta": text[5:]},
            {"type": "response.output_text.done", **where, "text": text},
            {
                "type": "response.content_part.done",
                **where,
                "part": {"type": "output_text", "text": text, "annotations": []},
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
    usage = {
        "input_tokens": 10 * len(context),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 * len(context) + 7,
    }
    response = {"id": rid, "object": "response", "model": "gpt-test", "status": "in_progress", "output": []}
    events = [
        {"type": "response.created", "response": response},
        *body,
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [item], "usage": usage},
        },
    ]
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return rid, events, [item]


def not_found(previous: str) -> dict[str, Any]:
    return {
        "type": "error",
        "status": 400,
        "error": {
            "type": "invalid_request_error",
            "code": "previous_response_not_found",
            "message": f"Previous response with id '{previous}' not found.",
            "param": "previous_response_id",
        },
    }


@dataclass
class _Connection:
    index: int
    turns: int = 0
    last_id: str | None = None
    context: list[dict[str, Any]] = field(default_factory=list)
    busy: bool = False
    ws: Any = None


class _Network:
    def __init__(self, latency: float, bandwidth: float | None) -> None:
        self.latency = latency
        self.bandwidth = bandwidth

    def connect(self) -> None:
        if self.latency:
            time.sleep(4 * self.latency)

    def request(self, size: int) -> None:
        delay = 2 * self.latency + (size / self.bandwidth if self.bandwidth else 0.0)
        if delay:
            time.sleep(delay)


class SocketServer:
    """See the module doc. ``received`` holds ``(connection index, message)`` in arrival order."""

    def __init__(
        self,
        *,
        steps: int = 5,
        latency: float = 0.0,
        bandwidth: float | None = None,
        message_delay: float = 0.0,
        drop_after: int | None = None,
        turns_per_connection: int | None = None,
        close_code: int = 1000,
        close_reason: str = "",
        drops: int | None = None,
    ) -> None:
        self.steps = steps
        # Past this many responses a connection answers websocket_connection_limit_reached (what
        # OpenAI does after 60 minutes).
        self.turns_per_connection = turns_per_connection
        self.network = _Network(latency, bandwidth)
        self.message_delay = message_delay
        self.drop_after = drop_after  # close the connection after this many events of a response
        self.close_code, self.close_reason = close_code, close_reason  # ... with this close frame
        self.drops = drops  # ... this many times (None: every response)
        self.received: list[tuple[int, dict[str, Any]]] = []
        self.errors_sent: list[str] = []
        self.connections: list[_Connection] = []
        self.active = 0
        self._lock = threading.Lock()
        self._server = ws_server.serve(self._handle, "127.0.0.1", 0, process_request=self._upgrade)
        self.port: int = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _upgrade(self, connection: Any, request: Any) -> None:
        self.network.connect()

    def forget(self) -> None:
        """Evict every connection's state (what a server restart or a cache eviction does)."""
        with self._lock:
            for conn in self.connections:
                conn.last_id = None
                conn.context = []

    def drop_idle(self) -> None:
        """Close every connection not answering a request, from the server's side."""
        with self._lock:
            idle = [c.ws for c in self.connections if not c.busy and c.ws is not None]
        for ws in idle:
            ws.close()

    def _handle(self, ws: Any) -> None:
        with self._lock:
            conn = _Connection(len(self.connections), ws=ws)
            self.connections.append(conn)
            self.active += 1
        try:
            for raw in ws:
                conn.busy = True
                message = json.loads(raw)
                with self._lock:
                    self.received.append((conn.index, message))
                self.network.request(len(raw))
                self._answer(ws, conn, message)
                conn.busy = False
        except ConnectionClosed:
            pass
        finally:
            conn.busy = False
            with self._lock:
                self.active -= 1

    def _answer(self, ws: Any, conn: _Connection, message: dict[str, Any]) -> None:
        assert message.pop("type") == "response.create", message
        assert "stream" not in message and "background" not in message
        conn.turns += 1
        if self.turns_per_connection is not None and conn.turns > self.turns_per_connection:
            self.errors_sent.append("websocket_connection_limit_reached")
            limit = {"code": "websocket_connection_limit_reached", "message": "Connection limit reached."}
            ws.send(json.dumps({"type": "error", "status": 400, "error": limit}))
            return
        previous = message.get("previous_response_id")
        if previous is not None:
            if previous != conn.last_id:
                conn.last_id, conn.context = None, []  # an error evicts the connection's state
                self.errors_sent.append("previous_response_not_found")
                ws.send(json.dumps(not_found(previous)))
                return
            context = conn.context + message["input"]
        else:
            context = list(message["input"])
        rid, events, output = script(context, self.steps)
        if not events:
            conn.last_id, conn.context = rid, context + output
        for n, event in enumerate(events):
            if self.drop_after is not None and n == self.drop_after and self.drops != 0:
                if self.drops is not None:
                    self.drops -= 1
                ws.close(self.close_code, self.close_reason)
                return
            if self.message_delay:
                time.sleep(self.message_delay)
            if n == len(events) - 1:
                # the state is kept before the last event goes out: a client that reacts to it
                # (``forget()`` after a tool result) must find the state already there to evict
                with self._lock:
                    conn.last_id, conn.context = rid, context + output
            ws.send(json.dumps(event))

    def wait_idle(self, timeout: float = 5.0) -> int:
        deadline = time.monotonic() + timeout
        while self.active and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.active

    def __enter__(self) -> SocketServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join(5)


class HttpServer:
    """``POST /v1/responses`` -> the same scripted answer as SSE (keep-alive, HTTP/1.1)."""

    def __init__(self, *, steps: int = 5, latency: float = 0.0, bandwidth: float | None = None) -> None:
        network = _Network(latency, bandwidth)
        self.received: list[dict[str, Any]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers, then body: a delayed-ACK stall per reply

            def setup(self) -> None:
                network.connect()
                super().setup()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["content-length"]))
                body = json.loads(raw)
                received.append(body)
                network.request(len(raw))
                _, events, _ = script(list(body["input"]), steps)
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> HttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def servers(**options: Any) -> Iterator[tuple[SocketServer, HttpServer]]:
    with SocketServer(**options) as ws, HttpServer(**options) as http:
        yield ws, http
