"""Streamed tool calls reach clients as the upstream sent them: ``function.arguments`` deltas on
Chat and ``response.function_call_arguments.delta``/``.done`` (after ``response.in_progress``) on
Responses, the argument text byte for byte, read by the official openai SDK's ``stream`` helpers."""

from __future__ import annotations

from typing import Any

import openai

from llmroute.server import create_app, load

from ..reliability.server import DONE, FaultServer, Reply, chat_chunk
from .test_gateway import UPSTREAM_KEY, Served

KEY = "gw-tools-key-0123456789"
# spacing no JSON encoder would produce: re-encoding the parsed value would change these bytes
FRAGMENTS = ['{"city":', ' "Paris" ,', '"days" :  3', "}"]
ARGUMENTS = "".join(FRAGMENTS)
TOOL = {
    "name": "weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
}


def tool_stream() -> Reply:
    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}
    parts = [chat_chunk(tool=first)]
    parts += [chat_chunk(tool={"index": 0, "function": {"arguments": f}}) for f in FRAGMENTS]
    parts += [chat_chunk(finish="tool_calls"), DONE]
    return Reply(parts=parts)


def serve_tools(upstream: FaultServer) -> Served:
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


def test_chat_streams_tool_arguments_as_deltas(upstream: FaultServer) -> None:
    upstream.add(tool_stream())
    with serve_tools(upstream) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0)
        deltas: list[str] = []
        done: list[str] = []
        with client.chat.completions.stream(
            model="main",
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[{"type": "function", "function": TOOL}],
        ) as stream:
            for event in stream:
                if event.type == "tool_calls.function.arguments.delta":
                    deltas.append(event.arguments_delta)
                elif event.type == "tool_calls.function.arguments.done":
                    done.append(event.arguments)
            final = stream.get_final_completion()
    assert deltas == ["", *FRAGMENTS] and done == [ARGUMENTS]  # "": the opening chunk, as from OpenAI
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.type == "function" and (call.id, call.function.name) == ("call_1", "weather")
    assert call.function.arguments == ARGUMENTS


def test_responses_streams_function_call_arguments(upstream: FaultServer) -> None:
    upstream.add(tool_stream())
    with serve_tools(upstream) as served:
        client = openai.OpenAI(base_url=served.base_url, api_key=KEY, max_retries=0)
        types: list[str] = []
        deltas: list[str] = []
        with client.responses.stream(
            model="main", input="Weather in Paris?", tools=[{"type": "function", **TOOL}]
        ) as stream:
            for event in stream:
                types.append(event.type)
                if event.type == "response.function_call_arguments.delta":
                    deltas.append(event.delta)
                elif event.type == "response.function_call_arguments.done":
                    assert event.arguments == ARGUMENTS
            final = stream.get_final_response()
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types.count("response.function_call_arguments.done") == 1
    assert types.index("response.function_call_arguments.done") < types.index("response.output_item.done")
    assert types[-1] == "response.completed"
    assert deltas == FRAGMENTS
    (item,) = final.output
    assert item.type == "function_call" and item.status == "completed"
    assert (item.call_id, item.name, item.arguments) == ("call_1", "weather", ARGUMENTS)
