"""OpenAI Responses streaming: llmroute Client.stream vs the official openai SDK on the same bytes.

    .venv/bin/python tests/bench/bench_responses.py

A Responses SSE stream shaped like the recorded ones (``event:`` + ``data:``, ``obfuscation``,
``logprobs``, ``sequence_number``): a reasoning summary, 20,000 ``response.output_text.delta``
events with non-ASCII text, an annotation, then ``response.completed``; served in 16 KiB chunks
through httpx.MockTransport (no sockets), both clients in the same process and run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmroute.providers import openai as openai_facade
from tests.bench._common import against_sdk, transport

N = 20_000
WORDS = ["Bonjour", " le", " monde", " — ", "世界", " é", "😀", " naïve", " café", " résumé"]
MSG = "msg_0dcc56395f8988120069f7a97e56d48197b96981f08aec3655"
RS = "rs_0dcc56395f8988120069f7a97e1fc48197b49ebf87e6495785"


def make_stream(n: int = N) -> bytes:
    seq = 0
    out: list[str] = []

    def emit(event: dict[str, Any]) -> None:
        nonlocal seq
        event["sequence_number"] = seq
        seq += 1
        out.append(f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n")

    response = {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "gpt-5.5",
        "output": [],
    }
    emit({"type": "response.created", "response": response})
    emit({"type": "response.in_progress", "response": response})
    emit(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": RS, "type": "reasoning", "summary": []},
        }
    )
    emit(
        {
            "type": "response.reasoning_summary_part.added",
            "item_id": RS,
            "output_index": 0,
            "summary_index": 0,
            "part": {"type": "summary_text", "text": ""},
        }
    )
    for i in range(100):
        emit(
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": RS,
                "output_index": 0,
                "summary_index": 0,
                "delta": WORDS[i % 10],
                "obfuscation": "pVXO86d",
            }
        )
    emit(
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"id": RS, "type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 600},
        }
    )
    emit(
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {
                "id": MSG,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "phase": "final_answer",
                "role": "assistant",
            },
        }
    )
    emit(
        {
            "type": "response.content_part.added",
            "item_id": MSG,
            "output_index": 1,
            "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
        }
    )
    text: list[str] = []
    for i in range(n):
        word = WORDS[i % len(WORDS)]
        text.append(word)
        emit(
            {
                "type": "response.output_text.delta",
                "content_index": 0,
                "delta": word,
                "item_id": MSG,
                "logprobs": [],
                "obfuscation": "h3EvEHT1O9",
                "output_index": 1,
            }
        )
    full = "".join(text) + " ([example.com](https://example.com/?utm_source=openai))"
    emit(
        {
            "type": "response.output_text.delta",
            "content_index": 0,
            "delta": full[len("".join(text)) :],
            "item_id": MSG,
            "logprobs": [],
            "output_index": 1,
        }
    )
    annotation = {
        "type": "url_citation",
        "start_index": len("".join(text)) + 1,
        "end_index": len(full),
        "url": "https://example.com/?utm_source=openai",
        "title": "Example",
    }
    emit(
        {
            "type": "response.output_text.annotation.added",
            "item_id": MSG,
            "output_index": 1,
            "content_index": 0,
            "annotation_index": 0,
            "annotation": annotation,
        }
    )
    emit(
        {
            "type": "response.output_text.done",
            "item_id": MSG,
            "output_index": 1,
            "content_index": 0,
            "logprobs": [],
            "text": full,
        }
    )
    part = {"type": "output_text", "annotations": [annotation], "logprobs": [], "text": full}
    emit(
        {
            "type": "response.content_part.done",
            "item_id": MSG,
            "output_index": 1,
            "content_index": 0,
            "part": part,
        }
    )
    item = {
        "id": MSG,
        "type": "message",
        "status": "completed",
        "content": [part],
        "phase": "final_answer",
        "role": "assistant",
    }
    emit({"type": "response.output_item.done", "output_index": 1, "item": item})
    usage = {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": n,
        "output_tokens_details": {"reasoning_tokens": 100},
        "total_tokens": n + 20,
    }
    emit(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [item], "usage": usage},
        }
    )
    return "".join(out).encode()


async def sdk(body: bytes) -> int:
    import openai

    client = openai.AsyncOpenAI(api_key="sk-bench", http_client=httpx.AsyncClient(transport=transport(body)))
    count = 0
    stream = await client.responses.create(model="gpt-5.5", input="hi", stream=True)
    async for event in stream:
        if event.type == "response.output_text.delta":
            count += 1
    await client.close()
    return count


async def main() -> None:
    body = make_stream()
    print(f"stream: {N + 1} text deltas, {len(body) / 1e6:.2f} MB, 16 KiB reads")
    await against_sdk(
        openai_facade.configure(api_key="sk-bench").responses("gpt-5.5"),
        body,
        text_only_batches=True,
        sdk_module="openai",
        sdk_label="openai SDK responses.create(stream)",
        sdk=lambda: sdk(body),
        check=lambda theirs, ours, batches: theirs == ours == batches == N + 1,
    )


if __name__ == "__main__":
    anyio.run(main)
