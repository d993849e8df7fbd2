"""Through a Router, each step is priced on the target that answered it."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target

from ..reliability.server import FaultServer
from .upstreams import chat_model, error, ok

pytestmark = pytest.mark.anyio


async def test_cost_is_the_answering_targets(servers: Callable[[], FaultServer]) -> None:
    a, b = servers(), servers()
    a.add(error(503, "upstream down"))
    b.add(ok("from b"))  # usage: 5 prompt tokens, 1 completion token
    router = Router(
        [
            Target(chat_model(a, "gpt-4.1"), name="a"),
            Target(chat_model(b, "gpt-4o-mini"), name="b", priority=1),
        ]
    )
    async with llmroute.Client(retry=RetryPolicy(max_retries=0)) as client:
        response = await client.generate(llmroute.request(model=router, prompt="Hi"))
    step = response.steps[-1]
    assert (step.target, step.provider, step.model_id) == ("b", "openai", "gpt-4o-mini")
    # GPT-4o mini (platform.openai.com/docs/pricing): $0.15 input, $0.60 output per million tokens
    assert (
        response.cost is not None
        and response.cost.total == (5 * Decimal("0.15") + Decimal("0.60")) / 1_000_000
    )
