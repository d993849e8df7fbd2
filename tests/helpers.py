"""Shared test plumbing: replay a cassette through the real Client stack."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

import llmroute
from llmroute.testing import Cassette, Chunking, ReplayTransport

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


def load(rel: str) -> Cassette:
    return Cassette.load(CASSETTES / rel)


async def replay_generate(
    cassette: Cassette | str, request: llmroute.LLMRequest, chunking: Chunking | None = None, **kwargs: Any
) -> tuple[llmroute.LLMResponse, ReplayTransport]:
    if isinstance(cassette, str):
        cassette = load(cassette)
    transport = ReplayTransport(cassette, chunking)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request, **kwargs)
    return response, transport


async def replay_events(
    cassette: Cassette | str, request: llmroute.LLMRequest, chunking: Chunking | None = None
) -> list[llmroute.LLMEvent]:
    if isinstance(cassette, str):
        cassette = load(cassette)
    transport = ReplayTransport(cassette, chunking)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        return [event async for event in client.stream(request)]


def pyright_report(folder: Path, config: dict[str, Any], timeout: float = 110) -> dict[str, Any]:
    """pyright (a dev dependency) on ``folder`` with ``config`` as its ``pyrightconfig.json``, in this
    interpreter's environment: its JSON report (``generalDiagnostics``, ``summary``)."""
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    assert pyright is not None, "pyright is a dev dependency: pip install -e '.[dev]'"
    (folder / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    result = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return json.loads(result.stdout)


def sse_cassette(url: str, body: bytes | list[dict[str, object]], *, done: bool = True) -> Cassette:
    """One 200 SSE interaction: raw ``body`` bytes, or chunks rendered as ``data:`` events."""
    import json

    from llmroute.testing import Interaction, RecordedRequest, RecordedResponse

    if not isinstance(body, bytes):
        text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in body)
        body = (text + ("data: [DONE]\n\n" if done else "")).encode()
    return Cassette(
        [
            Interaction(
                RecordedRequest("POST", url, {}, b""),
                RecordedResponse(200, {"content-type": ["text/event-stream"]}, body),
            )
        ]
    )


# A GLM (Zhipu) chat chunk carries web search hits in this shape (provider and server tool tests).
GLM_URL = "https://open.bigmodel.cn/api/paas/v4/chat/completions"
GLM_HIT_1 = {
    "title": "东京塔_百度百科",
    "content": "东京塔（東京タワー）是位于日本东京港区的电波塔，高333米……",  # noqa: RUF001
    "link": "https://baike.baidu.com/item/%E4%B8%9C%E4%BA%AC%E5%A1%94",
    "media": "百度百科",
    "icon": "https://sfile.chatglm.cn/searchImage/baike_icon.jpg",
    "refer": "ref_1",
    "publish_date": "2025-03-02",
}
GLM_HIT_2 = {
    "title": "東京タワーの歴史",
    "content": "1958年12月23日に竣工……",
    "link": "https://www.tokyotower.co.jp/history/",
    "media": "",
    "icon": "",
    "refer": "ref_2",
    "publish_date": "",
}


def explicit_strict(body: dict[str, Any]) -> dict[str, Any]:
    """A recorded Responses body as llmroute sends it: every function tool says ``strict``, true
    exactly when its schema is strict-compatible (the recordings relied on the server's default)."""
    from llmroute.protocols._strict import strict_compatible

    for tool in body.get("tools") or ():
        if tool.get("type") == "function" and "strict" not in tool:
            tool["strict"] = strict_compatible(tool.get("parameters"))
    return body
