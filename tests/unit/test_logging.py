"""Log redaction is scoped: llmroute's own records and the HTTP libraries' records of llmroute's
sends are redacted; the application's own httpx logging is left exactly as it was."""

from __future__ import annotations

import logging

import httpx
import pytest

import llmroute
from llmroute.providers import compatible
from tests.reliability.server import FaultServer, Reply, chat_stream

TOKEN = "tok_0123456789abcdefXYZ"


@pytest.mark.anyio
async def test_redaction_covers_llmroute_sends_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server = FaultServer().start()
    try:
        server.add(Reply(parts=chat_stream("hi")), Reply(200, {"content-type": "text/plain"}, [b"ok"]))
        model = compatible.configure(base_url=server.base_url).model("m")
        request = llmroute.request(model, prompt="hi", http=llmroute.HttpOverlay(query={"api_key": TOKEN}))
        async with llmroute.Client() as client:
            assert (await client.generate(request)).text == "hi"
        ours = [r.getMessage() for r in caplog.records if r.name == "httpx"]
        assert ours and all(TOKEN not in m for m in ours) and any("api_key=[REDACTED]" in m for m in ours)
        caplog.clear()
        # The application's own request, outside llmroute: its log line is not rewritten.
        async with httpx.AsyncClient() as http:
            await http.get(f"{server.base_url}/other?api_key={TOKEN}")
        theirs = [r.getMessage() for r in caplog.records if r.name == "httpx"]
        assert any(TOKEN in m for m in theirs)
    finally:
        server.stop()


def test_module_loggers() -> None:
    from llmroute.route import executor

    assert executor.log.name == "llmroute.route.executor"
    assert logging.getLogger("llmroute").filters == []  # nothing installed on the parent
