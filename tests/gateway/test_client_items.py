"""Conversation items clients send back that the gateway used to refuse: a Responses
``function_call_output`` whose output is content parts, Responses ``reasoning`` items, a Chat
assistant ``refusal`` part and the legacy ``role: "function"`` turn. Each reaches the upstream."""

from __future__ import annotations

import json
from typing import Any

import httpx

from llmroute.server import create_app, load

from ..reliability.server import FaultServer
from .test_gateway import UPSTREAM_KEY, Served, answer

KEY = "gw-items-key-0123456789"


def serve_items(upstream: FaultServer) -> Served:
    config: dict[str, Any] = {
        "keys": [KEY],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "m",
            }
        },
    }
    return Served(create_app(load(config)))


def send(
    upstream: FaultServer, path: str, body: dict[str, Any]
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    upstream.add(answer("ok"))
    with serve_items(upstream) as served:
        response = httpx.post(
            served.base_url + path,
            headers={"authorization": f"Bearer {KEY}"},
            json={"model": "main", **body},
            timeout=10,
        )
    assert response.status_code == 200, response.text
    return response, json.loads(upstream.received[-1].body)["messages"]


def test_responses_function_call_output_as_content_parts(upstream: FaultServer) -> None:
    _, messages = send(
        upstream,
        "/responses",
        {
            "input": [
                {"role": "user", "content": "Weather?"},
                {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "sunny"},
                        {"type": "input_text", "text": "22 C"},
                    ],
                },
            ]
        },
    )
    tool = messages[-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "c1"
    assert "sunny" in json.dumps(tool["content"]) and "22 C" in json.dumps(tool["content"])


def test_responses_reasoning_items_are_accepted(upstream: FaultServer) -> None:
    _, messages = send(
        upstream,
        "/responses",
        {
            "input": [
                {"role": "user", "content": "2+2?"},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "Adding."}],
                    "encrypted_content": "gAAAA-opaque",
                },
                {"role": "assistant", "content": [{"type": "output_text", "text": "4"}]},
                {"role": "user", "content": "and 3+3?"},
            ]
        },
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "4"


def test_chat_refusal_part_and_legacy_function_role(upstream: FaultServer) -> None:
    _, messages = send(
        upstream,
        "/chat/completions",
        {
            "messages": [
                {"role": "user", "content": "Do the bad thing"},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
                {"role": "user", "content": "Weather in Paris then?"},
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "weather", "arguments": '{"city": "Paris"}'},
                },
                {"role": "function", "name": "weather", "content": "sunny"},
            ]
        },
    )
    assert messages[1] == {"role": "assistant", "content": "I can't help with that."}
    (call,) = messages[3]["tool_calls"]
    assert call["function"]["name"] == "weather" and json.loads(call["function"]["arguments"]) == {
        "city": "Paris"
    }
    assert messages[4] == {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}


def test_a_function_message_without_its_call_is_a_400(upstream: FaultServer) -> None:
    with serve_items(upstream) as served:
        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {KEY}"},
            json={"model": "main", "messages": [{"role": "function", "name": "weather", "content": "sunny"}]},
            timeout=10,
        )
    assert response.status_code == 400
    assert "messages[0]: a function message for 'weather'" in response.json()["error"]["message"]
