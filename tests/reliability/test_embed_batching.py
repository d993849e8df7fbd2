"""A 10,000-input ``client.embed`` against a real OpenAI-shaped server on 127.0.0.1: split to the
API's maximum, sent concurrently within the limit, reassembled in order; a slice that fails for
good is one typed error naming it, and the slices still in flight are cancelled."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

import llmroute
from llmroute.providers import openai

from ..embed_server import EmbedServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def upstream() -> Iterator[EmbedServer]:
    with EmbedServer(hold=3) as server:
        yield server


def _model(server: EmbedServer) -> llmroute.EmbeddingModel:
    return openai.configure(api_key="sk-test", base_url=f"http://127.0.0.1:{server.port}/v1").embedding("m")


INPUTS = [f"t{i}" for i in range(10_000)]


async def test_ten_thousand_inputs_go_in_slices_concurrently_and_come_back_in_order(
    upstream: EmbedServer,
) -> None:
    async with llmroute.Client() as client:
        response = await client.embed(_model(upstream), INPUTS, max_concurrency=3)
    assert (upstream.requests, response.requests) == (5, 5)  # 2,048 a request
    assert upstream.peak == 3  # never more in flight than the limit, and the limit reached
    assert len(response.vectors) == 10_000 and response.dimensions == 3
    matrix = response.vectors.to_numpy()
    assert (matrix[:, 0] == range(10_000)).all() and (matrix[:, 1] == matrix[:, 0] * -1).all()
    assert response.usage == llmroute.Usage(input_tokens=10_000)


async def test_a_rate_limited_slice_is_retried_in_place(upstream: EmbedServer) -> None:
    upstream.retry_once = {"t4096"}
    retry = llmroute.RetryPolicy(initial_backoff=0.01, jitter=0)
    async with llmroute.Client(retry=retry) as client:
        response = await client.embed(_model(upstream), INPUTS, max_concurrency=3)
    assert upstream.requests == 6
    assert response.vectors[4096].tolist() == [4096.0, -4096.0, 0.5]


async def test_a_failed_slice_is_one_error_naming_it_and_the_rest_are_cancelled(
    upstream: EmbedServer,
) -> None:
    upstream.fail = {"t2048": 400}
    async with llmroute.Client() as client:
        with pytest.raises(llmroute.InvalidRequestError) as caught:
            await client.embed(_model(upstream), INPUTS, max_concurrency=3)
    error = caught.value
    assert error.embed_slice == (2048, 4096)
    assert str(error).startswith("inputs[2048:4096] (request 2 of 5): openai: no such luck")
    assert error.http is not None and error.http.status == 400
    assert upstream.requests == 3  # the fourth and fifth slices were never sent
    # the two in flight beside it were dropped by the client at once, not waited for
    assert await anyio.to_thread.run_sync(upstream.all_cancelled.wait, 10.0)
    assert upstream.cancelled == 2
