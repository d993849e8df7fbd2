"""Hostile bytes through ``Client`` on a real 127.0.0.1 socket: every malformed stream ends in
correct events or a typed ``LLMError`` -- never a raw ``UnicodeDecodeError``, ``RecursionError``,
``AttributeError`` or ``OverflowError`` -- and results never depend on read boundaries.

Each case starts from a real recording (``tests/routes.py``) and breaks one thing.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import anyio
import pytest

import llmroute
from llmroute import RetryPolicy
from llmroute.framing.eventstream import EventStreamDecoder, encode_message

from ..routes import EVENTSTREAM, PROTOCOLS, WireCase, frames
from .server import DONE, FaultServer, Reply, chat_chunk

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
    if case.headers is EVENTSTREAM:
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
    if case.headers is EVENTSTREAM:
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
            "anthropic",
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
            "anthropic",
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
    case = PROTOCOLS["bedrock"]
    name = b":date"
    header = bytes([len(name)]) + name + b"\x08" + struct.pack(">q", 2**63 - 1)
    parts = frames(case.body())
    parts.insert(1, _raw_frame(header, b"{}"))
    with pytest.raises(llmroute.InvalidProviderOutputError) as caught:
        await run(server, case, parts)
    assert "malformed headers (OverflowError)" in str(caught.value)
