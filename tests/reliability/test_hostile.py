"""Hostile bytes through ``Client`` on a real 127.0.0.1 socket: every malformed stream ends in
correct events or a typed ``LLMError`` -- never a raw ``UnicodeDecodeError``, ``RecursionError``,
``AttributeError`` or ``OverflowError`` -- and results never depend on read boundaries.

Each case starts from a real recording (``tests/routes.py``) and breaks one thing.
"""

from __future__ import annotations

import base64
import json
import logging
import struct
import time
import zlib
from typing import Any

import anyio
import httpx
import pytest

import llmroute
from llmroute import RetryPolicy
from llmroute.framing.eventstream import EventStreamDecoder, encode_message
from llmroute.tools import step_count_is

from ..routes import EVENTSTREAM, PROTOCOLS, WireCase, frames
from .server import DONE, FaultServer, Reply, Reset, chat_chunk

pytestmark = pytest.mark.anyio

BOUND = 10.0
DEEP = 5000  # levels: far past Python's recursion limit


def origin(server: FaultServer) -> str:
    return f"http://127.0.0.1:{server.port}"


async def run(
    server: FaultServer, case: WireCase, body: bytes | list[bytes], **kw: Any
) -> llmroute.LLMResponse:
    parts = body if isinstance(body, list) else [body]
    server.add(Reply(headers=case.headers, parts=parts))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none(), **kw) as client:
            return await client.generate(case.request(origin(server)))


def rewrite_payloads(body: bytes, change: Any) -> bytes:
    """An event-stream body with each payload passed through ``change`` (CRCs recomputed)."""
    messages = EventStreamDecoder().feed(body)
    return b"".join(encode_message(dict(m.headers), change(m.payload)) for m in messages)


def split_first(body: bytes) -> tuple[bytes, bytes]:
    """The first SSE event (with its blank line) and the rest."""
    end = min(i for i in (body.find(b"\n\n") + 2, body.find(b"\r\n\r\n") + 4) if i > 3)
    return body[:end], body[end:]


def deep_json(depth: int = DEEP) -> bytes:
    return b'{"a":' + b"[" * depth + b"]" * depth + b"}"


# invalid UTF-8 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PROTOCOLS))
async def test_invalid_utf8_inside_a_json_string_is_replaced(server: FaultServer, name: str) -> None:
    case = PROTOCOLS[name]
    body = case.body()
    broken = b"Pa\xffris"
    if case.headers == EVENTSTREAM:
        body = rewrite_payloads(body, lambda p: p.replace(b"Paris", broken))
    else:
        body = body.replace(b"Paris", broken)
    response = await run(server, case, body)
    assert [c.input for c in response.tool_calls] == [{"city": "Pa\ufffdris"}]
    assert response.finish_reason == "tool-calls"


async def test_a_character_split_across_two_events_is_replaced_not_raised(server: FaultServer) -> None:
    case = PROTOCOLS["openai-chat"]
    e_acute = "é".encode()
    first = chat_chunk("caf" + "\x00").replace(b"\\u0000", e_acute[:1])
    second = chat_chunk("\x00!").replace(b"\\u0000", e_acute[1:])
    response = await run(server, case, [first, second, chat_chunk(finish="stop"), DONE])
    assert response.text == "caf\ufffd\ufffd!"


# deep nesting ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PROTOCOLS))
async def test_deeply_nested_frame_is_typed(server: FaultServer, name: str) -> None:
    case = PROTOCOLS[name]
    body = case.body()
    if case.headers == EVENTSTREAM:
        parts = frames(body)
        deep = encode_message(
            {
                ":event-type": "contentBlockDelta",
                ":content-type": "application/json",
                ":message-type": "event",
            },
            deep_json(),
        )
        parts.insert(2, deep)
    else:
        first, rest = split_first(body)
        event = first.split(b"\n", 1)[0] + b"\n" if first.startswith(b"event: ") else b""
        parts = [first, event + b"data: " + deep_json() + b"\n\n", rest]
    with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
        await run(server, case, parts)
    assert "nested deeper than" in str(caught.value)
    assert caught.value.provider is not None
    assert caught.value.raw is not None and len(caught.value.raw) <= 2000


async def test_deeply_nested_tool_arguments_stay_raw_text(server: FaultServer) -> None:
    case = PROTOCOLS["openai-chat"]
    args = "[" * DEEP + "]" * DEEP
    tool = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": args}}
    response = await run(server, case, [chat_chunk(tool=tool), chat_chunk(finish="tool_calls"), DONE])
    assert [(c.name, c.input) for c in response.tool_calls] == [("f", args)]


async def test_deeply_nested_tool_arguments_sent_as_an_object_are_typed(server: FaultServer) -> None:
    # Gemini sends arguments as an object: 600 levels still decode, but never reach a tool.
    case = PROTOCOLS["gemini"]
    args: Any = {}
    for _ in range(600):
        args = {"a": args}
    call = {"functionCall": {"name": "get_weather", "args": args}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]}
    with pytest.raises(llmroute.InvalidProviderOutputError, match="nested deeper than 256"):
        await run(server, case, [b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"])


async def test_deeply_nested_error_body_is_typed(server: FaultServer) -> None:
    server.add(Reply(400, {"content-type": "application/json"}, [deep_json()], chunked=False))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none()) as client:
            with pytest.raises(llmroute.InvalidRequestError) as caught:
                await client.generate(PROTOCOLS["openai-chat"].request(origin(server)))
    assert "HTTP 400" in str(caught.value)


# wrong field types -------------------------------------------------------------------------------


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


@pytest.mark.parametrize(
    ("name", "hostile"),
    [
        pytest.param(
            "openai-responses",
            _sse(
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": "x"},
            ),
            id="responses-item-not-object",
        ),
        pytest.param(
            "openai-responses",
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": 7},
            ),
            id="responses-done-item-not-object",
        ),
        pytest.param(
            "anthropic-messages",
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": "5"},
                },
            ),
            id="anthropic-usage-string",
        ),
        pytest.param(
            "anthropic-messages",
            _sse(
                "message_delta", {"type": "message_delta", "delta": {}, "usage": {"output_tokens": {"n": 1}}}
            ),
            id="anthropic-usage-object",
        ),
        pytest.param(
            "gemini",
            b'data: {"candidates":[{"content":{"parts":[{"text":"x"}]}}],"usageMetadata":"lots"}\n\n',
            id="gemini-usage-metadata-string",
        ),
        pytest.param(
            "gemini",
            b'data: {"candidates":[{"content":{"parts":[{"text":"x"}]}}],"usageMetadata":{"promptTokenCount":"5"}}\n\n',
            id="gemini-usage-counter-string",
        ),
    ],
)
async def test_wrong_field_types_are_typed(server: FaultServer, name: str, hostile: bytes) -> None:
    case = PROTOCOLS[name]
    body = case.body()
    # Last, so no later well-formed event overwrites it (Gemini has no terminal event).
    parts = (
        [body, hostile]
        if name == "gemini"
        else [body[: body.rindex(b"event: ")], hostile, body[body.rindex(b"event: ") :]]
    )
    with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
        await run(server, case, parts)
    assert caught.value.provider is not None
    assert caught.value.raw is None or len(caught.value.raw) <= 2000


async def test_responses_usage_counter_as_object_is_typed(server: FaultServer) -> None:
    case = PROTOCOLS["openai-responses"]
    body = case.body()
    at = body.index(b"event: response.completed")
    completed = json.loads(body[at:].split(b"data: ", 1)[1].split(b"\n\n", 1)[0])
    completed["response"]["usage"]["input_tokens"] = {"n": 1}
    with pytest.raises(llmroute.InvalidProviderOutputError):
        await run(server, case, [body[:at], _sse("response.completed", completed)])


# event-stream headers ----------------------------------------------------------------------------


def _raw_frame(headers: bytes, payload: bytes) -> bytes:
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


async def test_eventstream_timestamp_out_of_range_is_typed(server: FaultServer) -> None:
    case = PROTOCOLS["bedrock-converse"]
    name = b":date"
    header = bytes([len(name)]) + name + b"\x08" + struct.pack(">q", 2**63 - 1)
    parts = frames(case.body())
    parts.insert(1, _raw_frame(header, b"{}"))
    with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
        await run(server, case, parts)
    assert "malformed headers (OverflowError)" in str(caught.value)


# huge single events ------------------------------------------------------------------------------


def test_sse_decoder_is_linear_in_event_size() -> None:
    """8 MiB in 1,448-byte reads (one TCP segment each): quadratic buffering took ~19 s of CPU; a
    linear decoder takes well under a second even on a busy machine."""
    from llmroute.framing.sse import SSEDecoder

    body = b'data: {"inlineData":"' + b"A" * (8 * 1024 * 1024) + b'"}\n\n'
    decoder = SSEDecoder(max_event_bytes=16 * 1024 * 1024)
    events = []
    started = time.process_time()
    for i in range(0, len(body), 1448):
        events.extend(decoder.feed(body[i : i + 1448]))
    assert time.process_time() - started < 3.0
    assert [len(e.data) for e in events] == [len(body) - 8]


async def test_huge_gemini_image_event_through_the_socket(server: FaultServer) -> None:
    case = PROTOCOLS["gemini"]
    image = base64.b64encode(b"\x89PNG" + b"\0" * (3 * 1024 * 1024)).decode()
    chunk = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": image}}],
                }
            }
        ]
    }
    body = b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" + case.body()
    parts = [body[i : i + 16384] for i in range(0, len(body), 16384)]
    response = await run(server, case, parts)
    assert response.tool_calls and response.complete


# silent corruption -------------------------------------------------------------------------------


async def test_reused_tool_call_index_with_a_new_id_is_a_new_call(server: FaultServer) -> None:
    # Some OpenAI-compatible servers send every call at index 0; the id tells them apart.
    def call(id: str | None, name: str | None, args: str) -> bytes:
        tool: dict[str, Any] = {"index": 0, "type": "function", "function": {"arguments": args}}
        if id is not None:
            tool["id"] = id
            tool["function"]["name"] = name
        return chat_chunk(tool=tool)

    parts = [
        call("call_a", "weather", '{"city":'),
        call(None, None, '"Paris"}'),
        call("call_b", "email", '{"to":"x@y.z"}'),
        chat_chunk(finish="tool_calls"),
        DONE,
    ]
    response = await run(server, PROTOCOLS["openai-chat"], parts)
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [
        ("call_a", "weather", {"city": "Paris"}),
        ("call_b", "email", {"to": "x@y.z"}),
    ]


@pytest.mark.parametrize("together", [True, False], ids=["same-read", "later-read"])
async def test_anthropic_events_after_message_stop_are_ignored(server: FaultServer, together: bool) -> None:
    case = PROTOCOLS["anthropic-messages"]
    body = case.body()
    late = _sse(
        "content_block_start",
        {"type": "content_block_start", "index": 9, "content_block": {"type": "text", "text": "late"}},
    ) + _sse("content_block_stop", {"type": "content_block_stop", "index": 9})
    parts = [body + late] if together else [body, late]
    response = await run(server, case, parts)
    assert "late" not in response.text
    assert [c.input for c in response.tool_calls] == [{"city": "Paris"}]


async def test_anthropic_replayed_block_start_is_typed(server: FaultServer) -> None:
    case = PROTOCOLS["anthropic-messages"]
    body = case.body()
    start = body.index(b"event: content_block_start")
    end = body.index(b"\n\n", start) + 2
    with pytest.raises(llmroute.InvalidProviderOutputError, match="used index"):
        await run(server, case, body[:end] + body[start:end] + body[end:])


def _duplicate_item_done(body: bytes) -> bytes:
    start = body.index(b"event: response.output_item.done")
    end = body.index(b"\n\n", start) + 2
    return body[:end] + body[start:end] + body[end:]


async def test_responses_duplicated_output_item_done_is_one_call(server: FaultServer) -> None:
    case = PROTOCOLS["openai-responses"]
    response = await run(server, case, _duplicate_item_done(case.body()))
    assert [c.input for c in response.tool_calls] == [{"city": "Paris"}]


async def test_the_tool_loop_never_runs_a_repeated_call_twice(server: FaultServer) -> None:
    case = PROTOCOLS["openai-responses"]
    runs: list[str] = []

    @llmroute.tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        runs.append(city)
        return "sunny"

    server.add(Reply(headers=case.headers, parts=[_duplicate_item_done(case.body())]))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none()) as client:
            response = await client.generate(
                case.request(origin(server)), tools=[get_weather], stop_when=step_count_is(1)
            )
    assert runs == ["Paris"]
    assert [r.result for r in response.tool_results] == ["sunny"]


# retries -----------------------------------------------------------------------------------------


def test_retry_delay_never_overflows() -> None:
    policy = RetryPolicy(max_retries=5000, jitter=0.25)
    delays = [policy.delay(n) for n in (1, 1000, 1025, 5000)]
    assert all(0.0 <= d <= policy.max_backoff for d in delays)


def test_retry_after_gets_jitter_above_the_hint() -> None:
    policy = RetryPolicy()  # jitter 0.25
    delays = [policy.delay(1, retry_after=1.0) for _ in range(100)]
    assert all(1.0 <= d <= 1.25 for d in delays)
    assert len(set(delays)) > 50  # 100 callers told "1 s" do not all wake together
    assert policy.delay(1, retry_after=1000.0) == policy.max_retry_after


async def test_429_retry_after_is_spread_through_the_client(server: FaultServer) -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    for _ in range(20):
        server.add(
            Reply(429, {"content-type": "application/json", "retry-after": "1"}, [b"{}"], chunked=False)
        )
        server.add(Reply(parts=[chat_chunk("ok"), chat_chunk(finish="stop"), DONE]))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(sleep=sleep) as client:
            for _ in range(20):
                assert (await client.generate(PROTOCOLS["openai-chat"].request(origin(server)))).text == "ok"
    assert len(sleeps) == 20 and all(1.0 <= s <= 1.25 for s in sleeps) and len(set(sleeps)) > 10


# secrets -----------------------------------------------------------------------------------------

OPAQUE = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c"  # a 32-hex Azure-style key: no recognisable shape


async def test_sigv4_signing_logs_are_dropped(server: FaultServer, caplog: pytest.LogCaptureFixture) -> None:
    from llmroute.providers import bedrock

    token = "IQoJb3JpZ2luX2VjEXAMPLEsessiontoken0123456789"
    provider = bedrock.configure(
        region="us-east-1",
        access_key_id="AKIDEXAMPLE",
        secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        session_token=token,
        base_url=origin(server),
    )
    request = llmroute.request(model=provider.converse("us.amazon.nova-micro-v1:0"), prompt="hi")
    server.add(Reply(headers=EVENTSTREAM, parts=frames(PROTOCOLS["bedrock-converse"].body())))
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none()) as client:
            assert (await client.generate(request)).complete
    signature = server.received[0].headers["authorization"].rsplit("Signature=", 1)[1]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert server.received[0].headers["x-amz-security-token"] == token
    assert token not in logged and signature not in logged
    assert not [r for r in caplog.records if r.name == "botocore.auth"]


async def test_log_redaction_by_value_covers_echoed_response_headers(
    server: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    from llmroute.providers import compatible

    model = compatible.configure(base_url=f"{origin(server)}/v1", api_key=OPAQUE).model("m")
    headers = {"content-type": "text/event-stream", "x-debug-echo": f"caller={OPAQUE}"}
    server.add(Reply(headers=headers, parts=[chat_chunk("ok"), chat_chunk(finish="stop"), DONE]))
    caplog.set_level(logging.DEBUG)
    # httpcore's pool (a caller's own httpx.AsyncClient) logs response headers at debug level; the
    # Client's default pool logs none
    with anyio.fail_after(BOUND):
        async with httpx.AsyncClient() as http, llmroute.Client(http, retry=RetryPolicy.none()) as client:
            assert (await client.generate(llmroute.request(model=model, prompt="hi"))).text == "ok"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "x-debug-echo" in logged  # httpcore did log the response headers ...
    assert OPAQUE not in logged  # ... with the key redacted by its value


@pytest.mark.parametrize("where", ["header", "query"])
def test_cassette_guard_refuses_a_key_echoed_by_value(tmp_path: Any, where: str) -> None:
    from llmroute.testing import Cassette, CassetteSecretError, Interaction, RecordedRequest, RecordedResponse

    if where == "header":  # Azure: api-key header, 32 hex, echoed in a 401 body
        url, headers = "https://x.openai.azure.com/openai/v1/chat/completions", {"api-key": [OPAQUE]}
    else:  # Gemini: ?key= in the URL, echoed in a 400 body
        url, headers = f"https://generativelanguage.googleapis.com/v1beta/models/m:generate?key={OPAQUE}", {}
    body = json.dumps({"error": {"message": f"Access denied due to invalid key {OPAQUE}"}}).encode()
    cassette = Cassette(
        [Interaction(RecordedRequest("POST", url, headers, b"{}"), RecordedResponse(401, {}, body))]
    )
    path = tmp_path / "echo.yaml"
    with pytest.raises(CassetteSecretError) as refused:
        cassette.save(path)
    assert not path.exists()
    assert OPAQUE not in str(refused.value)


async def test_transport_errors_keep_no_httpx_context(server: FaultServer) -> None:
    import traceback

    server.add(Reply(before=[Reset()]))
    request = PROTOCOLS["openai-responses"].request(origin(server))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none()) as client:
            with pytest.raises(llmroute.TransportError) as caught:
                await client.generate(request)
    err = caught.value
    assert err.__context__ is None and err.__cause__ is None
    text = "".join(traceback.format_exception(err))
    assert "sk-test-0123456789abcdef" not in text
    assert "During handling of the above exception" not in text  # no chained httpx error


# WebSocket -----------------------------------------------------------------------------------------


class RawSocketServer:
    """Answers each connection's upgrade request with ``reply(key)`` bytes, then holds the socket
    open until the client leaves: a server that breaks the WebSocket protocol on purpose."""

    def __init__(self, reply: Any) -> None:
        import socket
        import threading

        self.reply = reply
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        import contextlib

        with contextlib.suppress(OSError):
            conn, _ = self.sock.accept()
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(4096)
                key = next(
                    line.split(b":", 1)[1].strip()
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"sec-websocket-key:")
                )
                reply = self.reply(key)
                for n, part in enumerate(reply if isinstance(reply, list) else [reply]):
                    if n:
                        time.sleep(0.2)  # a later read, not the handshake's
                    conn.sendall(part)
                conn.settimeout(10)
                while conn.recv(4096):
                    pass

    def close(self) -> None:
        self.sock.close()

    def model(self, api_key: str = "sk-test-0123456789abcdef") -> llmroute.Model:
        from llmroute.providers import openai

        facade = openai.configure(api_key=api_key, base_url=f"http://127.0.0.1:{self.port}/v1")
        return facade.responses("gpt-5.5", transport="websocket")


def _accept(key: bytes) -> bytes:
    import hashlib

    digest = hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + base64.b64encode(digest) + b"\r\n\r\n"
    )


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(lambda key: _accept(key) + b"\x83\x00", id="reserved-opcode-after-handshake"),
        pytest.param(lambda key: b"garbage\r\n\r\n", id="garbage-handshake"),
        pytest.param(lambda key: b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", id="no-upgrade"),
    ],
)
async def test_websocket_protocol_violations_are_typed_at_once(reply: Any) -> None:
    pytest.importorskip("websockets")
    server = RawSocketServer(reply)
    try:
        with anyio.fail_after(BOUND):
            async with llmroute.Client(
                retry=RetryPolicy.none(), timeouts=llmroute.Timeouts(first_byte=3.0, idle=1.0)
            ) as client:
                started = anyio.current_time()
                with pytest.raises(llmroute.LLMError) as caught:
                    await client.generate(llmroute.request(model=server.model(), prompt="hi"))
                elapsed = anyio.current_time() - started
    finally:
        server.close()
    assert isinstance(caught.value, llmroute.TransportError | llmroute.InvalidProviderOutputError)
    assert "sk-test-0123456789abcdef" not in str(caught.value)
    assert elapsed < 2.0  # at once, not at the first-byte deadline


async def test_the_tool_loop_never_runs_a_duplicated_call_id_twice(server: FaultServer) -> None:
    # Two functionCall parts with the same id in one Gemini response: the response is refused typed
    # (test_protocol_violations.test_gemini_repeated_call_id_is_typed), so the tool never runs twice.
    case = PROTOCOLS["gemini"]
    call = {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [call, call]}, "finishReason": "STOP"}]}
    runs: list[str] = []

    @llmroute.tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        runs.append(city)
        return "sunny"

    server.add(Reply(headers=case.headers, parts=[b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"]))
    with anyio.fail_after(BOUND):
        async with llmroute.Client(retry=RetryPolicy.none()) as client:
            with pytest.raises(llmroute.InvalidProviderOutputError, match="function call id 'fc_1' repeated"):
                await client.generate(case.request(origin(server)), tools=[get_weather])
    assert runs == []


async def test_websocket_frame_logs_are_redacted_by_value(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("websockets")
    # the key first: websockets logs a frame's first ~75 characters
    message = json.dumps(
        {"message": f"{OPAQUE} is not a valid key", "type": "error", "code": "invalid_api_key"}
    ).encode()
    server = RawSocketServer(
        lambda key: [_accept(key), bytes([0x81, 126]) + struct.pack(">H", len(message)) + message]
    )
    caplog.set_level(logging.DEBUG)
    try:
        with anyio.fail_after(BOUND):
            async with llmroute.Client(retry=RetryPolicy.none()) as client:
                with pytest.raises(llmroute.LLMError) as caught:
                    await client.generate(llmroute.request(model=server.model(OPAQUE), prompt="hi"))
    finally:
        server.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert any(r.name == "websockets.client" for r in caplog.records)  # frames were logged ...
    assert OPAQUE not in logged and OPAQUE not in str(caught.value)  # ... without the key
