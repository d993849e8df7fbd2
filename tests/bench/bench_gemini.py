"""Gemini streaming: llmroute Client.stream vs the official google-genai SDK's
``aio.models.generate_content_stream`` on the same bytes, in the same run.

    .venv/bin/python tests/bench/bench_gemini.py

The SDK is not a project dependency: install it anywhere (``pip install --target /tmp/genai_sdk
google-genai``) and point ``GENAI_SDK_PATH`` at it (default ``/tmp/genai_sdk``); it is appended to
``sys.path`` so the project's own packages keep precedence. Without it only llmroute is timed.

Workload: 20,000 Gemini SSE events (thought parts, then answer text with non-ASCII, a final chunk
with finishReason, usage and groundingMetadata with supports), CRLF-separated like the real API,
served in 16 KiB chunks through a MockTransport (no sockets). Both sides see every event; the SDK
yields one pydantic ``GenerateContentResponse`` per event, llmroute one or more ``LLMEvent``s.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute.providers import google
from tests.bench._common import best_of, transport

N_THOUGHT = 3_000
N_TEXT = 17_000
WORDS = ["Bonjour", " le", " monde", " — ", "世界", " é", "😀", " naïve", " café", " résumé"]


def _frame(parts: list[dict[str, Any]], **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    candidate.update(extra.pop("candidate", {}))
    chunk = {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 34, "totalTokenCount": 100, "thoughtsTokenCount": 60},
        "modelVersion": "gemini-2.5-pro",
        "responseId": "beHBaJfEMIi-qtsP3769-Q8",
        **extra,
    }
    return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\r\n\r\n"


def make_stream() -> bytes:
    frames = [_frame([{"text": WORDS[i % 10], "thought": True}]) for i in range(N_THOUGHT)]
    frames.append(_frame([{"text": "Answer:", "thoughtSignature": "CiIB0e2Kb6Syj1a9" * 20}]))
    frames += [_frame([{"text": WORDS[i % 10]}]) for i in range(N_TEXT)]
    text = "Answer:" + "".join(WORDS[i % 10] for i in range(N_TEXT))
    size = len(text.encode())
    supports = [
        {"segment": {"startIndex": s, "endIndex": s + 40, "text": ""}, "groundingChunkIndices": [s % 3]}
        for s in range(0, size - 40, 997)
    ]
    grounding = {
        "webSearchQueries": ["bonjour monde"],
        "groundingChunks": [
            {
                "web": {
                    "uri": f"https://vertexaisearch.cloud.google.com/grounding-api-redirect/{i}",
                    "title": f"s{i}.example",
                }
            }
            for i in range(3)
        ],
        "groundingSupports": supports,
    }
    frames.append(_frame([{"text": "."}], candidate={"finishReason": "STOP", "groundingMetadata": grounding}))
    return b"".join(frames)


async def run_llmroute(body: bytes) -> int:
    model = google.configure(api_key="bench-key").gemini("gemini-2.5-pro")
    request = llmroute.request(model=model, prompt="x")
    count = 0
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport(body))) as client:
        async for _event in client.stream(request):
            count += 1
    return count


def load_sdk() -> Any:
    path = os.environ.get("GENAI_SDK_PATH", "/tmp/genai_sdk")
    if path not in sys.path:
        sys.path.append(path)
    try:
        from google import genai
    except ImportError:
        return None
    return genai


async def run_sdk(genai: Any, body: bytes) -> int:
    http = httpx.AsyncClient(transport=transport(body))
    client = genai.Client(api_key="bench-key", http_options=genai.types.HttpOptions(httpx_async_client=http))
    count = 0
    async for _chunk in await client.aio.models.generate_content_stream(model="gemini-2.5-pro", contents="x"):
        count += 1
    await http.aclose()
    return count


async def main() -> None:
    body = make_stream()
    frames = body.count(b"\r\n\r\n")
    print(f"workload: {frames} SSE events, {len(body) / 1e6:.1f} MB, 16 KiB chunks")
    ours, events = await best_of(5, lambda: run_llmroute(body))
    print(
        f"llmroute   {ours * 1e3:8.1f} ms  {frames / ours:>10,.0f} frames/s  ({events} events, {events / ours:,.0f} events/s)"
    )
    genai = load_sdk()
    if genai is None:
        print("google-genai not found (set GENAI_SDK_PATH); SDK comparison skipped")
        return
    theirs, chunks = await best_of(3, lambda: run_sdk(genai, body))
    print(
        f"google-genai {theirs * 1e3:6.1f} ms  {frames / theirs:>10,.0f} frames/s  ({chunks} response objects)"
    )
    print(f"ratio: llmroute is {theirs / ours:.1f}x the google-genai SDK on the same bytes")


if __name__ == "__main__":
    anyio.run(main)
