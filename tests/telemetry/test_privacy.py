"""Content is recorded only with ``capture_content=True``, redacted like logs; credentials never reach
telemetry; ``import llmroute`` loads no OpenTelemetry module."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import llmroute
from llmroute import telemetry
from llmroute.providers import google, openai
from tests.reliability.server import FaultServer, Reply, chat_chunk
from tests.reliability.test_faults import client_for, ok

from .conftest import Otel

pytestmark = pytest.mark.anyio

# Real-length credentials: an OpenAI project key (164 chars) and a Google API key (39 chars).
OPENAI_KEY = (
    "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 4 + "T3BlbkFJ" + "q7R2s9T4u1V6w3X8y5Z0" + "a" * 4
)
GOOGLE_KEY = "AIzaSyD" + "x7Kq2Lm9Np4Rs6Tv8Wy1Zb3Cd5FgHjKl"  # 39 characters


def everything(otel: Otel) -> str:
    """Every span name, attribute and status, and every metric attribute, as one string."""
    out: list[Any] = []
    for span in otel.spans():
        out += [span.name, dict(span.attributes or {}), span.status.description]
        out += [(e.name, dict(e.attributes or {})) for e in span.events]
    for name in (
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk",
    ):
        out += [dict(p.attributes) for p in otel.points(name)]
    return json.dumps(out, default=str)


@llmroute.tool(description="Look something up.")
def lookup(query: str) -> str:
    return f"result for {query} with {OPENAI_KEY}"


def tool_call(arguments: str) -> list[bytes]:
    call = {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "lookup", "arguments": arguments},
    }
    return [chat_chunk(tool=call), chat_chunk(finish="tool_calls"), b"data: [DONE]\n\n"]


def openai_request(server: FaultServer, prompt: str) -> llmroute.LLMRequest:
    model = openai.configure(api_key=OPENAI_KEY, base_url=server.base_url).chat("gpt-4o-mini")
    return llmroute.request(model=model, system="Be terse.", prompt=prompt)


async def test_no_content_by_default(server: FaultServer, otel: Otel) -> None:
    server.add(ok("the secret answer"))
    async with client_for(server) as (client, _):
        await client.generate(openai_request(server, "my private question"))
    text = everything(otel)
    assert "my private question" not in text and "the secret answer" not in text
    assert "Be terse" not in text
    assert "gen_ai.input.messages" not in text
    assert OPENAI_KEY not in text and OPENAI_KEY[:20] not in text


async def test_captured_content_follows_the_conventions_and_is_redacted(
    server: FaultServer, otel: Otel
) -> None:
    telemetry.instrument(otel.tracer_provider, otel.meter_provider, capture_content=True)
    args = json.dumps({"query": f"weather key={OPENAI_KEY}"})
    server.add(Reply(parts=tool_call(args)), ok("Sunny. Your key is " + OPENAI_KEY))
    async with client_for(server) as (client, _):
        response = await client.generate(
            openai_request(server, f"weather? (my key: {OPENAI_KEY})"), tools=[lookup]
        )
    assert OPENAI_KEY in response.text  # the model's text is the caller's; telemetry is not
    text = everything(otel)
    assert OPENAI_KEY not in text and OPENAI_KEY[8:40] not in text
    assert "[REDACTED]" in text

    first, second = sorted(otel.only("chat "), key=lambda s: s.start_time or 0)
    attrs = dict(first.attributes or {})
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [{"type": "text", "content": "Be terse."}]
    messages = json.loads(str(attrs["gen_ai.input.messages"]))
    assert messages == [
        {"role": "user", "parts": [{"type": "text", "content": "weather? (my key: [REDACTED])"}]}
    ]
    tools = json.loads(str(attrs["gen_ai.tool.definitions"]))
    assert tools == [{"type": "function", "name": "lookup", "description": "Look something up."}]
    out = json.loads(str(dict(first.attributes or {})["gen_ai.output.messages"]))
    assert out[0]["role"] == "assistant" and out[0]["finish_reason"] == "tool_call"
    assert out[0]["parts"][0]["type"] == "tool_call" and out[0]["parts"][0]["id"] == "call_9"
    # the second call's input holds the tool call and its (redacted) result
    later = json.loads(str(dict(second.attributes or {})["gen_ai.input.messages"]))
    assert [m["role"] for m in later] == ["user", "assistant", "tool"]
    assert later[2]["parts"][0]["type"] == "tool_call_response"
    assert json.loads(str(dict(second.attributes or {})["gen_ai.output.messages"]))[0]["parts"] == [
        {"type": "text", "content": "Sunny. Your key is [REDACTED]"}
    ]
    [tool] = otel.only("execute_tool ")
    tool_attrs = dict(tool.attributes or {})
    assert json.loads(str(tool_attrs["gen_ai.tool.call.arguments"])) == {"query": "weather key=[REDACTED]"}
    assert "[REDACTED]" in str(tool_attrs["gen_ai.tool.call.result"])


async def test_a_key_in_a_header_or_the_url_never_reaches_telemetry(server: FaultServer, otel: Otel) -> None:
    telemetry.instrument(otel.tracer_provider, otel.meter_provider, capture_content=True)
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok " + GOOGLE_KEY}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
    }
    server.add(
        Reply(
            headers={"content-type": "text/event-stream"},
            parts=[b"data: " + json.dumps(body).encode() + b"\r\n\r\n"],
        )
    )
    model = google.configure(api_key=GOOGLE_KEY, base_url=f"{server.base_url}beta").gemini("gemini-2.5-flash")
    request = llmroute.request(model=model, prompt=f"echo {GOOGLE_KEY}")
    async with client_for(server) as (client, _):
        await client.generate(request)
    assert server.received[0].headers["x-goog-api-key"] == GOOGLE_KEY  # it was sent
    text = everything(otel)
    assert GOOGLE_KEY not in text and GOOGLE_KEY[4:24] not in text
    [span] = otel.spans()
    assert span.name == "generate_content gemini-2.5-flash"
    assert dict(span.attributes or {})["server.address"] == "127.0.0.1"


def test_import_llmroute_loads_no_opentelemetry() -> None:
    code = (
        "import sys, llmroute\n"
        "client = llmroute.Client()\n"
        "bad = sorted(m for m in sys.modules if m.startswith('opentelemetry') or m == 'llmroute.telemetry')\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_without_opentelemetry_the_error_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"  # as if not installed
        "try:\n"
        "    from llmroute import telemetry\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'llmroute[otel]'" in result.stdout, result.stdout + result.stderr
