"""Every registered protocol (``llmroute.providers.registry.PROTOCOLS``), held to the same properties
by hypothesis, with each protocol's stream generators from ``stream_generators.GENERATORS``:

- any order of its events (repeated, missing, out of place) is refused as a typed ``LLMError`` or
  replays to events ``event_order_problems`` finds nothing wrong with;
- a well-formed answer replays to well-ordered events whose text and reasoning join to what was
  sent, whose tool calls carry the sent ids, names and arguments (their input deltas byte for byte
  where the protocol streams them), with the sent finish reason and usage;
- the events do not depend on where the body is cut into reads.

Below them, each violation with its own message: a typed ``InvalidProviderOutputError``, never a
stream the caller cannot trust."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute.providers.registry import PROTOCOLS, ProtocolEntry
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)

from .stream_generators import (
    GENERATORS,
    MESSAGE_START,
    Reasoning,
    Script,
    Text,
    bedrock_body,
    call_item,
    chat_body,
    chat_chunk,
    gemini_body,
    reasoning_item,
    response,
    sse_body,
)

ENTRIES = {entry.name: entry for entry in PROTOCOLS}
MODELS = {entry.name: entry.sample("http://127.0.0.1:9") for entry in PROTOCOLS}


def _entry_ids(entry: ProtocolEntry) -> str:
    return entry.name


async def _generate(name: str, body: bytes, chunking: Chunking | None = None) -> llmroute.LLMResponse:
    entry = ENTRIES[name]
    response = RecordedResponse(200, {"content-type": [entry.content_type]}, body)
    cassette = Cassette([Interaction(RecordedRequest("POST", "http://127.0.0.1:9/", {}, b""), response)])
    http = httpx.AsyncClient(transport=ReplayTransport(cassette, chunking, check_url=False))
    async with llmroute.Client(http=http, retry=llmroute.RetryPolicy.none()) as client:
        return await client.generate(llmroute.request(model=MODELS[name], prompt="x"))


def _replay(name: str, body: bytes, chunking: Chunking | None = None) -> llmroute.LLMResponse:
    return anyio.run(_generate, name, body, chunking)


def _typed_or_well_ordered(name: str, body: bytes) -> None:
    try:
        response = _replay(name, body)
    except llmroute.LLMError:
        return  # refused, typed
    assert event_order_problems(response.events) == []


def _blocks(events: tuple[llmroute.LLMEvent, ...]) -> list[tuple[str, str]]:
    """(kind, text) of each text and reasoning block in the order they started, a run of one kind
    joined (protocols differ in where a block ends: Chat keeps one text block across a tool call)."""
    order: list[tuple[str, str]] = []
    texts: dict[tuple[str, str], list[str]] = {}
    for e in events:
        if isinstance(e, llmroute.TextStart | llmroute.ReasoningStart):
            key = ("text" if isinstance(e, llmroute.TextStart) else "reasoning", e.id)
            order.append(key)
            texts[key] = []
        elif isinstance(e, llmroute.TextDelta | llmroute.ReasoningDelta):
            texts[("text" if isinstance(e, llmroute.TextDelta) else "reasoning", e.id)].append(e.text)
    return _joined([(kind, "".join(texts[(kind, id)])) for kind, id in order])


def _joined(blocks: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind, text in blocks:
        if not text:
            continue
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _sent_blocks(script: Script) -> list[tuple[str, str]]:
    return _joined(
        [
            ("text" if isinstance(p, Text) else "reasoning", "".join(p.pieces))
            for p in script.parts
            if isinstance(p, Text | Reasoning)
        ]
    )


# -- properties every registered protocol is held to ---------------------------------------------------

_SHUFFLED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SCRIPTED = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("entry", PROTOCOLS, ids=_entry_ids)
def test_any_event_order_is_refused_typed_or_well_formed(entry: ProtocolEntry) -> None:
    generator = GENERATORS[entry.name]

    @settings(_SHUFFLED, max_examples=generator.shuffles)
    @given(generator.events)
    def check(body: bytes) -> None:
        _typed_or_well_ordered(entry.name, body)

    check()


@pytest.mark.parametrize("entry", PROTOCOLS, ids=_entry_ids)
def test_a_well_formed_answer_arrives_whole_and_in_order(entry: ProtocolEntry) -> None:
    generator = GENERATORS[entry.name]

    @_SCRIPTED
    @given(generator.script)
    def check(sent: tuple[Script, bytes]) -> None:
        script, body = sent
        response = _replay(entry.name, body)
        events = response.events
        assert event_order_problems(events) == []
        assert _blocks(events) == _sent_blocks(script)
        calls = [e for e in events if isinstance(e, llmroute.ToolCall)]
        assert [(c.id, c.name, c.input) for c in calls] == [
            (c.id, c.name, json.loads(c.arguments)) for c in script.calls
        ]
        if generator.streams_arguments:
            for call in script.calls:
                pieces = [
                    e.text for e in events if isinstance(e, llmroute.ToolInputDelta) and e.id == call.id
                ]
                assert "".join(pieces) == call.arguments  # byte for byte, whitespace and escapes kept
        assert response.finish_reason == script.reason
        assert response.usage is not None
        assert (response.usage.input_tokens, response.usage.output_tokens) == script.usage

    check()


@pytest.mark.parametrize("entry", PROTOCOLS, ids=_entry_ids)
def test_events_do_not_depend_on_where_reads_are_cut(entry: ProtocolEntry) -> None:
    @_SCRIPTED
    @given(GENERATORS[entry.name].script, st.integers(0, 2**16), st.sampled_from([1, 3, 17, 64]))
    def check(sent: tuple[Script, bytes], seed: int, size: int) -> None:
        _, body = sent
        whole = _replay(entry.name, body).events
        assert _replay(entry.name, body, Chunking.random(seed, size)).events == whole

    check()


# -- each violation, named ------------------------------------------------------------------------------


def _anthropic_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


_END = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [
                _anthropic_start(0, {"type": "text", "text": ""}),
                _anthropic_start(0, {"type": "text", "text": ""}),
            ],
            "content_block_start for used index 0",
        ),
        (
            [
                _anthropic_start(0, {"type": "text", "text": "a"}),
                {"type": "content_block_stop", "index": 0},
                _anthropic_start(0, {"type": "thinking", "thinking": ""}),
            ],
            "content_block_start for used index 0",
        ),
        (
            [
                _anthropic_start(0, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
                _anthropic_start(1, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}}),
            ],
            "tool use id 'toolu_a' repeated",
        ),
    ],
    ids=["open-index-reopened", "closed-index-reused", "tool-id-repeated"],
)
def test_anthropic_violations_are_typed(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        _replay("anthropic-messages", sse_body([MESSAGE_START, *events, *_END]))


_STOP = ("messageStop", {"stopReason": "end_turn"})
_META = ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}})


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [_STOP, ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "late"}})],
            "contentBlockDelta after messageStop",
        ),
        ([_STOP, _STOP], "messageStop after messageStop"),
        (
            [
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}}),
                ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "b"}}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "c"}}),
            ],
            "text block 'text-0' opened again after it ended",
        ),
        (
            [
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "a"}}}),
                ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "b"}}),
                ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "c"}}}),
            ],
            "reasoning block 'reasoning-0' opened again after it ended",
        ),
        (
            [
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "b", "name": "f"}}},
                ),
            ],
            "contentBlockStart for block 0, which already started",
        ),
        (
            [
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
                ("contentBlockStop", {"contentBlockIndex": 0}),
                (
                    "contentBlockStart",
                    {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}},
                ),
            ],
            "toolUseId 'a' repeated",
        ),
    ],
    ids=[
        "content-after-stop",
        "second-stop",
        "text-block-reopened",
        "reasoning-block-reopened",
        "tool-block-restarted",
        "tool-id-repeated",
    ],
)
def test_bedrock_violations_are_typed(events: list[tuple[str, dict[str, Any]]], message: str) -> None:
    body = bedrock_body([("messageStart", {"role": "assistant"}), *events, _STOP, _META])
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        _replay("bedrock-converse", body)


def test_gemini_repeated_call_id_is_typed() -> None:
    call = {"functionCall": {"name": "f", "args": {}, "id": "x"}}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [call, call]}, "finishReason": "STOP"}]}
    with pytest.raises(llmroute.InvalidProviderOutputError, match="function call id 'x' repeated"):
        _replay("gemini", gemini_body([chunk]))


def _text(item: str, delta: str, output_index: int = 0) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": item,
        "output_index": output_index,
        "content_index": 0,
        "delta": delta,
    }


def test_responses_text_part_reopened_after_it_ended_is_typed() -> None:
    """Text for a message part whose block another part already ended: the block is not opened a
    second time (a consumer has seen it end); the stream is refused naming the part."""
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        _text("msg_a", "one"),
        _text("msg_b", "two", 1),
        _text("msg_a", "three"),
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
    ]
    with pytest.raises(llmroute.InvalidProviderOutputError, match="text block 'msg_a:0' opened again"):
        _replay("openai-responses", sse_body(events))


def _fragment(**call: Any) -> dict[str, Any]:
    return chat_chunk({"tool_calls": [call]})


_CALL_A = _fragment(index=0, id="call_a", type="function", function={"name": "f", "arguments": '{"a":'})
_CHAT_END = [chat_chunk({}, "tool_calls"), "[DONE]"]


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        (
            [_CALL_A, _fragment(index=1, function={"arguments": "1}"}), *_CHAT_END],
            "tool-call fragment for an unknown call",
        ),
        (
            # a second call under the first one's id: the caller could answer only one
            [
                _CALL_A,
                _fragment(index=1, id="call_a", type="function", function={"name": "g", "arguments": "{}"}),
            ],
            "tool call id 'call_a' repeated",
        ),
        (
            # the call went out at the finish with ``{"a":``; the rest of its input cannot follow it
            [
                _CALL_A,
                chat_chunk({}, "tool_calls"),
                _fragment(index=0, function={"arguments": "1}"}),
                "[DONE]",
            ],
            r"tool call 'f' \('call_a'\): input after the call ended",
        ),
        ([chat_chunk({"content": "cut"})], r"stream ended before a finish_reason or \[DONE\]"),
    ],
    ids=["fragment-for-unknown-call", "call-id-repeated", "arguments-after-finish", "no-finish"],
)
def test_chat_violations_are_typed(chunks: list[dict[str, Any] | str], message: str) -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        _replay("openai-chat", chat_body(chunks))


def _item(kind: str, item: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": f"response.output_item.{kind}", "item": item, "output_index": n}


def _arguments(item: str, n: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": item,
        "output_index": n,
        "delta": delta,
    }


def _summary(delta: str) -> dict[str, Any]:
    where = {"item_id": "rs_a", "output_index": 0, "summary_index": 0}
    return {"type": "response.reasoning_summary_text.delta", **where, "delta": delta}


_CREATED = {"type": "response.created", "response": response("in_progress")}
_COMPLETED = {"type": "response.completed", "response": response("completed", (1, 2))}
_FC_A = call_item("fc_a", "call_a", "f", "in_progress")
_FC_A_DONE = call_item("fc_a", "call_a", "f", "completed", '{"a":1}')


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [
                _item("added", _FC_A, 0),
                _item("done", _FC_A_DONE, 0),
                _item("added", call_item("fc_b", "call_a", "g", "in_progress"), 1),
                _item("done", call_item("fc_b", "call_a", "g", "completed", "{}"), 1),
                _COMPLETED,
            ],
            "call id 'call_a' repeated",
        ),
        (
            [
                _item("done", _FC_A_DONE, 0),
                _item("done", call_item("fc_b", "call_a", "g", "completed", "{}"), 1),
            ],
            "call id 'call_a' repeated",
        ),
        (
            [_arguments("fc_x", 0, '{"a":1}'), _COMPLETED],
            "arguments for item 'fc_x', which was never added",
        ),
        (
            [
                _item("added", reasoning_item("rs_a"), 0),
                _summary("hm"),
                _item("done", reasoning_item("rs_a", "hm"), 0),
                _summary("late"),
                _COMPLETED,
            ],
            "reasoning block 'rs_a:0' opened again after it ended",
        ),
        ([_item("added", _FC_A, 0), _arguments("fc_a", 0, "{}")], "stream ended before response.completed"),
    ],
    ids=[
        "call-id-repeated",
        "call-id-repeated-whole-items",
        "arguments-never-added",
        "summary-after-done",
        "no-completed",
    ],
)
def test_responses_violations_are_typed(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError, match=message):
        _replay("openai-responses", sse_body([_CREATED, *events]))


def test_a_responses_call_item_replayed_is_one_call() -> None:
    """A proxy replaying a call item's events (added again while open, again after its done, the
    done again) yields one call, its input as the done item has it: as a repeated done always was."""
    events = [
        _CREATED,
        _item("added", _FC_A, 0),
        _arguments("fc_a", 0, '{"a":'),
        _item("added", _FC_A, 0),
        _arguments("fc_a", 0, "1}"),
        _item("done", _FC_A_DONE, 0),
        _item("added", _FC_A, 0),
        _arguments("fc_a", 0, '{"a":1}'),
        _item("done", _FC_A_DONE, 0),
        _COMPLETED,
    ]
    result = _replay("openai-responses", sse_body(events))
    assert event_order_problems(result.events) == []
    starts = [e for e in result.events if isinstance(e, llmroute.ToolInputStart)]
    assert [(e.id, e.name) for e in starts] == [("call_a", "f")]
    assert [(c.id, c.input) for c in result.tool_calls] == [("call_a", {"a": 1})]
    assert result.finish_reason == "tool-calls"


def test_tool_input_after_its_end_is_an_order_problem() -> None:
    events = [
        llmroute.ToolInputStart("c", "f"),
        llmroute.ToolInputEnd("c", "f"),
        llmroute.ToolCall("c", "f", {}),
        llmroute.ToolInputDelta("c", "f", "{}"),
    ]
    assert "#3 tool input delta for 'c' after its end" in event_order_problems(events)
