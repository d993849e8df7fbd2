"""Each framework adapter's page (``docs/pydantic-ai.md``, ``docs/openai-agents.md``,
``docs/langchain.md``) opens with a program; it runs unchanged, as a user would run it, against
the local fake provider (``fake_provider.py``: OpenAI Chat from ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_provider import ANSWER, FakeProvider

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"pydantic-ai.md": "pydantic_ai", "openai-agents.md": "agents", "langchain.md": "langchain_core"}


def program(page: str) -> str:
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(encoding="utf-8"), re.S)[0]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_pages_program_runs_against_a_local_server(page: str, tmp_path: Path) -> None:
    pytest.importorskip(PAGES[page], reason=f"{page}'s framework is not installed")
    with FakeProvider() as fake:
        result = subprocess.run(
            [sys.executable, "-c", program(page)],
            env={**os.environ, **fake.env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=150,
        )
        requests = list(fake.requests)
    assert result.returncode == 0, result.stderr
    assert ANSWER in result.stdout
    assert requests and all(path == "/v1/chat/completions" for path, _ in requests)
    assert requests[0][1]["tools"][0]["function"]["name"] == "get_weather"
    if page == "langchain.md":
        assert "get_weather {'city': 'Paris'}" in result.stdout
    else:  # the tool ran and its result went back
        assert any("22C and sunny in Paris" in str(body) for _, body in requests)
