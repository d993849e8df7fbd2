"""The gateway's usage output carries ``cost`` (USD, like OpenRouter's ``usage.cost``): the main
model's calls plus the server-side web_search backend's, streamed or not."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from llmroute.server import create_app, load

from ..reliability.server import FaultServer
from ..unit.test_server_web_search import GLM_SEARCH, main_calls_search
from .test_gateway import UPSTREAM_KEY, Served, answer, body_of, config, sdk

# Published prices: Groq llama-3.3-70b-versatile $0.59 input / $0.79 output per million tokens
# (groq.com/pricing); Z.ai GLM-4.7 $0.60 / $2.20 (docs.z.ai/guides/overview/pricing).
# The main model: a search call (120 in, 25 out), then the answer (5 in, 1 out); the GLM backend
# search: 1890 in, 60 out.
MAIN = (125 * Decimal("0.59") + 26 * Decimal("0.79")) / 1_000_000
SEARCH = (1890 * Decimal("0.60") + 60 * Decimal("2.20")) / 1_000_000


def _serve(upstream: FaultServer) -> Served:
    cfg: dict[str, Any] = config(upstream)
    cfg["models"]["main"] = {
        "provider": "groq",
        "base_url": upstream.base_url,
        "api_key_env": "UPSTREAM_KEY",
        "model": "llama-3.3-70b-versatile",
    }
    return Served(create_app(load(cfg, environ={"UPSTREAM_KEY": UPSTREAM_KEY})))


def _script(upstream: FaultServer) -> None:
    upstream.add(body_of(main_calls_search('{"query": "东京塔"}')), body_of(GLM_SEARCH), answer("333 m."))


def test_non_streamed_usage_has_the_cost_with_the_search_backend(upstream: FaultServer) -> None:
    _script(upstream)
    with _serve(upstream) as served:
        completion = sdk(served).chat.completions.create(
            model="main", messages=[{"role": "user", "content": "How tall is Tokyo Tower?"}]
        )
    usage = completion.usage
    assert usage is not None
    assert usage.model_extra is not None
    assert usage.model_extra["cost"] == pytest.approx(float(MAIN + SEARCH), rel=1e-12)


def test_streamed_usage_has_the_cost(upstream: FaultServer) -> None:
    _script(upstream)
    with _serve(upstream) as served:
        chunks = list(
            sdk(served).chat.completions.create(
                model="main",
                messages=[{"role": "user", "content": "How tall is Tokyo Tower?"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    usage = chunks[-1].usage
    assert usage is not None and usage.model_extra is not None
    assert usage.model_extra["cost"] == pytest.approx(float(MAIN + SEARCH), rel=1e-12)


def test_unknown_model_has_no_cost(upstream: FaultServer) -> None:
    upstream.add(answer("hi"))
    cfg = config(upstream)
    with Served(create_app(load(cfg, environ={"UPSTREAM_KEY": UPSTREAM_KEY}))) as served:
        completion = sdk(served).chat.completions.create(
            model="main", messages=[{"role": "user", "content": "hi"}]
        )
    assert completion.usage is not None and "cost" not in (completion.usage.model_extra or {})
