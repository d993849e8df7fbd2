"""Gemini 3 / Vertex streamed function-call arguments (``streamFunctionCallArguments``): the request
option, the ``partialArgs`` pieces of the Vercel AI SDK's recordings assembled into tool-input deltas
and calls, and the path writer under them as a property."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.protocols._partial_json import PathWriter, parse_path
from llmroute.providers import google, vertex
from llmroute.testing import Cassette, Chunking, event_order_problems
from tests.helpers import CASSETTES, replay_generate, sse_cassette

GOOGLE = CASSETTES / "vercel-ai/google"
GEMINI = google.configure(api_key="test-key")
VERTEX = vertex.configure(project="vercel-fixtures", location="global", access_token="ya29.test")
URL = "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse"


def _request(model: llmroute.Model, **kwargs: Any) -> llmroute.LLMRequest:
    return llmroute.request(model=model, prompt="x", **kwargs)


async def _body(request: llmroute.LLMRequest) -> dict[str, Any]:
    return json.loads((await llmroute.Client().prepare(request)).body)


# -- the request option ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_option_sets_stream_function_call_arguments_beside_the_tool_choice() -> None:
    tool = llmroute.ToolDefinition("get", "Get it.", {"type": "object", "properties": {}})
    model = VERTEX.gemini("gemini-3.1-pro-preview", stream_function_call_arguments=True)
    body = await _body(_request(model, tools=[tool]))
    assert body["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": True}}
    body = await _body(_request(model, tools=[tool], tool_choice="get"))
    assert body["toolConfig"] == {
        "functionCallingConfig": {
            "mode": "ANY",
            "allowedFunctionNames": ["get"],
            "streamFunctionCallArguments": True,
        }
    }
    options = {"google": {"streamFunctionCallArguments": False}}
    body = await _body(_request(GEMINI.gemini("m"), tools=[tool], provider_options=options))
    assert body["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": False}}
    assert "toolConfig" not in await _body(_request(GEMINI.gemini("m"), tools=[tool]))


@pytest.mark.anyio
async def test_a_non_bool_option_is_an_invalid_request() -> None:
    model = GEMINI.gemini("m", stream_function_call_arguments="yes")
    with pytest.raises(llmroute.InvalidRequestError, match="stream_function_call_arguments"):
        await _body(_request(model))


# -- the recordings ------------------------------------------------------------------------------------


def _pieces(body: bytes) -> list[dict[str, Any]]:
    """Every ``functionCall`` of a recorded stream, in order (read with plain json)."""
    calls: list[dict[str, Any]] = []
    for line in body.decode().splitlines():
        if line.startswith("data:"):
            for candidate in json.loads(line[5:]).get("candidates") or ():
                for part in (candidate.get("content") or {}).get("parts") or ():
                    if "functionCall" in part:
                        calls.append(part["functionCall"])
    return calls


STREAMS = [
    "google-stream-no-args-tool-call",
    "google-stream-tool-call-arguments",
    "google-stream-tool-call-array-arguments-missing-terminal-function-call",
    "google-vertex-stream-tool-call-arguments-nested.1",
]


@pytest.mark.anyio
@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("chunking", [Chunking.whole(), Chunking.random(7), Chunking.bytewise()], ids=str)
async def test_recorded_pieces_become_input_deltas_that_spell_each_call(
    name: str, chunking: Chunking
) -> None:
    cassette = Cassette.load(GOOGLE / f"{name}.chunks.yaml")
    model = (VERTEX if "vertex" in name else GEMINI).gemini(cassette.metadata["model"])
    response, _ = await replay_generate(cassette, _request(model), chunking)
    assert event_order_problems(response.events) == []
    opened = [c["name"] for c in _pieces(cassette.interactions[0].response.body) if "name" in c]
    assert [c.name for c in response.tool_calls] == opened
    assert response.finish_reason == "tool-calls"
    streamed = 0
    for call in response.tool_calls:
        assert not call.provider_executed
        deltas = [
            e.text for e in response.events if isinstance(e, llmroute.ToolInputDelta) and e.id == call.id
        ]
        if deltas:  # a streamed call: its deltas are its JSON, piece by piece (a whole call has none)
            streamed += 1
            assert json.loads("".join(deltas)) == call.input
    assert streamed == sum(
        1 for c in _pieces(cassette.interactions[0].response.body) if c.get("willContinue") and "name" in c
    )


@pytest.mark.anyio
async def test_nested_recorded_arguments_are_assembled() -> None:
    cassette = Cassette.load(GOOGLE / "google-vertex-stream-tool-call-arguments-nested.1.chunks.yaml")
    response, _ = await replay_generate(cassette, _request(VERTEX.gemini("gemini-3.1-pro-preview")))
    (call,) = response.tool_calls
    recipe = call.input["recipe"]
    assert recipe["name"] == "Lasagna" and len(recipe["ingredients"]) == 10 and len(recipe["steps"]) == 10
    assert recipe["ingredients"][0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert recipe["steps"][0] == "Preheat oven to 375°F (190°C)."
    # a string streamed in two pieces at one path is one value
    assert recipe["steps"][4] == "In a 9x13 baking dish, spread a thin layer of meat sauce."


def _chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": "r1"}


@pytest.mark.anyio
async def test_text_after_an_unclosed_streamed_call_closes_it_first() -> None:
    body = [
        _chunk({"functionCall": {"name": "get", "willContinue": True}}),
        _chunk(
            {"functionCall": {"partialArgs": [{"jsonPath": "$.k", "boolValue": True}], "willContinue": True}}
        ),
        _chunk({"text": "done"}, finish="STOP"),
    ]
    response, _ = await replay_generate(sse_cassette(URL, body, done=False), _request(GEMINI.gemini("m")))
    assert event_order_problems(response.events) == []
    kinds = [e.type for e in response.events if e.type in ("tool-call", "text-start")]
    assert kinds == ["tool-call", "text-start"]
    assert response.tool_calls[0].input == {"k": True} and response.text == "done"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "entry",
    [
        {"jsonPath": "location", "stringValue": "x"},
        {"jsonPath": "$.a[", "stringValue": "x"},
        {"jsonPath": "$.a"},
    ],
)
async def test_a_bad_piece_is_invalid_provider_output(entry: dict[str, Any]) -> None:
    body = [
        _chunk({"functionCall": {"name": "get", "willContinue": True}}),
        _chunk({"functionCall": {"partialArgs": [entry]}}, finish="STOP"),
    ]
    with pytest.raises(llmroute.InvalidProviderOutputError, match="partialArgs"):
        await replay_generate(
            sse_cassette(URL, body, done=False),
            _request(GEMINI.gemini("m")),
            retry=llmroute.RetryPolicy.none(),
        )


# -- the path writer ---------------------------------------------------------------------------------

_keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=1, max_size=6)
_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3) | st.dictionaries(_keys, inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)


def _path_text(path: tuple[str | int, ...]) -> str:
    return "$" + "".join(
        f"[{s}]" if isinstance(s, int) else "[" + json.dumps(s, ensure_ascii=False) + "]" for s in path
    )


def _pairs(value: Any, path: tuple[str | int, ...], cuts: st.DataObject) -> list[tuple[str, Any]]:
    """The leaves of ``value`` in document order as (path, value); strings cut into pieces."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _pairs(v, (*path, k), cuts)]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _pairs(v, (*path, i), cuts)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, str) and value:
        bounds = sorted(set(cuts.draw(st.lists(st.integers(1, len(value)), max_size=3))) | {len(value)})
        starts = [0, *bounds[:-1]]
        return [(_path_text(path), value[a:b]) for a, b in zip(starts, bounds, strict=True)]
    return [(_path_text(path), value)]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=4), st.data())
def test_pieces_in_document_order_spell_the_compact_json(args: dict[str, Any], cuts: st.DataObject) -> None:
    writer = PathWriter()
    text = "".join(writer.set(parse_path(path), value) for path, value in _pairs(args, (), cuts))
    text += writer.finish()
    assert writer.value == args
    assert text == msgspec.json.encode(args).decode()


def test_a_piece_out_of_order_stops_the_text_but_not_the_object() -> None:
    writer = PathWriter()
    text = writer.set(("a", 1), 1) + writer.set(("b",), 2) + writer.set(("a", 0), 0)
    assert text == '{"a":[null,1],"b":2'  # a valid prefix; nothing after the step back
    assert writer.finish() == "" and writer.value == {"a": [0, 1], "b": 2}


@pytest.mark.parametrize(
    ("path", "steps"),
    [("$.a.b[0]", ("a", "b", 0)), ("$['c d'][12].e", ("c d", 12, "e")), ('$["x\\"y"]', ('x"y',))],
)
def test_parse_path(path: str, steps: tuple[Any, ...]) -> None:
    assert parse_path(path) == steps


@pytest.mark.parametrize("path", ["$", "a.b", "$.a[x]", "$..a"])
def test_parse_path_rejects(path: str) -> None:
    with pytest.raises(ValueError, match="JSON path"):
        parse_path(path)
