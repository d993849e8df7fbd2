"""The real Claude Code CLI (npm ``@anthropic-ai/claude-code``, run headless with ``claude -p``) does
a two-step tool task through the gateway's Anthropic door, over an OpenAI Chat upstream scripted on
127.0.0.1: the model asks for the ``Write`` tool, Claude Code runs it (the file appears) and sends
the result back, the model answers. ``.ci/run`` installs the pinned CLI and names it in
``LLMROUTE_CLAUDE_CODE``; elsewhere the test runs when ``claude`` is on the PATH (and fails in CI
without it, so a missing install is never a pass)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from llmroute.server import create_app, load

from ..reliability.server import DONE, FaultServer, Reply, chat_chunk
from .test_gateway import Served

CLAUDE = os.environ.get("LLMROUTE_CLAUDE_CODE") or shutil.which("claude")
if CLAUDE is None and os.environ.get("CI"):
    pytest.fail("CI: .ci/run installs Claude Code and sets LLMROUTE_CLAUDE_CODE", pytrace=False)
pytestmark = pytest.mark.skipif(
    CLAUDE is None, reason="Claude Code is not installed (npm i @anthropic-ai/claude-code)"
)

SSE = {"content-type": "text/event-stream"}
USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}


def test_claude_code_runs_a_tool_task_through_the_gateway(upstream: FaultServer, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    arguments = json.dumps({"file_path": str(target), "content": "hello from the gateway\n"})
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "Write", "arguments": arguments},
    }
    upstream.add(
        Reply(
            200, SSE, [chat_chunk(tool=call), chat_chunk(finish="tool_calls"), chat_chunk(usage=USAGE), DONE]
        ),
        Reply(
            200,
            SSE,
            [chat_chunk("Wrote the file."), chat_chunk(finish="stop"), chat_chunk(usage=USAGE), DONE],
        ),
    )
    config = {
        "keys": ["gw-key-1"],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": "sk-up",
                "model": "m",
            }
        },
    }
    assert CLAUDE is not None
    with Served(create_app(load(config))) as gateway:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": gateway.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "gw-key-1",
            "ANTHROPIC_MODEL": "main",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": "main",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        done = subprocess.run(
            [CLAUDE, "-p", "write hello to out.txt", "--output-format", "json", "--allowedTools", "Write"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["is_error"] is False and result["result"] == "Wrote the file."
    assert target.read_text() == "hello from the gateway\n"
    first, second = (json.loads(r.body) for r in upstream.received)
    assert first["tools"] and any(t["function"]["name"] == "Write" for t in first["tools"])
    answered = second["messages"][-1]
    assert answered["role"] == "tool" and answered["tool_call_id"] == "call_1"
    assert "output_config" not in first and "thinking" not in first  # Anthropic's own fields stay behind
