"""Fake upstreams for the router tests: OpenAI-Chat- and Anthropic-shaped servers on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

from llmroute import Model
from llmroute.providers import anthropic, google, openai

from ..reliability.server import FaultServer, Reply, chat_stream

JSON = {"content-type": "application/json"}
SSE = {"content-type": "text/event-stream"}


def chat_model(server: FaultServer, model_id: str = "m") -> Model:
    return openai.configure(api_key="sk-test-router", base_url=server.base_url).chat(model_id)


def claude_model(server: FaultServer, model_id: str = "claude-test") -> Model:
    return anthropic.configure(api_key="sk-ant-test-router", base_url=server.base_url).messages(model_id)


def gemini_model(server: FaultServer, model_id: str = "gemini-test") -> Model:
    return google.configure(api_key="gm-test-router", base_url=server.base_url).gemini(model_id)


def gemini_thinking_tool_call(name: str, args: dict[str, Any]) -> Reply:
    """Gemini thinks (its thought signed) and calls a function, in one SSE chunk."""
    parts = [
        {"text": "Gemini thinks.", "thought": True, "thoughtSignature": "SIG-GEMINI-ONLY"},
        {"functionCall": {"name": name, "args": args}, "thoughtSignature": "SIG-GEMINI-CALL"},
    ]
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
    }
    return Reply(200, SSE, [f"data: {json.dumps(chunk)}\r\n\r\n".encode()])


def anthropic_text(text: str) -> Reply:
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": usage,
    }
    return Reply(
        200,
        SSE,
        [
            _sse("message_start", {"type": "message_start", "message": message}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 3},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ],
    )


def ok(text: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(200, {**SSE, **(headers or {})}, chat_stream(text))


def error(status: int, message: str = "down", type_: str = "server_error", **headers: str) -> Reply:
    body = json.dumps({"error": {"message": message, "type": type_}}).encode()
    return Reply(status, {**JSON, **headers}, [body], chunked=False)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_thinking_tool_call(call_id: str, name: str, args: dict[str, Any]) -> Reply:
    """Claude thinks (with a signature), says a word, and calls a tool."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": usage,
    }
    parts = [
        _sse("message_start", {"type": "message_start", "message": message}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "I should look it up."},
            },
        ),
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "SIG-ANTHROPIC-ONLY"},
            },
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        ),
        _sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)},
            },
        ),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
        _sse(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return Reply(200, SSE, parts)


def anthropic_overloaded() -> Reply:
    body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    return Reply(529, JSON, [body.encode()], chunked=False)
