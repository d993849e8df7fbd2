"""Protocol defects 4,149 held-out recordings found (issue #42), each on recorded bytes or on the
shape the provider documents: every test failed before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

import llmroute
from llmroute.providers import azure
from llmroute.testing import Chunking
from tests.helpers import load, replay_events

CHUNKINGS = [Chunking.whole(), Chunking.random(7, 16), Chunking.bytewise()]


# -- Azure Chat: the first chunk is a prompt-filter report with an empty id and model ---------------

AZURE = "vercel-ai/openai/chat/azure-model-router.1.chunks.yaml"


@pytest.mark.anyio
@pytest.mark.parametrize("chunking", CHUNKINGS, ids=str)
async def test_azure_streams_report_the_response_id_and_model(chunking: Chunking) -> None:
    body = load(AZURE).interactions[0].response.body.decode()
    chunks: list[dict[str, Any]] = [
        json.loads(line[5:])
        for line in body.splitlines()
        if line.startswith("data:") and "[DONE]" not in line
    ]
    assert chunks[0]["id"] == "" and chunks[0]["model"] == "" and "prompt_filter_results" in chunks[0]
    model = azure.configure("vercel-fixtures", api_key="az-test").chat("model-router")
    events = await replay_events(AZURE, llmroute.request(model, prompt="x"), chunking)
    finish = next(e for e in events if isinstance(e, llmroute.StepFinish))
    assert finish.provider_metadata == {"id": chunks[1]["id"], "model": chunks[1]["model"]}
    assert finish.usage is not None and finish.usage.model == "gpt-5-nano-2025-08-07"
