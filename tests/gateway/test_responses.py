"""``POST /v1/responses`` on the gateway through the official ``openai`` SDK: the server search inside
the request, streamed events the SDK accumulates, function tools both ways, stateless refusals."""

from __future__ import annotations

import json

import openai
import pytest

from ..reliability.server import DONE, FaultServer, chat_chunk
from ..unit.test_server_web_search import GLM_SEARCH, main_calls_search
from .test_gateway import answer, body_of, sdk, serve, sse

TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_non_streamed_response_with_server_search(upstream: FaultServer) -> None:
    upstream.add(body_of(main_calls_search('{"query": "东京塔"}')), body_of(GLM_SEARCH), answer("333 m."))
    with serve(upstream) as served:
        response = sdk(served).responses.create(
            model="main", instructions="Be brief.", input="How tall is Tokyo Tower?"
        )
    assert response.output_text == "333 m."
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["message"]  # the search stays on the server
    assert response.usage is not None and response.usage.input_tokens == 125
    first = json.loads(upstream.received[0].body)
    assert first["messages"][:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "How tall is Tokyo Tower?"},
    ]
    assert len(upstream.received) == 3


def test_streamed_response_events(upstream: FaultServer) -> None:
    upstream.add(
        body_of(main_calls_search('{"query": "东京塔"}')),
        body_of(GLM_SEARCH),
        answer("Tokyo Tower", " is 333 m."),
    )
    with serve(upstream) as served:
        events = list(sdk(served).responses.create(model="main", input="How tall?", stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")  # type: ignore[union-attr]
    assert deltas == "Tokyo Tower is 333 m."
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    completed = events[-1].response  # type: ignore[union-attr]
    assert completed.output_text == "Tokyo Tower is 333 m."
    assert completed.usage is not None and completed.usage.output_tokens == 25 + 2
    assert kinds.index("response.output_item.added") < kinds.index("response.output_text.delta")
    assert kinds.index("response.output_item.done") > max(
        i for i, k in enumerate(kinds) if k.endswith(".delta")
    )


def test_stream_helper_accumulates_the_final_response(upstream: FaultServer) -> None:
    upstream.add(answer("Hello", " there."))
    with serve(upstream) as served, sdk(served).responses.stream(model="main", input="Hi") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == "Hello there."


def test_function_tools_both_ways(upstream: FaultServer) -> None:
    call = {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
    }
    upstream.add(sse(chat_chunk(tool=call), chat_chunk(finish="tool_calls"), DONE), answer("Cold."))
    with serve(upstream, policy="always") as served:
        client = sdk(served)
        first = client.responses.create(model="main", input="Weather in Oslo?", tools=[TOOL])  # type: ignore[list-item]
        (item,) = first.output
        assert item.type == "function_call"
        assert (item.call_id, item.name, json.loads(item.arguments)) == (
            "call_9",
            "get_weather",
            {"city": "Oslo"},
        )
        second = client.responses.create(
            model="main",
            tools=[TOOL],  # type: ignore[list-item]
            input=[
                {"role": "user", "content": "Weather in Oslo?"},
                {
                    "type": "function_call",
                    "call_id": "call_9",
                    "name": "get_weather",
                    "arguments": '{"city":"Oslo"}',
                },
                {"type": "function_call_output", "call_id": "call_9", "output": "-3 °C"},
            ],
        )
    assert second.output_text == "Cold."
    sent = json.loads(upstream.received[1].body)
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "web_search"]
    assert sent["messages"][1]["tool_calls"][0]["id"] == "call_9"
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": "call_9", "content": "-3 °C"}


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"previous_response_id": "resp_1"}, "stateless"),
        ({"tools": [{"type": "web_search"}]}, "only function tools"),
        (
            {"input": [{"type": "web_search_call", "id": "ws_1"}]},
            "input[0].type: unsupported input item 'web_search_call'",
        ),
    ],
)
def test_refusals_name_the_field(upstream: FaultServer, kwargs: dict[str, object], needle: str) -> None:
    with serve(upstream) as served, pytest.raises(openai.BadRequestError) as info:
        sdk(served).responses.create(model="main", **{"input": "x", **kwargs})  # type: ignore[arg-type]
    assert needle in info.value.message
    assert upstream.received == []


def test_upstream_down_is_an_error_status() -> None:
    gone = FaultServer().start()
    gone.stop()
    with serve(gone) as served, pytest.raises(openai.InternalServerError) as info:
        sdk(served).responses.create(model="main", input="x")
    assert info.value.status_code == 502
