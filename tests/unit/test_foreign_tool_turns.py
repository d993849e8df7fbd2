"""Tool loops another model answered, sent on to a model that verifies its own reasoning.

With thinking on, Anthropic refuses a tool loop whose last assistant turn does not start with its own
signed thinking (one of LiteLLM's "claude code" failures: a turn another model answered, sent on to
Claude). The request goes without thinking for that step, with a warning; with Anthropic's own
signed thinking in the turn, thinking stays on. Gemini 3 refuses a current-turn function call
without its thought signature: such a call gets Gemini's documented stand-in."""

from __future__ import annotations

import json

import pytest

import llmroute
from llmroute.protocols.gemini.lower import SKIP_SIGNATURE
from llmroute.providers import anthropic, bedrock, google
from llmroute.route.compiler import prepare
from llmroute.schema.content import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

pytestmark = pytest.mark.anyio

CALL = ToolCallPart("toolu_1", "read", {"path": "a"})
RESULT = Message("tool", (ToolResultPart("toolu_1", "read", "text of a"),))


def _request(model: llmroute.Model, assistant: tuple[object, ...], **options: object) -> llmroute.LLMRequest:
    messages = (Message("user", (TextPart("read a"),)), Message("assistant", assistant), RESULT)  # type: ignore[arg-type]
    return llmroute.LLMRequest(
        model=model, messages=messages, provider_options={"anthropic": {"thinking": 2048, **options}}
    )


@pytest.mark.parametrize(
    "model",
    [
        anthropic.configure(api_key="k").messages("claude-sonnet-4-5"),
        bedrock.configure(region="us-east-1", api_key="k").anthropic("anthropic.claude-sonnet-4-5"),
    ],
    ids=["anthropic", "bedrock"],
)
async def test_an_unsigned_tool_turn_goes_without_thinking(model: llmroute.Model) -> None:
    foreign = ReasoningPart("I will read it", provider_metadata={"google": {"thoughtSignature": "x"}})
    prepared = await prepare(_request(model, (foreign, CALL)))
    body = json.loads(prepared.body)
    assert "thinking" not in body
    assert [w.option for w in prepared.warnings] == ["parts.reasoning", "provider_options.anthropic.thinking"]


async def test_a_signed_tool_turn_keeps_thinking() -> None:
    model = anthropic.configure(api_key="k").messages("claude-sonnet-4-5")
    signed = ReasoningPart("I will read it", "sig-abc")
    prepared = await prepare(_request(model, (signed, CALL)))
    body = json.loads(prepared.body)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "I will read it",
        "signature": "sig-abc",
    }
    assert prepared.warnings == ()


async def test_a_new_user_turn_keeps_thinking() -> None:
    model = anthropic.configure(api_key="k").messages("claude-sonnet-4-5")
    request = _request(model, (CALL,))
    request = llmroute.LLMRequest(
        model=model,
        messages=(
            *request.messages,
            Message("assistant", (TextPart("done"),)),
            Message("user", (TextPart("next"),)),
        ),
        provider_options=request.provider_options,
    )
    prepared = await prepare(request)
    assert json.loads(prepared.body)["thinking"]["type"] == "enabled"


@pytest.mark.parametrize("model_id", ["gemini-3-pro-preview", "gemini-2.5-flash"])
async def test_a_gemini_3_call_without_a_signature_gets_the_stand_in(model_id: str) -> None:
    model = google.configure(api_key="k").gemini(model_id)
    signed = ToolCallPart(
        "c2", "read", {"path": "b"}, provider_metadata={"google": {"thoughtSignature": "real"}}
    )
    messages = (
        Message("user", (TextPart("read a"),)),
        Message("assistant", (CALL,)),
        RESULT,
        Message("assistant", (signed,)),
        Message("tool", (ToolResultPart("c2", "read", "text of b"),)),
    )
    body = json.loads((await prepare(llmroute.LLMRequest(model=model, messages=messages))).body)
    signatures = [
        p.get("thoughtSignature") for c in body["contents"] for p in c["parts"] if "functionCall" in p
    ]
    assert signatures == [SKIP_SIGNATURE if model_id.startswith("gemini-3") else None, "real"]
