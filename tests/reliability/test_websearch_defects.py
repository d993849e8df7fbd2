"""Grounded search per the contract's wording (issue #21), against a real server on 127.0.0.1: a
Gemini answer without ``finishReason``, a support whose span snaps to empty, ``llmroute search
--cited`` and ``llmroute chat -``. Each test failed before its fix."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from llmroute import cli as llmroute_cli

from .server import FaultServer, Reply, chat_stream
from .test_websearch_search import ANTHROPIC_BODY, EIFFEL, GEMINI_BODY, KEY, cli, json_reply, make

pytestmark = pytest.mark.anyio


async def test_a_gemini_answer_without_finish_reason_is_still_an_answer(server: FaultServer) -> None:
    body: dict[str, Any] = copy.deepcopy(GEMINI_BODY)
    del body["candidates"][0]["finishReason"]
    server.add(json_reply(body))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "Eiffelturm"})
    assert result.error is None
    assert "Der Eiffelturm ist 330 m hoch.[1]" in result.llm_content
    assert result.return_display == 'Search results for "Eiffelturm" returned.'


async def test_a_support_whose_span_snaps_to_empty_still_places_its_marker(server: FaultServer) -> None:
    # bytes 62..63 both fall inside "東" (bytes 61..64 of EIFFEL): the span snaps to nothing, yet
    # gemini-cli places the marker at the (snapped) end, as it does for every support
    assert EIFFEL.encode()[61:64].decode() == "東"
    body: dict[str, Any] = copy.deepcopy(GEMINI_BODY)
    body["candidates"][0]["groundingMetadata"]["groundingSupports"] = [
        {"segment": {"startIndex": 62, "endIndex": 63}, "groundingChunkIndices": [2]}
    ]
    server.add(json_reply(body))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "q"})
    assert "eröffnet 🗼. [3]東京タワー" in result.llm_content


def _anthropic_config(tmp_path: Path, server: FaultServer) -> Path:
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps({"provider": {"anthropic": {"options": {"baseURL": server.base_url, "apiKey": KEY}}}})
    )
    return config


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_cli_search_cited_prints_the_answer_cited_by_construction(
    server: FaultServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    server.add(json_reply(ANTHROPIC_BODY))
    argv = ["search", "q", "--provider", "anthropic", "--config", str(_anthropic_config(tmp_path, server))]
    code = cli(monkeypatch, tmp_path, [*argv, "--cited", "--quiet", "--format", fmt], {})
    out = capsys.readouterr().out
    assert code == 0
    cited = out if fmt == "markdown" else json.loads(out)["llmContent"]
    assert "[Source](https://www.tokyotower.co.jp/)" in cited and "\n## Sources\n" in cited


def test_cli_search_cited_refuses_an_ungrounded_answer_with_exit_3(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {**ANTHROPIC_BODY, "content": [{"type": "text", "text": "Trust me, it is 333 m."}]}
    server.add(json_reply(body), json_reply(body))
    argv = ["search", "q", "--provider", "anthropic", "--config", str(_anthropic_config(tmp_path, server))]
    assert cli(monkeypatch, tmp_path, [*argv, "--quiet"], {}) == 0  # without --cited: the answer
    capsys.readouterr()
    code = cli(monkeypatch, tmp_path, [*argv, "--cited", "--quiet", "--format", "json"], {})
    captured = capsys.readouterr()
    assert code == 3
    assert json.loads(captured.out)["error"]["type"] == "UNGROUNDED_ANSWER"
    assert "no citable source" in captured.err


def test_chat_reads_the_prompt_from_stdin_when_it_is_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = FaultServer().start()
    try:
        server.add(Reply(parts=chat_stream("Summary.")))
        monkeypatch.setattr("sys.stdin", io.StringIO("line one\nline two\n"))
        argv = ["chat", "--model", "compatible:local", "--base-url", server.base_url, "-"]
        assert llmroute_cli.main(argv) == 0
    finally:
        server.stop()
    assert "Summary." in capsys.readouterr().out
    (sent,) = server.received
    assert json.loads(sent.body)["messages"] == [{"role": "user", "content": "line one\nline two\n"}]


def test_chat_dash_with_nothing_piped_in_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    with pytest.raises(SystemExit) as exit_info:
        llmroute_cli.main(["chat", "--model", "compatible:local", "--base-url", "http://127.0.0.1:9/v1", "-"])
    assert exit_info.value.code == 2
    assert "nothing is piped in" in capsys.readouterr().err
