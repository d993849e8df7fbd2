"""Structured output through the gateway to an Anthropic upstream (issue #21): the official ``openai``
SDK asks with ``response_format`` (``json_schema`` and ``json_object``) or Responses ``text.format``;
the gateway lowers it to the request's output schema / JSON mode; the Anthropic protocol answers
through its forced tool (an older Claude: no native mode) and the client gets the JSON as the
message's content, never as a tool call."""

from __future__ import annotations

import json
from typing import Any

import openai

from llmroute.server import create_app, load

from ..reliability.server import FaultServer, Reply
from .test_gateway import GATEWAY_KEY, Served
from .test_gateway import config as base_config

CLAUDE = "claude-3-5-haiku-latest"
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "integer"}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}
ANSWER = {"city": "Paris", "temp_c": 21}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _tool_answer(name: str, value: dict[str, Any]) -> Reply:
    """An Anthropic stream whose only block is a call of ``name`` (the forced output tool)."""
    text = json.dumps(value)
    start = {"type": "message_start", "message": {"id": "msg_1", "model": CLAUDE, "content": [], "usage": {}}}
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    return Reply(
        parts=[
            _sse(
                [
                    start,
                    {"type": "content_block_start", "index": 0, "content_block": block},
                    *(
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": text[i : i + 7]},
                        }
                        for i in range(0, len(text), 7)
                    ),
                    {"type": "content_block_stop", "index": 0},
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "tool_use"},
                        "usage": {"input_tokens": 20, "output_tokens": 9},
                    },
                    {"type": "message_stop"},
                ]
            )
        ]
    )


def _serve(upstream: FaultServer) -> Served:
    cfg = base_config(upstream)
    cfg["models"] = {
        "claude": {
            "provider": "anthropic",
            "base_url": upstream.base_url,
            "api_key": "sk-ant-x",
            "model": CLAUDE,
        }
    }
    cfg.pop("webSearch", None)
    return Served(create_app(load(cfg, environ={})))


def _client(served: Served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.base_url, api_key=GATEWAY_KEY, max_retries=0)


def test_chat_json_schema_comes_back_as_content(upstream: FaultServer) -> None:
    upstream.add(_tool_answer("weather", ANSWER), _tool_answer("weather", ANSWER))
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True}}
    with _serve(upstream) as served:
        client = _client(served)
        ask: Any = [{"role": "user", "content": "Weather in Paris as JSON"}]
        whole = client.chat.completions.create(model="claude", messages=ask, response_format=fmt)
        chunks = list(
            client.chat.completions.create(model="claude", messages=ask, response_format=fmt, stream=True)
        )
    message = whole.choices[0].message
    assert json.loads(message.content or "") == ANSWER
    assert not message.tool_calls and whole.choices[0].finish_reason == "stop"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert json.loads(streamed) == ANSWER
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    sent = json.loads(upstream.received[0].body)
    assert sent["tools"][-1]["name"] == "weather" and sent["tools"][-1]["input_schema"] == SCHEMA
    assert sent["tool_choice"] == {"type": "tool", "name": "weather"}


def test_chat_json_object_is_json_mode(upstream: FaultServer) -> None:
    upstream.add(_tool_answer("json", {"ok": True}))
    with _serve(upstream) as served:
        reply = _client(served).chat.completions.create(
            model="claude",
            messages=[{"role": "user", "content": "Reply in JSON"}],
            response_format={"type": "json_object"},
        )
    assert json.loads(reply.choices[0].message.content or "") == {"ok": True}
    sent = json.loads(upstream.received[0].body)
    assert sent["tools"][-1]["name"] == "json" and sent["tools"][-1]["input_schema"] == {"type": "object"}


def test_responses_text_format_json_schema_and_json_object(upstream: FaultServer) -> None:
    upstream.add(_tool_answer("weather", ANSWER), _tool_answer("json", {"ok": True}))
    with _serve(upstream) as served:
        client = _client(served)
        schema: Any = {"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA, "strict": True}}
        first = client.responses.create(model="claude", input="Weather in Paris", text=schema)
        second = client.responses.create(
            model="claude", input="JSON please", text={"format": {"type": "json_object"}}
        )
    assert json.loads(first.output_text) == ANSWER
    assert json.loads(second.output_text) == {"ok": True}
    assert all(item.type == "message" for item in (*first.output, *second.output))
    names = [json.loads(r.body)["tool_choice"]["name"] for r in upstream.received]
    assert names == ["weather", "json"]
