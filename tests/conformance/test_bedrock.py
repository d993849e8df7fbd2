"""Bedrock Converse on its real recorded bytes (opencode + pydantic-ai cassettes), under any
re-chunking, plus the request lowering and the typed failures."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import msgspec
import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import hosted
from llmroute.framing.eventstream import EventStreamDecoder, encode_message
from llmroute.protocols import bedrock_converse
from llmroute.providers import bedrock
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from tests.helpers import CASSETTES

EVENTSTREAM = "application/vnd.amazon.eventstream"
FACADE = bedrock.configure(region="us-east-1", api_key="test-bedrock-key")
NOVA = "us.amazon.nova-micro-v1:0"


def _streamed() -> list[tuple[str, Path, int]]:
    paths = [
        *(CASSETTES / "opencode/bedrock-converse").glob("*.yaml"),
        *(CASSETTES / "pydantic-ai/test_bedrock").glob("*.yaml"),
    ]
    out: list[tuple[str, Path, int]] = []
    for path in sorted(paths):
        for i, it in enumerate(Cassette.load(path).interactions):
            if it.response.header("content-type") == EVENTSTREAM:
                out.append((f"{path.stem}#{i}", path, i))
    return out


STREAMED = _streamed()
IDS = [s[0] for s in STREAMED]


def only(path: Path, index: int) -> Cassette:
    return Cassette([Cassette.load(path).interactions[index]])


def model_of(interaction: Interaction, **options: Any) -> llmroute.Model:
    """The model a recording was made with (its id is in the URL path)."""
    model_id = unquote(interaction.request.url.split("/model/", 1)[1].split("/", 1)[0])
    return FACADE.converse(model_id, **options)


async def generate(
    cassette: Cassette, requests: list[llmroute.LLMRequest], chunking: Chunking | None = None, **kwargs: Any
) -> tuple[list[llmroute.LLMResponse], ReplayTransport]:
    transport = ReplayTransport(cassette, chunking)
    out: list[llmroute.LLMResponse] = []
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport), **kwargs) as client:
        for request in requests:
            out.append(await client.generate(request))
    return out, transport


async def stream_events(cassette: Cassette, chunking: Chunking | None = None) -> list[llmroute.LLMEvent]:
    transport = ReplayTransport(cassette, chunking)
    request = llmroute.request(model=model_of(cassette.interactions[0]), prompt="x")
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        return [e async for e in client.stream(request)]


def protocol_events(body: bytes, chunks: list[bytes]) -> list[llmroute.LLMEvent]:
    """Decoder + protocol without the client, for fast property tests."""
    request = llmroute.request(model=FACADE.converse(NOVA), prompt="x")
    protocol = bedrock_converse.PROTOCOL
    state = protocol.new_state(request)
    decoder = EventStreamDecoder()
    out: list[llmroute.LLMEvent] = []
    for chunk in chunks:
        for frame in decoder.feed(chunk):
            protocol.step(state, frame, out)
    decoder.close()
    protocol.on_halt(state, out)
    return [*out, llmroute.Finish(state.reason, state.usage)]


def wire_json(body: dict[str, Any]) -> dict[str, Any]:
    """A recorded body as we send it: no ``modelId`` (it is in the URL) and no empty fields."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: clean(v)
                for k, v in value.items()
                if v not in ({}, [], None) or k in ("auto", "any", "json")
            }  # pyright: ignore[reportUnknownVariableType]
        if isinstance(value, list):
            return [clean(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
        return value

    return clean({k: v for k, v in body.items() if k != "modelId"})


def sent(transport: ReplayTransport, index: int = 0) -> dict[str, Any]:
    return json.loads(transport.requests[index].content)


# -- an independent reference: botocore's decoder + json, folded by hand ----------------------------


def reference(body: bytes) -> dict[str, Any]:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    blocks: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {"stop": None, "usage": None}
    for message in buffer:
        kind = message.headers[":event-type"]
        data = json.loads(message.payload)
        if kind == "contentBlockStart":
            blocks[data["contentBlockIndex"]] = {**data["start"], "_json": "", "_items": []}
        elif kind == "contentBlockDelta":
            block = blocks.setdefault(data["contentBlockIndex"], {"_json": "", "_items": []})
            delta = data["delta"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "reasoningContent" in delta:
                r = delta["reasoningContent"]
                for key in ("text", "signature", "redactedContent"):
                    if key in r:
                        block["r_" + key] = block.get("r_" + key, "") + r[key]
            if "toolUse" in delta:
                block["_json"] += delta["toolUse"]["input"]
            if "toolResult" in delta:
                block["_items"] += delta["toolResult"]
        elif kind == "messageStop":
            out["stop"] = data["stopReason"]
        elif kind == "metadata":
            out["usage"] = data["usage"]
    out["blocks"] = [blocks[i] for i in sorted(blocks)]
    out["indexes"] = sorted(blocks)
    return out


FINISH = {"end_turn": "stop", "tool_use": "tool-calls", "max_tokens": "length"}


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "path", "index"), STREAMED, ids=IDS)
async def test_recording_matches_the_reference_fold(name: str, path: Path, index: int) -> None:
    cassette = only(path, index)
    ref = reference(cassette.interactions[0].response.body)
    (response,), _ = await generate(
        cassette, [llmroute.request(model=model_of(cassette.interactions[0]), prompt="x")]
    )
    assert event_order_problems(response.events) == []
    assert response.text_blocks == {
        f"text-{i}": b["text"] for i, b in zip(ref["indexes"], ref["blocks"], strict=True) if "text" in b
    }
    reasoning = [p for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    assert [(p.text, p.signature, p.encrypted) for p in reasoning] == [
        (b.get("r_text", ""), b.get("r_signature"), b.get("r_redactedContent"))
        for b in ref["blocks"]
        if any(k.startswith("r_") for k in b)
    ]
    uses = [b for b in ref["blocks"] if "toolUse" in b]
    assert [(c.id, c.name, c.input, c.provider_executed) for c in response.tool_calls] == [
        (
            b["toolUse"]["toolUseId"],
            b["toolUse"]["name"],
            json.loads(b["_json"]),
            b["toolUse"].get("type") == "server_tool_use",
        )
        for b in uses
    ]
    results = [b for b in ref["blocks"] if "toolResult" in b]
    assert [(r.id, r.is_error, r.provider_executed) for r in response.tool_results] == [
        (b["toolResult"]["toolUseId"], b["toolResult"]["status"] == "error", True) for b in results
    ]
    client_tools = any(b["toolUse"].get("type") != "server_tool_use" for b in uses)
    expected = FINISH[ref["stop"]]
    assert response.finish_reason == ("tool-calls" if expected == "stop" and client_tools else expected)
    usage = response.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (
        ref["usage"]["inputTokens"],
        ref["usage"]["outputTokens"],
    )
    assert usage.total_tokens == ref["usage"]["totalTokens"]
    assert [type(e).__name__ for e in response.events].count("Finish") == 1


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "path", "index"), STREAMED, ids=IDS)
async def test_rechunking_gives_identical_events(name: str, path: Path, index: int) -> None:
    cassette = only(path, index)
    whole = await stream_events(cassette)
    for seed in (1, 2, 3):
        assert await stream_events(cassette, Chunking.random(seed, 64)) == whole, seed
    assert await stream_events(cassette, Chunking.fixed(7)) == whole
    body = cassette.interactions[0].response.body
    if len(body) < 2000:
        assert await stream_events(cassette, Chunking.bytewise()) == whole
    assert protocol_events(body, [body[i : i + 1] for i in range(len(body))]) == protocol_events(body, [body])


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_split_points_give_identical_events(data: st.DataObject) -> None:
    _, path, index = data.draw(st.sampled_from(STREAMED))
    body = Cassette.load(path).interactions[index].response.body
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert protocol_events(body, chunks) == protocol_events(body, [body])


# -- specific recordings -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_opencode_tool_loop_second_request_is_reproduced() -> None:
    cassette = Cassette.load(CASSETTES / "opencode/bedrock-converse/drives-a-tool-loop.yaml")
    recorded = [wire_json(it.request.json()) for it in cassette.interactions]
    weather = llmroute.ToolDefinition(
        "get_weather",
        "Get current weather for a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
    first = llmroute.request(
        model=model_of(cassette.interactions[0]),
        system="Use the get_weather tool, then answer in one short sentence.",
        prompt="What is the weather in Paris?",
        tools=[weather],
        generation=llmroute.GenerationOptions(max_tokens=80, temperature=0),
    )
    transport = ReplayTransport(cassette, Chunking.random(5, 40))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        step1 = await client.generate(first)
        assert step1.finish_reason == "tool-calls"
        [call] = step1.tool_calls
        assert (call.name, call.input) == ("get_weather", {"city": "Paris"})
        result = llmroute.ToolResultPart(call.id, call.name, {"temperature": 22, "condition": "sunny"})
        second = llmroute.request(
            model=first.model,
            system="Use the get_weather tool, then answer in one short sentence.",
            messages=[*first.messages, *step1.messages, llmroute.tool_message(result)],
            tools=[weather],
            generation=llmroute.GenerationOptions(max_tokens=80, temperature=0),
        )
        step2 = await client.generate(second)
    assert [sent(transport, 0), sent(transport, 1)] == recorded
    assert step2.text == "The weather in Paris is sunny with a temperature of 22 degrees."
    assert step2.finish_reason == "stop"
    assert step2.usage is not None and step2.usage.input_tokens == 510


@pytest.mark.anyio
async def test_pydantic_tool_loop_both_requests_are_reproduced() -> None:
    cassette = Cassette.load(CASSETTES / "pydantic-ai/test_bedrock/test_bedrock_model_iter_stream.yaml")
    recorded = [wire_json(it.request.json()) for it in cassette.interactions]
    tools = [
        llmroute.ToolDefinition(
            t["toolSpec"]["name"], t["toolSpec"]["description"], t["toolSpec"]["inputSchema"]["json"]
        )
        for t in recorded[0]["toolConfig"]["tools"]
    ]
    base = {
        "model": model_of(cassette.interactions[0]),
        "system": "You are a helpful chatbot.",
        "tools": tools,
        "generation": llmroute.GenerationOptions(top_p=0.5),
    }
    question = llmroute.user("What is the temperature of the capital of France?")
    (step1,), transport = await generate(
        Cassette([cassette.interactions[0]]), [llmroute.request(messages=[question], **base)]
    )
    [call] = step1.tool_calls
    assert (call.name, call.input) == ("get_temperature", {"city": "Paris"})
    reply = llmroute.tool_message(llmroute.ToolResultPart(call.id, call.name, "30°C"))
    (step2,), transport2 = await generate(
        Cassette([cassette.interactions[1]]),
        [llmroute.request(messages=[question, *step1.messages, reply], **base)],
    )
    assert [sent(transport), sent(transport2)] == recorded
    assert "30" in step2.text and step2.finish_reason == "stop"


@pytest.mark.anyio
async def test_code_execution_request_events_and_round_trip() -> None:
    cassette = Cassette.load(
        CASSETTES / "pydantic-ai/test_bedrock/test_bedrock_model_code_execution_tool_stream.yaml"
    )
    recorded = wire_json(cassette.interactions[0].request.json())
    spec = recorded["toolConfig"]["tools"][0]["toolSpec"]
    request = llmroute.request(
        model=model_of(cassette.interactions[0]),
        system="You are a helpful chatbot.",
        prompt="What is 1234 * 5678?",
        tools=[
            llmroute.ToolDefinition(spec["name"], spec["description"], spec["inputSchema"]["json"]),
            hosted.code_execution(),
        ],
        tool_choice="required",
    )
    (response,), transport = await generate(cassette, [request])
    assert sent(transport) == recorded
    server_call, final = response.tool_calls
    assert (server_call.name, server_call.input, server_call.provider_executed) == (
        "nova_code_interpreter",
        {"snippet": "1234 * 5678"},
        True,
    )
    [result] = response.tool_results
    assert result.provider_executed and result.result["stdOut"] == "7006652" and not result.is_error
    assert (final.name, final.input, final.provider_executed) == (
        "final_result",
        {"result": 7006652.0},
        False,
    )
    follow_up = bedrock_converse.build_body(
        llmroute.request(model=request.model, messages=[*request.messages, response.message]), request.model
    )
    blocks = _builtins(follow_up)["messages"][1]["content"]
    assert blocks[0] == {
        "toolUse": {
            "toolUseId": server_call.id,
            "name": "nova_code_interpreter",
            "input": {"snippet": "1234 * 5678"},
            "type": "server_tool_use",
        }
    }
    assert blocks[1]["toolResult"]["type"] == "nova_code_interpreter_result"
    assert blocks[1]["toolResult"]["content"] == [{"json": result.result}]
    assert blocks[2]["toolUse"]["name"] == "final_result"


def _builtins(body: Any) -> Any:
    return msgspec.to_builtins(body)


@pytest.mark.anyio
async def test_thinking_request_and_signature_round_trip() -> None:
    cassette = Cassette.load(
        CASSETTES / "pydantic-ai/test_bedrock/test_bedrock_model_thinking_part_stream.yaml"
    )
    recorded = wire_json(cassette.interactions[0].request.json())
    model = model_of(cassette.interactions[0], thinking={"type": "enabled", "budget_tokens": 1024})
    request = llmroute.request(model=model, prompt="Hello")
    (response,), transport = await generate(cassette, [request], Chunking.random(9, 30))
    assert sent(transport) == recorded
    [reasoning] = [p for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    assert reasoning.text.startswith("The user has greeted me") and reasoning.signature
    ends = [e for e in response.events if isinstance(e, llmroute.ReasoningEnd)]
    assert ends[0].signature == reasoning.signature
    body = _builtins(
        bedrock_converse.build_body(
            llmroute.request(model=model, messages=[*request.messages, response.message]), model
        )
    )
    assert body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": reasoning.text, "signature": reasoning.signature}}
    }
    assert body["messages"][1]["content"][1] == {"text": response.text}


@pytest.mark.anyio
async def test_redacted_reasoning_round_trips_verbatim() -> None:
    cassette = Cassette.load(
        CASSETTES / "pydantic-ai/test_bedrock/test_bedrock_model_thinking_part_redacted_stream.yaml"
    )
    ref = reference(cassette.interactions[0].response.body)
    model = model_of(cassette.interactions[0], thinking={"type": "enabled", "budget_tokens": 1024})
    request = llmroute.request(model=model, prompt="x")
    (response,), _ = await generate(cassette, [request])
    redacted = [p.encrypted for p in response.message.content if isinstance(p, llmroute.ReasoningPart)]
    assert (
        redacted == [b["r_redactedContent"] for b in ref["blocks"] if "r_redactedContent" in b]
        and len(redacted) == 2
    )
    body = _builtins(
        bedrock_converse.build_body(
            llmroute.request(model=model, messages=[*request.messages, response.message]), model
        )
    )
    assert [b["reasoningContent"] for b in body["messages"][1]["content"][:2]] == [
        {"redactedContent": r} for r in redacted
    ]


@pytest.mark.anyio
async def test_http_400_recording_is_a_typed_error() -> None:
    cassette = Cassette.load(CASSETTES / "pydantic-ai/test_bedrock/test_bedrock_streaming_error.yaml")
    with pytest.raises(llmroute.InvalidRequestError) as info:
        await generate(cassette, [llmroute.request(model=model_of(cassette.interactions[0]), prompt="hello")])
    assert "The provided model identifier is invalid." in str(info.value)
    assert info.value.http is not None and info.value.http.status == 400
    assert not info.value.retryable and info.value.provider == "bedrock"


# -- synthesised streams: exceptions, truncation, cache usage ----------------------------------------------


def ev(kind: str, payload: dict[str, Any]) -> bytes:
    return encode_message(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode(),
    )


def exc(kind: str, message: str) -> bytes:
    headers = {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"}
    return encode_message(headers, json.dumps({"message": message}).encode())


def cassette_of(*bodies: bytes) -> Cassette:
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{NOVA.replace(':', '%3A')}/converse-stream"
    return Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": [EVENTSTREAM]}, body),
            )
            for body in bodies
        ]
    )


START = ev("messageStart", {"role": "assistant"})
HELLO = ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}) + ev(
    "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "lo"}}
)
END = (
    ev("contentBlockStop", {"contentBlockIndex": 0})
    + ev("messageStop", {"stopReason": "end_turn"})
    + ev("metadata", {"usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}})
)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("throttlingException", llmroute.RateLimitError),
        ("modelStreamErrorException", llmroute.ProviderInternalError),
        ("validationException", llmroute.InvalidRequestError),
    ],
)
async def test_exception_frame_mid_stream_is_a_typed_error(kind: str, cls: type[Exception]) -> None:
    cassette = cassette_of(START + HELLO + exc(kind, "it broke") + END)
    seen: list[llmroute.LLMEvent] = []
    transport = ReplayTransport(cassette, Chunking.random(4, 16))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        with pytest.raises(cls) as info:
            async for event in client.stream(llmroute.request(model=FACADE.converse(NOVA), prompt="x")):
                seen.append(event)
    assert f"{kind}: it broke" in str(info.value)
    assert (
        "".join(e.text for e in seen if isinstance(e, llmroute.TextDelta)) == "Hello"
    )  # what came before it
    assert transport.open_streams == 0


@pytest.mark.anyio
async def test_throttling_as_the_first_event_is_retried() -> None:
    cassette = cassette_of(START + exc("throttlingException", "slow down"), START + HELLO + END)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    (response,), transport = await generate(
        cassette, [llmroute.request(model=FACADE.converse(NOVA), prompt="x")], sleep=sleep
    )
    assert response.text == "Hello" and len(transport.requests) == 2 and len(waits) == 1


@pytest.mark.anyio
async def test_truncated_stream_and_missing_message_stop_are_invalid_output() -> None:
    body = START + HELLO + END
    for broken, match in ((body[:-3], "inside a frame"), (START + HELLO, "before messageStop")):
        with pytest.raises(llmroute.InvalidProviderOutputError, match=match):
            await generate(cassette_of(broken), [llmroute.request(model=FACADE.converse(NOVA), prompt="x")])


@pytest.mark.anyio
async def test_stop_reason_and_cache_usage_merge_into_one_finish() -> None:
    usage = {
        "inputTokens": 100,
        "outputTokens": 5,
        "cacheReadInputTokens": 50,
        "cacheWriteInputTokens": 10,
        "totalTokens": 165,
    }
    body = (
        START
        + HELLO
        + ev("contentBlockStop", {"contentBlockIndex": 0})
        + ev("messageStop", {"stopReason": "max_tokens"})
        + ev("metadata", {"usage": usage, "metrics": {"latencyMs": 12}})
    )
    events = await stream_events(cassette_of(body))
    [finish] = [e for e in events if isinstance(e, llmroute.Finish)]
    assert finish.reason == "length"
    assert finish.usage is not None
    assert (finish.usage.input_tokens, finish.usage.non_cached_input_tokens) == (160, 100)
    assert (finish.usage.cache_read_tokens, finish.usage.cache_write_tokens, finish.usage.total_tokens) == (
        50,
        10,
        165,
    )
    assert event_order_problems(events) == []


@pytest.mark.anyio
async def test_citations_are_surfaced() -> None:
    citation = {
        "title": "Report",
        "sourceContent": [{"text": "Revenue grew 12%."}],
        "location": {"documentChar": {"documentIndex": 0, "start": 10, "end": 27}},
    }
    body = (
        START
        + HELLO
        + ev("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"citation": citation}})
        + END
    )
    events = await stream_events(cassette_of(body))
    [cite] = [e for e in events if isinstance(e, llmroute.Citation)]
    assert (cite.block_id, cite.title, cite.cited_text) == ("text-0", "Report", "Revenue grew 12%.")
    assert cite.provider_metadata == {"bedrock": {"location": citation["location"]}}


# -- lowering -------------------------------------------------------------------------------------------


async def prepare(request: llmroute.LLMRequest) -> llmroute.PreparedRequest:
    async with llmroute.Client() as client:
        return await client.prepare(request)


@pytest.mark.anyio
async def test_endpoint_headers_and_generation_options() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-v1:0"
    model = FACADE.converse(
        arn,
        thinking={"type": "enabled", "budget_tokens": 2048},
        guardrailConfig={"guardrailIdentifier": "g", "guardrailVersion": "1"},
    )
    generation = llmroute.GenerationOptions(
        max_tokens=100, temperature=0.2, top_p=0.9, top_k=40, stop=("END",), seed=1
    )
    prepared = await prepare(llmroute.request(model=model, prompt="hi", generation=generation))
    assert prepared.url == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-sonnet-4-v1%3A0/converse-stream"
    )
    assert (
        prepared.headers["accept"] == EVENTSTREAM and prepared.headers["content-type"] == "application/json"
    )
    assert prepared.json() == {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "inferenceConfig": {"maxTokens": 100, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
        "additionalModelRequestFields": {"top_k": 40, "thinking": {"type": "enabled", "budget_tokens": 2048}},
        "guardrailConfig": {"guardrailIdentifier": "g", "guardrailVersion": "1"},
    }


@pytest.mark.anyio
async def test_media_documents_and_tool_results() -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    pdf = b"%PDF-1.4 fake"
    messages = [
        llmroute.user(
            "look",
            llmroute.image(png),
            llmroute.MediaPart(
                "application/pdf",
                pdf,
                filename="Q3 report.v2.pdf",
                provider_metadata={"bedrock": {"citations": True}},
            ),
            llmroute.MediaPart("image/jpeg", "s3://bucket/cat.jpg"),
        ),
        llmroute.assistant(
            llmroute.ToolCallPart("t1", "shot", {"url": "x"}), llmroute.ToolCallPart("t2", "fail", {})
        ),
        llmroute.tool_message(
            llmroute.ToolResultPart("t1", "shot", (llmroute.TextPart("here"), llmroute.image(png))),
            llmroute.ToolResultPart("t2", "fail", "boom", is_error=True),
        ),
        llmroute.user("and now?"),
    ]
    tools = [llmroute.ToolDefinition("shot", "Screenshot"), llmroute.ToolDefinition("fail", "Fails")]
    body = (
        await prepare(llmroute.request(model=FACADE.converse(NOVA), messages=messages, tools=tools))
    ).json()
    b64 = base64.b64encode(png).decode()
    assert body["messages"][0]["content"] == [
        {"text": "look"},
        {"image": {"format": "png", "source": {"bytes": b64}}},
        {
            "document": {
                "format": "pdf",
                "name": "Q3 report-v2",
                "source": {"bytes": base64.b64encode(pdf).decode()},
                "citations": {"enabled": True},
            }
        },
        {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/cat.jpg"}}}},
    ]
    # tool results and the next user text merge into one user turn (Converse roles alternate)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {
            "toolResult": {
                "toolUseId": "t1",
                "content": [{"text": "here"}, {"image": {"format": "png", "source": {"bytes": b64}}}],
                "status": "success",
            }
        },
        {"toolResult": {"toolUseId": "t2", "content": [{"text": "boom"}], "status": "error"}},
        {"text": "and now?"},
    ]
    assert "toolChoice" not in body["toolConfig"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("part", "match"),
    [
        (llmroute.MediaPart("image/png", "https://example.com/a.png"), "s3:// URI"),
        (llmroute.MediaPart("audio/wav", b"RIFF"), "does not accept audio/wav"),
    ],
)
async def test_unsupported_media_is_an_invalid_request(part: llmroute.MediaPart, match: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError, match=match):
        await prepare(llmroute.request(model=FACADE.converse(NOVA), prompt=["x", part]))


@pytest.mark.anyio
async def test_hosted_tools_other_than_code_execution_are_refused() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="no hosted 'web_search' tool"):
        await prepare(llmroute.request(model=FACADE.converse(NOVA), prompt="x", tools=[hosted.web_search()]))


@pytest.mark.anyio
async def test_tool_choice_mapping() -> None:
    tool = llmroute.ToolDefinition("t", "d")

    async def config(choice: str | None, messages: list[llmroute.Message] | None = None) -> Any:
        request = llmroute.request(
            model=FACADE.converse(NOVA),
            messages=messages or [llmroute.user("x")],
            tools=[tool],
            tool_choice=choice,
        )
        return (await prepare(request)).json().get("toolConfig")

    assert (await config("auto"))["toolChoice"] == {"auto": {}}
    assert (await config("required"))["toolChoice"] == {"any": {}}
    assert (await config("t"))["toolChoice"] == {"tool": {"name": "t"}}
    assert await config(None) == {
        "tools": [
            {
                "toolSpec": {
                    "name": "t",
                    "inputSchema": {"json": {"type": "object", "properties": {}}},
                    "description": "d",
                }
            }
        ]
    }
    assert await config("none") is None
    history = [
        llmroute.user("x"),
        llmroute.assistant(llmroute.ToolCallPart("c", "t", {})),
        llmroute.tool_message(llmroute.ToolResultPart("c", "t", "ok")),
    ]
    kept = await config("none", history)  # Bedrock requires toolConfig when the history holds tool blocks
    assert kept is not None and "toolChoice" not in kept


@pytest.mark.anyio
async def test_cache_points_tools_then_system_then_messages_at_most_four() -> None:
    messages = [llmroute.user("a"), llmroute.assistant("b"), llmroute.user("c")]
    tools = [llmroute.ToolDefinition("t", "d")]
    base = {"model": FACADE.converse(NOVA), "system": "sys", "messages": messages, "tools": tools}
    body = (await prepare(llmroute.request(**base, cache=llmroute.CachePolicy(messages=5)))).json()
    point = {"cachePoint": {"type": "default"}}
    assert body["toolConfig"]["tools"][-1] == point
    assert body["system"] == [{"text": "sys"}, point]
    assert [m["content"][-1] == point for m in body["messages"]] == [False, True, True]
    assert json.dumps(body).count("cachePoint") == 4
    none = (await prepare(llmroute.request(**base))).json()
    assert "cachePoint" not in json.dumps(none)
    only_messages = (
        await prepare(
            llmroute.request(**base, cache=llmroute.CachePolicy(tools=False, system=False, messages=1))
        )
    ).json()
    assert (
        json.dumps(only_messages).count("cachePoint") == 1
        and only_messages["messages"][-1]["content"][-1] == point
    )


@pytest.mark.anyio
async def test_cache_points_carry_the_policy_ttl() -> None:
    messages = [llmroute.user("a"), llmroute.assistant("b"), llmroute.user("c")]
    tools = [llmroute.ToolDefinition("t", "d")]
    base = {"model": FACADE.converse(NOVA), "system": "sys", "messages": messages, "tools": tools}
    policy = llmroute.CachePolicy(messages=1, ttl="1h")
    body = (await prepare(llmroute.request(**base, cache=policy))).json()
    point = {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert body["toolConfig"]["tools"][-1] == point and body["system"][-1] == point
    assert [m["content"][-1] == point for m in body["messages"]] == [False, False, True]
    assert json.dumps(body).count("cachePoint") == 3


@pytest.mark.anyio
async def test_reasoning_from_metadata_and_empty_parts() -> None:
    history = [
        llmroute.user("q"),
        llmroute.assistant(
            llmroute.ReasoningPart("thought", provider_metadata={"bedrock": {"signature": "sig"}}),
            llmroute.ReasoningPart(""),  # nothing to send
            llmroute.TextPart(""),  # Bedrock rejects blank text blocks
            llmroute.TextPart("answer"),
        ),
        llmroute.user("more"),
    ]
    body = (await prepare(llmroute.request(model=FACADE.converse(NOVA), messages=history))).json()
    assert body["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "thought", "signature": "sig"}}},
        {"text": "answer"},
    ]


# -- Anthropic Messages on Bedrock: the same protocol inside Bedrock's envelope ----------------------------

ANTHROPIC_STREAMS = sorted((CASSETTES / "opencode/anthropic-messages").glob("stream*.yaml"))


def as_invoke_stream(sse_body: bytes) -> bytes:
    """Re-frame an Anthropic SSE body the way Bedrock's invoke-with-response-stream sends it."""
    frames: list[bytes] = []
    for block in sse_body.decode().replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            payload = {"bytes": base64.b64encode(data.encode()).decode(), "p": "abcdefgh"}
            frames.append(ev("chunk", payload))
    return b"".join(frames)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ANTHROPIC_STREAMS, ids=[p.stem for p in ANTHROPIC_STREAMS])
async def test_anthropic_on_bedrock_gives_the_same_events_as_anthropic(path: Path) -> None:
    from llmroute.providers import anthropic

    original = Cassette.load(path).interactions[0]
    direct_model = anthropic.configure(api_key="sk-ant-test").messages(original.request.json()["model"])
    transport = ReplayTransport(Cassette([original]))
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        expected = [e async for e in client.stream(llmroute.request(model=direct_model, prompt="x"))]

    model_id = "anthropic.claude-sonnet-4-20250514-v1:0"
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model_id.replace(':', '%3A')}/invoke-with-response-stream"
    body = as_invoke_stream(original.response.body)
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": [EVENTSTREAM]}, body),
            )
        ]
    )
    for chunking in (Chunking.whole(), Chunking.random(2, 48)):
        transport = ReplayTransport(cassette, chunking)
        async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
            got = [
                e async for e in client.stream(llmroute.request(model=FACADE.anthropic(model_id), prompt="x"))
            ]
        assert got == expected


@pytest.mark.anyio
async def test_anthropic_on_bedrock_request_is_signed_and_enveloped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    facade = bedrock.configure(
        region="eu-west-1", access_key_id="AKIDEXAMPLE", secret_access_key="secret-key-example"
    )
    model = facade.anthropic(
        "anthropic.claude-sonnet-4-20250514-v1:0", thinking={"type": "enabled", "budget_tokens": 1024}
    )
    prepared = await prepare(
        llmroute.request(
            model=model,
            system="be brief",
            prompt="hi",
            generation=llmroute.GenerationOptions(max_tokens=2048),
        )
    )
    assert prepared.url == (
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream"
    )
    assert prepared.headers["accept"] == EVENTSTREAM
    assert prepared.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "anthropic-version" not in prepared.headers
    body = prepared.json()
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body and "stream" not in body
    assert body["max_tokens"] == 2048 and body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


@pytest.mark.anyio
async def test_anthropic_on_bedrock_exception_frames_are_typed() -> None:
    model_id = "anthropic.claude-sonnet-4-20250514-v1:0"
    url = f"https://bedrock-runtime.us-east-1.amazonaws.com/model/{model_id.replace(':', '%3A')}/invoke-with-response-stream"
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "c",
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    }
    body = ev("chunk", {"bytes": base64.b64encode(json.dumps(start).encode()).decode()}) + exc(
        "modelStreamErrorException", "bad"
    )
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": [EVENTSTREAM]}, body),
            )
        ]
    )
    with pytest.raises(llmroute.ProviderInternalError, match="modelStreamErrorException: bad"):
        await generate(
            cassette,
            [llmroute.request(model=FACADE.anthropic(model_id), prompt="x")],
            retry=llmroute.RetryPolicy.none(),
        )


# -- non-streamed (stream=False): /converse and Anthropic-on-Bedrock /invoke ---------------------------

WHOLE = llmroute.GenerationOptions(stream=False)


def converse_body(body: bytes) -> dict[str, Any]:
    """The ``/converse`` JSON a converse-stream adds up to (content blocks by index: text and
    citations, reasoning text + signature or redacted bytes, tool use with its parsed input, tool
    results), written out from the event-stream frames."""
    blocks: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {}
    for frame in EventStreamDecoder().feed(body):
        event = json.loads(frame.payload)
        kind = frame.event_type
        if kind == "contentBlockStart":
            start = event["start"]
            block = blocks.setdefault(event["contentBlockIndex"], {})
            if "toolUse" in start:
                block["toolUse"] = {**start["toolUse"], "input": ""}
            if "toolResult" in start:
                block["toolResult"] = {**start["toolResult"], "content": []}
        elif kind == "contentBlockDelta":
            block, delta = blocks.setdefault(event["contentBlockIndex"], {}), event["delta"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            if "reasoningContent" in delta:
                r = delta["reasoningContent"]
                reasoning = block.setdefault("reasoningContent", {})
                if "redactedContent" in r:
                    reasoning["redactedContent"] = reasoning.get("redactedContent", "") + r["redactedContent"]
                else:
                    text = reasoning.setdefault("reasoningText", {})
                    for key in ("text", "signature"):
                        if key in r:
                            text[key] = text.get(key, "") + r[key]
            if "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            if "toolResult" in delta:
                block["toolResult"]["content"] += delta["toolResult"]
        elif kind == "messageStop":
            out["stopReason"] = event["stopReason"]
            if "additionalModelResponseFields" in event:
                out["additionalModelResponseFields"] = event["additionalModelResponseFields"]
        elif kind == "metadata":
            out.update({k: event[k] for k in ("usage", "metrics") if k in event})
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    content = [blocks[i] for i in sorted(blocks)]
    return {"output": {"message": {"role": "assistant", "content": content}}, **out}


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "path", "index"), STREAMED, ids=IDS)
async def test_streamed_and_non_streamed_forms_of_a_recording_agree(
    name: str, path: Path, index: int
) -> None:
    interaction = Cassette.load(path).interactions[index]
    whole = Interaction(
        RecordedRequest("POST", interaction.request.url.replace("/converse-stream", "/converse"), {}, b""),
        RecordedResponse(
            200,
            {"content-type": ["application/json"]},
            json.dumps(converse_body(interaction.response.body)).encode(),
        ),
    )
    request = llmroute.request(model=model_of(interaction), prompt="x")
    (streamed,), _ = await generate(Cassette([interaction]), [request])
    (unstreamed,), transport = await generate(
        Cassette([whole]), [msgspec.structs.replace(request, generation=WHOLE)]
    )
    assert transport.requests[0].url.path.endswith("/converse")
    assert transport.requests[0].headers["accept"] == "application/json"
    assert event_order_problems(unstreamed.events) == []
    for field in ("message", "citations", "tool_results", "usage", "finish_reason"):
        assert getattr(unstreamed, field) == getattr(streamed, field), field


@pytest.mark.anyio
async def test_anthropic_on_bedrock_non_streamed_is_invoke_with_a_plain_message() -> None:
    """``/invoke`` (not ``-with-response-stream``), the same enveloped body, and the plain Messages
    JSON answer decoded by the Anthropic whole-body handler."""
    model = FACADE.anthropic("anthropic.claude-sonnet-4-5")
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Hi"},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5/invoke"
    cassette = Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["application/json"]}, json.dumps(message).encode()),
            )
        ]
    )
    streaming = await llmroute.Client().prepare(llmroute.request(model=model, prompt="x"))
    (response,), transport = await generate(
        cassette, [llmroute.request(model=model, prompt="x", generation=WHOLE)]
    )
    sent_request = transport.requests[0]
    assert str(sent_request.url) == url and sent_request.headers["accept"] == "application/json"
    assert json.loads(sent_request.content) == json.loads(streaming.body)  # no stream key either way
    assert "stream" not in json.loads(sent_request.content)
    assert (response.reasoning, response.text, response.finish_reason) == ("hm", "Hi", "tool-calls")
    assert [(c.id, c.input) for c in response.tool_calls] == [("toolu_1", {"a": 1})]
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (
        5,
        7,
    )
