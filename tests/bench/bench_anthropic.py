"""Anthropic Messages streaming: llmroute Client.stream vs the official anthropic SDK's raw stream
(``messages.create(stream=True)``) on the same bytes, in the same run.

    .venv/bin/python tests/bench/bench_anthropic.py

Two workloads, each served in 16 KiB chunks through a MockTransport (no sockets):
- ``synthetic``: 20,000 Anthropic-shaped SSE events (thinking + signature, text with non-ASCII and a
  citation, a streamed tool_use), padded like the real API pads its ``data:`` lines;
- ``recorded``: the real web-search stream from the pydantic-ai cassette (server tool use, search
  results, citations), replayed 20 times.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute.providers import anthropic as anthropic_facade
from llmroute.testing import Cassette
from tests.bench._common import CHUNK, transport

N_TEXT = 17_000
N_THINKING = 2_500
N_TOOL = 500
WORDS = ["Bonjour", " le", " monde", " — ", "世界", " é", "😀", " naïve", " café", " résumé"]
RECORDED = (
    Path(__file__).resolve().parents[2]
    / "cassettes/pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml"
)


def _event(payload: dict[str, object]) -> str:
    return f"event: {payload['type']}\ndata: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}   \n\n"


def make_stream() -> bytes:
    out = [
        _event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 25,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            }
        ),
        _event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
    ]
    out += [
        _event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": WORDS[i % 10]},
            }
        )
        for i in range(N_THINKING)
    ]
    out.append(
        _event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "Eu8BCkYI" * 40},
            }
        )
    )
    out.append(_event({"type": "content_block_stop", "index": 0}))
    out.append(_event({"type": "ping"}))
    out.append(
        _event(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": "", "citations": []},
            }
        )
    )
    out.append(
        _event(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {
                    "type": "citations_delta",
                    "citation": {
                        "type": "web_search_result_location",
                        "url": "https://example.org/",
                        "title": "Example",
                        "cited_text": "Example…",
                        "encrypted_index": "EpABCioI",
                    },
                },
            }
        )
    )
    out += [
        _event(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": WORDS[i % 10]},
            }
        )
        for i in range(N_TEXT)
    ]
    out.append(_event({"type": "content_block_stop", "index": 1}))
    out.append(
        _event(
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}},
            }
        )
    )
    out.append(
        _event(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"text": "'},
            }
        )
    )
    out += [
        _event(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": "ab"},
            }
        )
        for _ in range(N_TOOL)
    ]
    out.append(
        _event(
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '"}'},
            }
        )
    )
    out.append(_event({"type": "content_block_stop", "index": 2}))
    out.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": N_TEXT + N_THINKING + N_TOOL},
            }
        )
    )
    out.append(_event({"type": "message_stop"}))
    return "".join(out).encode()


def sdk_transport(body: bytes):  # the anthropic SDK ships its own httpx fork (httpx2)
    import httpx2

    class _Body(httpx2.AsyncByteStream):
        def _chunks(self) -> Iterator[bytes]:
            for i in range(0, len(body), CHUNK):
                yield body[i : i + CHUNK]

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks():
                yield chunk

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_Body())

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def ours(body: bytes, repeat: int = 1) -> int:
    model = anthropic_facade.configure(api_key="sk-ant-bench").messages("claude-sonnet-4-5")
    request = llmroute.request(model=model, prompt="hi")
    count = 0
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport(body))) as client:
        for _ in range(repeat):
            async for _event in client.stream(request):
                count += 1
    return count


async def sdk(body: bytes, repeat: int = 1) -> int:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key="sk-ant-bench", http_client=sdk_transport(body), max_retries=0)
    count = 0
    for _ in range(repeat):
        stream = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        async for _event in stream:
            count += 1
    await client.close()
    return count


async def interleaved(runs: int, fns: list[Callable[[], Awaitable[int]]]) -> list[tuple[float, int]]:
    """Best (minimum) wall time of each function over ``runs`` rounds, run alternately so a busy
    machine slows both alike; one warm-up round first."""
    best = [float("inf")] * len(fns)
    counts = [0] * len(fns)
    for round in range(runs + 1):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            counts[i] = await fn()
            if round:
                best[i] = min(best[i], time.perf_counter() - start)
    return list(zip(best, counts, strict=True))


async def compare(label: str, body: bytes, repeat: int, frames: int) -> float:
    total = frames * repeat
    print(f"[{label}] {total:,} SSE events, {len(body) * repeat / 1e6:.2f} MB in 16 KiB reads")
    try:
        import anthropic  # noqa: F401
    except ImportError:
        ((t_ours, n_ours),) = await interleaved(7, [lambda: ours(body, repeat)])
        print(f"  llmroute Client.stream: {total / t_ours:>12,.0f} SSE events/s ({n_ours:,} llmroute events)")
        print("  anthropic SDK not installed: pip install 'llmroute[bench]' for the comparison")
        return 0.0
    (t_ours, n_ours), (t_sdk, n_sdk) = await interleaved(
        5, [lambda: ours(body, repeat), lambda: sdk(body, repeat)]
    )
    assert n_sdk >= 0.95 * total, (n_sdk, total)  # the SDK drops ping events
    print(
        f"  llmroute Client.stream:            {total / t_ours:>12,.0f} SSE events/s  ({t_ours * 1e3:7.1f} ms, {n_ours:,} llmroute events)"
    )
    print(
        f"  anthropic SDK messages.create raw: {total / t_sdk:>12,.0f} SSE events/s  ({t_sdk * 1e3:7.1f} ms)"
    )
    print(f"  ratio (llmroute / anthropic SDK): {t_sdk / t_ours:.1f}x")
    return t_sdk / t_ours


async def main() -> None:
    synthetic = make_stream()
    await compare("synthetic", synthetic, 1, synthetic.count(b"\n\n"))
    recorded = Cassette.load(RECORDED).interactions[0].response.body
    await compare("recorded web search", recorded, 20, recorded.count(b"event: "))


if __name__ == "__main__":
    anyio.run(main)
