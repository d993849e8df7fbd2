"""docs/caching.md runs as written: its program against a fake Anthropic with a prompt cache on
127.0.0.1 (two API keys, two targets), its fragment on responses of a real routed session."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import llmroute
from llmroute import CachePolicy, Router, Target

from ..prompt_cache import CachingUpstream, serve

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    return _BLOCK.findall((ROOT / "docs" / "caching.md").read_text(encoding="utf-8"))


@pytest.mark.timeout(120)
def test_the_program_keeps_its_tool_loop_on_one_target(tmp_path: Path) -> None:
    program = next(b for b in _blocks() if "anyio.run(main)" in b)
    upstream = CachingUpstream(steps=4)
    with serve(upstream) as url:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-team",
            "ANTHROPIC_API_KEY_2": "sk-ant-spare",
        }
        result = subprocess.run(
            [sys.executable, "-c", program],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=100,
        )
    assert result.returncode == 0, result.stderr
    targets, ratio, miss = result.stdout.splitlines()
    assert len(set(ast.literal_eval(targets))) == 1 and len(ast.literal_eval(targets)) == 4
    assert re.fullmatch(r"cache hit ratio [1-9]\d%", ratio), ratio
    assert miss == "None"
    assert sum(t.calls for t in upstream.targets.values()) == 4


async def _session() -> list[llmroute.LLMResponse]:
    upstream = CachingUpstream()
    router = Router([Target(upstream.model("a")), Target(upstream.model("b"))], affinity=True)
    out: list[llmroute.LLMResponse] = []
    async with upstream.client() as client:
        messages: list[llmroute.Message] = []
        for turn in range(3):
            messages.append(llmroute.user(f"turn {turn}"))
            request = llmroute.request(
                model=router, system="Be brief. " * 40, messages=messages, cache=CachePolicy()
            )
            response = await client.generate(request)
            out.append(response)
            messages.extend(response.messages)
    return out


@pytest.mark.anyio
async def test_the_session_fragment_runs(capsys: pytest.CaptureFixture[str]) -> None:
    fragment = next(b for b in _blocks() if "cache_stats(responses)" in b)
    namespace: dict[str, Any] = {"llmroute": llmroute, "responses": await _session()}
    exec(compile(fragment, "<caching.md>", "exec"), namespace)
    out = capsys.readouterr().out
    assert re.fullmatch(r"3 calls, [1-9]\d% of the input read from the cache\n", out), out
