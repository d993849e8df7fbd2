"""docs/embeddings.md's snippets run unchanged, in order, in one namespace (as a reader's session
would), against the local fake provider's ``/v1/embeddings`` with real sockets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

import llmroute

from .fake_provider import EMBEDDING_DIMENSIONS, FakeProvider
from .test_snippets_run import _run_fragment  # pyright: ignore[reportPrivateUsage]

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.timeout(120)
def test_the_embeddings_page_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _BLOCK.findall((ROOT / "docs" / "embeddings.md").read_text(encoding="utf-8"))
    with FakeProvider() as fake:
        for name, value in fake.env.items():
            monkeypatch.setenv(name, value)

        async def session() -> dict[str, Any]:
            namespace: dict[str, Any] = {"llmroute": llmroute, "documents": [f"doc {i}" for i in range(5000)]}
            first, *rest = blocks
            await _run_fragment(first, namespace)  # its own `async with` client
            async with llmroute.Client() as client:
                namespace["client"] = client
                for block in rest:
                    await _run_fragment(block, namespace)
            return namespace

        namespace = anyio.run(session)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"2 {EMBEDDING_DIMENSIONS}", "array('f', [0.0, 0.5, 0.5])"]
    assert lines[2].startswith("6 Cost(total=Decimal('1.2E-7')")  # 6 tokens at $0.02 a million
    assert "2 2 0.6" in lines and "dimensions" in lines
    assert namespace["response"].target == "openai:text-embedding-3-small"
    assert len(namespace["response"].vectors) == 5000
    paths = [path for path, _ in fake.requests]
    assert paths == ["/v1/embeddings"] * len(paths) and len(paths) == 1 + 3 + 3  # 5,000 = 3 requests
