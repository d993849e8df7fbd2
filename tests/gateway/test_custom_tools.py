"""Custom tools (free-text input) through the gateway's Chat Completions endpoint: the client's
tool, forced choice and earlier calls reach the upstream in Chat's shape, and the upstream's custom
call comes back to the client as a custom call, streamed and whole."""

from __future__ import annotations

import json
from typing import Any

import httpx

from llmroute.schema.content import ToolCallPart
from llmroute.server.dialects import openai_chat

from ..reliability.server import DONE, FaultServer, chat_chunk
from .test_gateway import GATEWAY_KEY, answer, serve, sse

SQL = "SELECT * FROM users WHERE age > 25"
GRAMMAR = {"type": "grammar", "grammar": {"syntax": "lark", "definition": "start: /SELECT .*/"}}
TOOL = {"type": "custom", "custom": {"name": "write_sql", "description": "SQL only", "format": GRAMMAR}}
CALL = {"id": "call_1", "type": "custom", "custom": {"name": "write_sql", "input": SQL}}


def post(base_url: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {GATEWAY_KEY}"}
    return httpx.post(f"{base_url}/chat/completions", json=body, headers=headers, timeout=20)


def test_a_custom_tool_request_lowers_to_the_canonical_custom_tool() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "users over 25?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "3 rows"},
        ],
        "tools": [TOOL, {"type": "custom", "custom": {"name": "note", "format": {"type": "text"}}}],
        "tool_choice": {"type": "custom", "custom": {"name": "write_sql"}},
    }
    request = openai_chat.decode(json.dumps(body).encode()).request
    sql, note = request.tools
    assert (sql.kind, sql.name, sql.description) == ("custom", "write_sql", "SQL only")  # type: ignore[union-attr]
    assert sql.options == {  # type: ignore[union-attr]
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /SELECT .*/"}
    }
    assert (note.kind, note.options) == ("custom", None)  # type: ignore[union-attr]
    assert request.tool_choice is not None and request.tool_choice.name == "write_sql"
    (call,) = request.messages[1].content
    assert isinstance(call, ToolCallPart)
    assert (call.id, call.name, call.input) == ("call_1", "write_sql", SQL)
    assert request.messages[2].content[0].name == "write_sql"  # type: ignore[union-attr]


def test_custom_calls_pass_through_the_gateway_both_ways(upstream: FaultServer) -> None:
    first = {"index": 0, "id": "call_1", "type": "custom", "custom": {"name": "write_sql", "input": ""}}
    pieces = [{"index": 0, "custom": {"input": p}} for p in ("SELECT * ", "FROM users ", "WHERE age > 25")]
    upstream_call = sse(
        chat_chunk(tool=first), *(chat_chunk(tool=p) for p in pieces), chat_chunk(finish="tool_calls"), DONE
    )
    ask = {"model": "main", "messages": [{"role": "user", "content": "users over 25?"}], "tools": [TOOL]}
    with serve(upstream, policy="selective") as served:
        upstream.add(upstream_call)
        whole = post(served.base_url, ask).json()
        assert whole["choices"][0]["message"]["tool_calls"] == [CALL]
        assert whole["choices"][0]["finish_reason"] == "tool_calls"

        upstream.add(upstream_call)
        streamed = post(served.base_url, {**ask, "stream": True}).text
        chunks = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: {")]
        calls = [
            tc for c in chunks if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls") or ()
        ]
        assert calls == [{**CALL, "index": 0}]

        upstream.add(answer("Three users."))
        history = [
            *ask["messages"],
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "3 rows"},
        ]
        done = post(served.base_url, {**ask, "messages": history}).json()
        assert done["choices"][0]["message"]["content"] == "Three users."
    sent = [json.loads(r.body) for r in upstream.received]
    assert sent[0]["tools"] == [TOOL]
    assert sent[2]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 rows"},
    ]
