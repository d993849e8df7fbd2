"""OpenAI Chat streaming: llmroute Client.stream vs the official openai SDK on the same bytes.

    .venv/bin/python tests/bench/bench_chat.py

20,000 chat.completion.chunk events with non-ASCII text, served in 16 KiB chunks through
httpx.MockTransport (no sockets), both clients in the same process and run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmroute.providers import openai as openai_facade
from tests.bench._common import against_sdk, transport

N = 20_000
WORDS = ["Bonjour", " le", " monde", " — ", "世界", " é", "😀", " naïve", " café", " résumé"]


def make_stream(n: int = N) -> bytes:
    out = []
    for i in range(n):
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1778031208,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_99cf176092",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": WORDS[i % len(WORDS)]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
            "obfuscation": "abcd",
        }
        out.append("data: " + json.dumps(chunk, ensure_ascii=False) + "\n\n")
    out.append(
        'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    )
    out.append(
        'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20000,"total_tokens":20005}}\n\n'
    )
    out.append("data: [DONE]\n\n")
    return "".join(out).encode()


async def sdk(body: bytes) -> int:
    import openai

    client = openai.AsyncOpenAI(api_key="sk-bench", http_client=httpx.AsyncClient(transport=transport(body)))
    count = 0
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
    await client.close()
    return count


async def main() -> None:
    body = make_stream()
    print(f"stream: {N} chunks, {len(body) / 1e6:.2f} MB, 16 KiB reads")
    await against_sdk(
        openai_facade.configure(api_key="sk-bench").chat("gpt-4o-mini"),
        body,
        text_only_batches=False,
        sdk_module="openai",
        sdk_label="openai SDK chat.completions stream",
        sdk=lambda: sdk(body),
        check=lambda theirs, ours, _: theirs == ours == N,
    )


if __name__ == "__main__":
    anyio.run(main)
