"""Responses output items beyond messages and functions, on real recorded bytes (``cassettes/vercel-ai``):
built-in tools the client runs, the server's own shell and tool search, xAI's server-side tools,
and the shapes a parser must survive (unknown events, rotating item ids) or refuse (typed errors)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import client_tools, hosted
from llmroute.framing.sse import SSEDecoder
from llmroute.protocols import openai_responses
from llmroute.providers import anthropic, openai, xai
from llmroute.testing import (
    Cassette,
    Chunking,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    ReplayTransport,
    event_order_problems,
)
from llmroute.tools.runtime import dispatch
from tests.helpers import CASSETTES

VERCEL = CASSETTES / "vercel-ai"
OPENAI = openai.configure(api_key="sk-test")
URL = "https://api.openai.com/v1/responses"


async def generate(
    source: str | bytes, model: llmroute.Model | None = None, chunking: Chunking | None = None
) -> llmroute.LLMResponse:
    """One response: a Vercel cassette by name (its first interaction), or raw SSE bytes."""
    if isinstance(source, str):
        interactions = Cassette.load(VERCEL / f"{source}.yaml").interactions[:1]
    else:
        interactions = [
            Interaction(
                RecordedRequest("POST", URL, {}, b""),
                RecordedResponse(200, {"content-type": ["text/event-stream"]}, source),
            )
        ]
    transport = ReplayTransport(interactions, chunking, check_url=False)
    async with llmroute.Client(
        http=httpx.AsyncClient(transport=transport), retry=llmroute.RetryPolicy.none()
    ) as c:
        return await c.generate(llmroute.request(model=model or OPENAI.responses("gpt-5.1"), prompt="x"))


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


CREATED = {"type": "response.created", "response": {"id": "r", "model": "m", "status": "in_progress"}}
DELTA = {
    "type": "response.output_text.delta",
    "item_id": "m1",
    "output_index": 0,
    "content_index": 0,
    "delta": "Hi",
}
COMPLETED = {"type": "response.completed", "response": {"id": "r", "model": "m", "status": "completed"}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fixture", "name", "item_type", "input_key"),
    [
        ("openai/responses/openai-local-shell-tool.1.chunks", "local_shell", "local_shell_call", "command"),
        ("openai/responses/openai-shell-tool.1.chunks", "shell", "shell_call", "commands"),
        ("openai/responses/openai-apply-patch-tool.1.chunks", "apply_patch", "apply_patch_call", "path"),
        ("openai/responses/openai-client-tool-search.1.chunks", "tool_search", "tool_search_call", "goal"),
        ("openai/responses/openai-custom-tool.1.chunks", "write_sql", "custom_tool_call", None),
    ],
)
async def test_client_built_in_calls_are_handed_to_the_caller_with_their_item_type(
    fixture: str, name: str, item_type: str, input_key: str | None
) -> None:
    response = await generate(fixture)
    (call,) = response.tool_calls
    assert (call.name, call.provider_executed, response.finish_reason) == (name, False, "tool-calls")
    assert call.id.startswith("call_")  # the call id the output item must answer
    assert call.provider_metadata is not None
    assert call.provider_metadata["openai"]["item_type"] == item_type
    if input_key is None:
        assert call.input == "SELECT * FROM users WHERE age > 25"  # freeform: the text as sent, not JSON
    else:
        assert input_key in call.input
    assert not response.tool_results  # nothing invented: the caller runs it


@pytest.mark.anyio
async def test_a_shell_call_run_in_the_servers_container_is_hosted_with_its_output_as_result() -> None:
    response = await generate("openai/responses/openai-shell-container.1.chunks")
    (call,) = response.tool_calls
    (result,) = response.tool_results
    assert (call.name, call.provider_executed, call.id) == ("shell", True, result.id)
    assert call.input == {
        "commands": ["echo 'Hello from container!' && uname -a"],
        "max_output_length": None,
        "timeout_ms": None,
    }
    assert result.provider_executed and not result.is_error
    assert result.result["output"][0]["stdout"].startswith("Hello from container!")
    assert response.finish_reason == "stop"


@pytest.mark.anyio
async def test_server_tool_search_is_hosted_with_the_tools_it_found() -> None:
    response = await generate("openai/responses/openai-tool-search.1.chunks")
    hosted_calls = [c for c in response.tool_calls if c.provider_executed]
    assert [(c.name, c.input) for c in hosted_calls] == [("tool_search", {"paths": ["get_weather"]})]
    (result,) = [r for r in response.tool_results if r.provider_executed]
    assert result.id == hosted_calls[0].id and result.result["tools"]


@pytest.mark.anyio
async def test_unknown_event_with_shapes_of_its_own_is_skipped() -> None:
    unknown = {"type": "response.shell_call_output_content.delta", "delta": {"stdout": "x"}, "item_id": 7}
    response = await generate(sse(CREATED, unknown, DELTA, COMPLETED), chunking=Chunking.bytewise())
    assert (response.text, response.finish_reason) == ("Hi", "stop")


@pytest.mark.anyio
async def test_an_unknown_item_with_shapes_of_its_own_is_kept_raw_not_fatal() -> None:
    item = {"type": "future_call", "id": "fx_1", "arguments": [1, 2], "input": {"a": 1}}
    stream = sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {**DELTA, "output_index": 1},
        COMPLETED,
    )
    response = await generate(stream)
    assert (response.text, response.tool_calls) == ("Hi", ())
    (finish,) = [e for e in response.events if isinstance(e, llmroute.StepFinish)]
    assert finish.provider_metadata is not None and finish.provider_metadata["other_items"] == [item]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "bad",
    [
        {**DELTA, "delta": {"text": "Hi"}},  # a known event with a bad field
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {"type": "tool_search_call", "id": "t", "arguments": 42, "execution": "client"},
        },
    ],
)
async def test_a_known_event_with_a_bad_shape_is_a_typed_error_with_the_frame(bad: dict[str, Any]) -> None:
    with pytest.raises(llmroute.InvalidProviderOutputError) as info:
        await generate(sse(CREATED, bad, COMPLETED))
    assert info.value.raw is not None and '"type"' in info.value.raw


@pytest.mark.anyio
async def test_rotating_item_ids_keep_one_text_block_per_part() -> None:
    response = await generate("openai/responses/github-copilot-id-rotation.1.chunks")
    starts = [e for e in response.events if isinstance(e, llmroute.TextStart)]
    assert len(starts) == 1 and response.text.startswith("There are **3** letter")
    assert response.text.count("There are") == 1
    # the block carries the id its item was added with, so history lowers back into one message
    assert starts[0].provider_metadata == {"openai": {"item_id": "capture-id-9", "phase": "final_answer"}}


@pytest.mark.anyio
async def test_xai_responses_reports_its_server_side_tools_as_hosted_calls() -> None:
    model = xai.configure(api_key="test-key").responses("grok-4-fast-reasoning")
    response = await generate("xai/responses/xai-x-search-tool.chunks", model)
    names = [c.name for c in response.tool_calls]
    assert names[0] == "x_keyword_search" and names[-1] == "view_x_video"
    assert all(c.provider_executed for c in response.tool_calls)
    assert response.tool_calls[-1].input == {
        "video_url": "https://video.twimg.com/amplify_video/1991284765027364866/vid/avc1/468x270/kRkbodV96jk4PmbG.mp4"
    }  # xAI's input is JSON text: parsed
    assert response.finish_reason == "stop"
    # the same bytes through the OpenAI route: custom tools are the client's
    openai_route = await generate(
        "xai/responses/xai-x-search-tool.chunks", OPENAI.responses("grok-4-fast-reasoning")
    )
    assert not openai_route.tool_calls[0].provider_executed


@pytest.mark.anyio
async def test_xai_responses_request_goes_to_xai_with_x_search() -> None:
    model = xai.configure(api_key="test-key").responses("grok-4", reasoning_effort="low")
    request = llmroute.request(model=model, prompt="x", tools=[hosted.x_search(allowed_x_handles=["xai"])])
    prepared = await llmroute.Client().prepare(request)
    assert prepared.url == "https://api.x.ai/v1/responses"
    body = json.loads(prepared.body)
    assert body["tools"] == [{"type": "x_search", "allowed_x_handles": ["xai"]}]
    assert body["reasoning"] == {"effort": "low"}
    with pytest.raises(llmroute.InvalidRequestError, match="x_search"):
        await llmroute.Client().prepare(
            llmroute.request(model=OPENAI.responses("m"), prompt="x", tools=[hosted.x_search()])
        )


@pytest.mark.anyio
async def test_mcp_approval_request_reaches_the_caller_and_the_answer_round_trips() -> None:
    model = OPENAI.responses("gpt-5-mini")
    response = await generate("openai/responses/openai-mcp-tool-approval.1.chunks", model)
    (asked,) = response.approval_requests
    assert asked.id.startswith("mcpr_") and asked.name == "create_short_url"
    assert asked.input["url"] == "https://ai-sdk.dev/"  # the arguments, parsed
    assert asked in response.events
    assert response.finish_reason == "tool-calls"  # the caller must answer before the call runs
    history = [llmroute.user("x"), *response.messages, llmroute.approval(asked, True, "fine")]
    prepared = await llmroute.Client().prepare(llmroute.request(model=model, messages=history))
    items = json.loads(prepared.body)["input"]
    request_item = next(i for i in items if i.get("type") == "mcp_approval_request")
    assert request_item["id"] == asked.id and request_item["server_label"] == "zip1"
    assert json.loads(request_item["arguments"]) == asked.input
    assert items[-1] == {
        "type": "mcp_approval_response",
        "approval_request_id": asked.id,
        "approve": True,
        "reason": "fine",
    }
    # a protocol without approvals refuses the answer instead of dropping it
    chat = OPENAI.chat("gpt-4o-mini")
    with pytest.raises(llmroute.InvalidRequestError):
        await llmroute.Client().prepare(
            llmroute.request(model=chat, messages=[llmroute.approval(asked, False)])
        )


# -- client built-ins on the request side --------------------------------------------------------


async def body_of(request: llmroute.LLMRequest) -> dict[str, Any]:
    return json.loads((await llmroute.Client().prepare(request)).body)


@pytest.mark.anyio
async def test_client_tools_are_lowered_as_the_providers_own_tool_types() -> None:
    tools = [
        client_tools.custom("write_sql", "SQL only", grammar="start: /SELECT .*/"),
        client_tools.shell(),
        client_tools.local_shell(),
        client_tools.apply_patch(),
        client_tools.computer_use(display_width=1024, display_height=768),
        client_tools.tool_search("find tools"),
    ]
    body = await body_of(llmroute.request(model=OPENAI.responses("gpt-5.1"), prompt="x", tools=tools))
    assert body["tools"] == [
        {
            "type": "custom",
            "name": "write_sql",
            "description": "SQL only",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /SELECT .*/"},
        },
        {"type": "shell"},
        {"type": "local_shell"},
        {"type": "apply_patch"},
        {
            "type": "computer_use_preview",
            "display_width": 1024,
            "display_height": 768,
            "environment": "browser",
        },
        {"type": "tool_search", "execution": "client", "description": "find tools"},
    ]
    named = llmroute.request(
        model=OPENAI.responses("gpt-5.1"), prompt="x", tools=tools, tool_choice="write_sql"
    )
    assert (await body_of(named))["tool_choice"] == {"type": "custom", "name": "write_sql"}
    assert client_tools.KINDS | {"function"} == openai_responses.PROTOCOL.tool_kinds


@pytest.mark.anyio
@pytest.mark.parametrize(
    "model",
    [OPENAI.chat("gpt-4o-mini"), anthropic.configure(api_key="k").messages("claude-sonnet-4-5")],
    ids=["chat", "anthropic"],
)
async def test_a_protocol_without_the_built_in_refuses_it_by_name(model: llmroute.Model) -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="'shell' tools"):
        await body_of(llmroute.request(model=model, prompt="x", tools=[client_tools.shell()]))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fixture", "result", "answer"),
    [
        (
            "openai/responses/openai-shell-tool.1.chunks",
            "Desktop\n",
            {"output": [{"stdout": "Desktop\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        ),
        ("openai/responses/openai-local-shell-tool.1.chunks", ". ..", {"output": ". .."}),
        ("openai/responses/openai-custom-tool.1.chunks", "3 rows", {"output": "3 rows"}),
        ("openai/responses/openai-apply-patch-tool.1.chunks", "", {"status": "completed"}),
        (
            "openai/responses/openai-client-tool-search.1.chunks",
            [{"type": "function", "name": "get_weather", "parameters": {}}],
            {
                "execution": "client",
                "status": "completed",
                "tools": [{"type": "function", "name": "get_weather", "parameters": {}}],
            },
        ),
    ],
)
async def test_a_built_in_call_and_its_result_go_back_as_the_items_the_api_takes(
    fixture: str, result: Any, answer: dict[str, Any]
) -> None:
    model = OPENAI.responses("gpt-5.1")
    response = await generate(fixture, model)
    (call,) = response.tool_calls
    item_type = call.provider_metadata["openai"]["item_type"]  # type: ignore[index]
    done = llmroute.tool_message(llmroute.ToolResultPart(call.id, call.name, result))
    history = [llmroute.user("x"), *response.messages, done]
    items = (await body_of(llmroute.request(model=model, messages=history)))["input"]
    (sent,) = [i for i in items if i.get("type") == item_type]
    assert sent["call_id"] == call.id
    field = {"custom_tool_call": "input", "apply_patch_call": "operation", "tool_search_call": "arguments"}
    assert sent[field.get(item_type, "action")] == call.input
    output = items[-1]
    assert output == {"type": _OUTPUT[item_type], "call_id": call.id, **answer}


_OUTPUT = {
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
}


@pytest.mark.anyio
async def test_the_tool_runtime_runs_a_custom_tool_on_the_models_free_text() -> None:
    response = await generate("openai/responses/openai-custom-tool.1.chunks")
    (call,) = response.tool_calls
    seen: list[Any] = []

    def run_sql(query: Any) -> str:
        seen.append(query)
        return "3 rows"

    sql = llmroute.Tool(client_tools.custom("write_sql"), run_sql)
    events = await dispatch({"write_sql": sql}, call)
    assert seen == ["SELECT * FROM users WHERE age > 25"]
    (result,) = [e for e in events if isinstance(e, llmroute.ToolResult)]
    assert (result.id, result.result, result.is_error) == (call.id, "3 rows", False)


@pytest.mark.anyio
async def test_items_that_carry_no_call_are_kept_raw_in_the_step_metadata() -> None:
    response = await generate("openai/responses/openai-compaction.1.chunks")
    (finish,) = [e for e in response.events if isinstance(e, llmroute.StepFinish)]
    assert finish.provider_metadata is not None
    (compaction,) = finish.provider_metadata["other_items"]
    assert compaction["type"] == "compaction" and compaction["id"]


@pytest.mark.anyio
async def test_hosted_shell_runs_in_a_container_the_client_shell_locally() -> None:
    model = OPENAI.responses("gpt-5.2")
    auto = await body_of(
        llmroute.request(model=model, prompt="x", tools=[hosted.shell(skills=[{"type": "x"}])])
    )
    assert auto["tools"] == [
        {"type": "shell", "environment": {"type": "container_auto", "skills": [{"type": "x"}]}}
    ]
    reuse = await body_of(
        llmroute.request(model=model, prompt="x", tools=[hosted.shell(container_id="cntr_1")])
    )
    assert reuse["tools"] == [
        {"type": "shell", "environment": {"type": "container_reference", "container_id": "cntr_1"}}
    ]
    with pytest.raises(llmroute.InvalidRequestError, match="shell"):
        await body_of(llmroute.request(model=OPENAI.chat("gpt-4o"), prompt="x", tools=[hosted.shell()]))


@pytest.mark.anyio
@pytest.mark.parametrize(
    "fixture",
    ["openai/responses/openai-shell-container.1.chunks", "openai/responses/openai-tool-search.1.chunks"],
)
async def test_server_run_calls_go_back_as_the_call_and_output_items_the_server_sent(fixture: str) -> None:
    """What the server ran is history the next request carries as it arrived (call and output
    items, matched by ``call_id``)."""
    model = OPENAI.responses("gpt-5.2")
    cassette = Cassette.load(VERCEL / f"{fixture}.yaml")
    body = cassette.interactions[0].response.body.decode()
    sent = [
        json.loads(line.removeprefix("data:"))["item"]
        for line in body.splitlines()
        if line.startswith("data:") and '"response.output_item.done"' in line
    ]
    response = await generate(fixture, model)
    items = (await body_of(llmroute.request(model=model, messages=[llmroute.user("x"), *response.messages])))[
        "input"
    ]
    for kind in ("shell_call", "shell_call_output", "tool_search_call", "tool_search_output"):
        original = [i for i in sent if i["type"] == kind]
        lowered = [i for i in items if i.get("type") == kind]
        for item in original:  # the call's environment is the server's business, not history's
            item.pop("environment", None)
        assert lowered == original, kind


@pytest.mark.anyio
async def test_computer_call_is_the_callers_and_a_screenshot_answers_it() -> None:
    action = {"type": "click", "button": "left", "x": 10, "y": 20}
    item = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_1",
        "action": action,
        "status": "completed",
    }
    stream = sse(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "pending_safety_checks": []},
        },
        COMPLETED,
    )
    model = OPENAI.responses("computer-use-preview")
    response = await generate(stream, model, Chunking.bytewise())
    (call,) = response.tool_calls
    assert (call.id, call.name, call.input, call.provider_executed) == (
        "call_1",
        "computer_use",
        action,
        False,
    )
    assert response.finish_reason == "tool-calls"
    png = llmroute.image(b"\x89PNG\r\n\x1a\n", "image/png")
    history = [
        llmroute.user("x"),
        *response.messages,
        llmroute.tool_message(llmroute.ToolResultPart(call.id, call.name, (png,))),
    ]
    items = (await body_of(llmroute.request(model=model, messages=history)))["input"]
    assert items[1] == {**item, "pending_safety_checks": []}
    assert items[2] == {
        "type": "computer_call_output",
        "call_id": "call_1",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="},
    }


def test_a_custom_tool_needs_a_name() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="name"):
        client_tools.custom("")


@pytest.mark.anyio
async def test_a_call_item_completed_twice_is_one_call() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
    done = {"type": "response.output_item.done", "output_index": 0, "item": item}
    response = await generate(sse(CREATED, done, done, COMPLETED))
    assert [c.id for c in response.tool_calls] == ["call_1"]


@pytest.mark.anyio
async def test_a_call_item_added_twice_is_one_call() -> None:
    # found by tests/conformance/test_protocol_violations.py: the call's input was started twice
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    delta = {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_1",
        "output_index": 0,
        "delta": "{}",
    }
    done = {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": "{}"}}
    response = await generate(sse(CREATED, added, added, delta, done, COMPLETED))
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_1", {})]
    assert event_order_problems(response.events) == []


# -- split invariance ------------------------------------------------------------------------------

SPLIT_FIXTURES = [
    "openai/responses/github-copilot-id-rotation.1.chunks",
    "openai/responses/openai-shell-container.1.chunks",
    "openai/responses/openai-client-tool-search.1.chunks",
    "openai/responses/openai-mcp-tool-approval.1.chunks",
    "openai/responses/openai-custom-tool.1.chunks",
    "xai/responses/xai-x-search-tool.chunks",
]


def _fold(body: bytes, cuts: list[int], quirks: openai_responses.ResponsesQuirks) -> list[Any]:
    """The parser's events for ``body`` read in pieces cut at ``cuts``."""
    decoder, state, out = SSEDecoder(), openai_responses.ResponsesState(quirks), []
    edges = [0, *sorted(set(cuts)), len(body)]
    for start, end in itertools.pairwise(edges):
        for frame in decoder.feed(body[start:end]):
            openai_responses.step(state, frame, out)
    openai_responses.on_halt(state, out)
    return out


@pytest.mark.parametrize("fixture", SPLIT_FIXTURES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_item_events_do_not_depend_on_where_the_bytes_are_cut(fixture: str, data: st.DataObject) -> None:
    body = Cassette.load(VERCEL / f"{fixture}.yaml").interactions[0].response.body
    quirks = xai.RESPONSES_QUIRKS if fixture.startswith("xai/") else openai_responses.ResponsesQuirks()
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=40))
    assert _fold(body, cuts, quirks) == _fold(body, [], quirks)
