"""LangChain's own standard suites (``langchain-tests``) on ``ChatLLMRoute``: the unit suite, and
the integration suite on each of the five protocols against a fake upstream on 127.0.0.1 that
answers as the suite's prompts ask (``brain.py``). Standard tests skipped here are named below
with the reason."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("langchain_tests", reason="langchain-tests is not installed")

from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from llmroute.adapters.langchain import ChatLLMRoute

from .brain import answer
from .upstream import Upstream

# the async standard tests are plain ``async def``s: anyio runs them (conftest: asyncio)
pytestmark = pytest.mark.anyio

_UPSTREAM: dict[str, Upstream] = {}


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0"))
        + chunk(b"IEND", b"")
    )


_FIXTURES = {
    ".png": _png(),
    ".jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9",  # older suites: a JPEG
    ".pdf": b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n",
    ".wav": b"RIFF$\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x40\x1f\0\0\x80\x3e\0\0\x02\0\x10\0data\0\0\0\0",
}


@pytest.fixture(autouse=True)
def no_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The media tests download their image, PDF and WAV; here they get small local ones of the
    same kinds (tests never touch the network)."""

    def get(url: str, **_: Any) -> httpx.Response:
        suffix = next((s for s in _FIXTURES if url.endswith(s)), None)
        if suffix is None:
            raise AssertionError(f"a standard test tried to download {url}")
        return httpx.Response(200, content=_FIXTURES[suffix], request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", get)


@pytest.fixture(scope="module", autouse=True)
def upstream() -> Iterator[Upstream]:
    with Upstream(answer) as up:
        _UPSTREAM["up"] = up
        yield up
        _UPSTREAM.clear()


class _Params:
    protocol = "anthropic"

    @property
    def chat_model_class(self) -> type[ChatLLMRoute]:
        return ChatLLMRoute

    @property
    def chat_model_params(self) -> dict[str, Any]:
        origin = _UPSTREAM["up"].origin if _UPSTREAM else "http://127.0.0.1:9"
        from .upstream import model

        return {"model": model(self.protocol, origin), "max_retries": 0}

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def supports_image_inputs(self) -> bool:
        return True

    @property
    def supports_image_urls(self) -> bool:
        return False  # the suite downloads its image from the internet; tests never touch it

    @property
    def supports_pdf_inputs(self) -> bool:
        return True

    @property
    def supports_audio_inputs(self) -> bool:
        return self.protocol in ("chat", "gemini")  # llmroute refuses inline audio elsewhere, by name

    @property
    def supports_image_tool_message(self) -> bool:
        return True

    @property
    def supports_pdf_tool_message(self) -> bool:
        return True

    @property
    def supports_anthropic_inputs(self) -> bool:
        return True

    @property
    def supported_usage_metadata_details(self) -> dict[str, list[str]]:
        # the fake upstream reports cached input on every protocol, and reasoning tokens on those
        # that report them (Anthropic and Converse count thinking inside output tokens)
        details = ["cache_read_input"]
        if self.protocol in ("chat", "responses", "gemini"):
            details.append("reasoning_output")
        return {"invoke": details, "stream": details}

    def _invoke(self, stream: bool) -> Any:
        chat = ChatLLMRoute(**self.chat_model_params)
        if not stream:
            return chat.invoke("hello")
        full: Any = None
        for chunk in chat.stream("hello"):
            full = chunk if full is None else full + chunk
        return full

    def invoke_with_cache_read_input(self, *, stream: bool = False) -> Any:
        return self._invoke(stream)

    def invoke_with_reasoning_output(self, *, stream: bool = False) -> Any:
        return self._invoke(stream)

    @property
    def supports_model_override(self) -> bool:
        return True

    @property
    def model_override_value(self) -> str:
        return "override-model-1"


class TestChatLLMRouteUnit(_Params, ChatModelUnitTests):
    pass


def _integration(protocol: str) -> type[ChatModelIntegrationTests]:
    return type(f"TestChatLLMRoute_{protocol}", (_Params, ChatModelIntegrationTests), {"protocol": protocol})


TestChatLLMRoute_chat = _integration("chat")
TestChatLLMRoute_responses = _integration("responses")
TestChatLLMRoute_anthropic = _integration("anthropic")
TestChatLLMRoute_gemini = _integration("gemini")
TestChatLLMRoute_bedrock = _integration("bedrock")
