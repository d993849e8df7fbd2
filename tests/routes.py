"""One request and one real recording per wire protocol, pointed at any base URL.

The hostile-bytes tests (``tests/reliability/test_hostile.py``) serve these recordings, mutated, from
a real 127.0.0.1 server; the fuzz suite (``tests/fuzz``) feeds them in-process.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import llmroute
from llmroute.testing import Cassette

from .helpers import CASSETTES

__all__ = ["EVENTSTREAM", "PROTOCOLS", "SSE", "WireCase", "frames"]

SSE = {"content-type": "text/event-stream"}
EVENTSTREAM = {"content-type": "application/vnd.amazon.eventstream"}


@dataclass(frozen=True)
class WireCase:
    name: str
    cassette: str
    make: Callable[[str], llmroute.LLMRequest]  # origin ("http://127.0.0.1:PORT") -> request
    headers: dict[str, str]

    def body(self) -> bytes:
        return Cassette.load(CASSETTES / self.cassette).interactions[0].response.body

    def request(self, origin: str) -> llmroute.LLMRequest:
        return self.make(origin)


def _chat(origin: str) -> llmroute.LLMRequest:
    from llmroute.providers import compatible

    model = compatible.configure(base_url=f"{origin}/v1", api_key="test-key-0000").model("test-model")
    return llmroute.request(model=model, prompt="hi")


def _responses(origin: str) -> llmroute.LLMRequest:
    from llmroute.providers import openai

    model = openai.configure(api_key="sk-test-0123456789abcdef", base_url=f"{origin}/v1").responses("gpt-5.5")
    return llmroute.request(model=model, prompt="hi")


def _anthropic(origin: str) -> llmroute.LLMRequest:
    from llmroute.providers import anthropic

    model = anthropic.configure(api_key="test-key-0000", base_url=f"{origin}/v1").messages("claude-haiku-4-5")
    return llmroute.request(model=model, prompt="hi")


def _gemini(origin: str) -> llmroute.LLMRequest:
    from llmroute.providers import google

    model = google.configure(api_key="test-key-0000", base_url=f"{origin}/v1beta").gemini("gemini-2.5-flash")
    return llmroute.request(model=model, prompt="hi")


def _bedrock(origin: str) -> llmroute.LLMRequest:
    from llmroute.providers import bedrock

    provider = bedrock.configure(region="us-east-1", api_key="test-key-0000", base_url=origin)
    return llmroute.request(model=provider.converse("us.amazon.nova-micro-v1:0"), prompt="hi")


PROTOCOLS = {
    case.name: case
    for case in (
        WireCase("openai-chat", "opencode/openai-chat/streams-tool-call.yaml", _chat, SSE),
        WireCase(
            "openai-responses", "opencode/openai-responses/gpt-5-5-streams-tool-call.yaml", _responses, SSE
        ),
        WireCase("anthropic", "opencode/anthropic-messages/streams-tool-call.yaml", _anthropic, SSE),
        WireCase("gemini", "opencode/gemini/streams-tool-call.yaml", _gemini, SSE),
        WireCase("bedrock", "opencode/bedrock-converse/streams-a-tool-call.yaml", _bedrock, EVENTSTREAM),
    )
}


def frames(body: bytes) -> list[bytes]:
    """An AWS event-stream body cut into its frames (each starts with its total length)."""
    out: list[bytes] = []
    while body:
        (total,) = struct.unpack(">I", body[:4])
        out.append(body[:total])
        body = body[total:]
    return out
