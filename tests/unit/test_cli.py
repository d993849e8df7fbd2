"""The ``llmroute`` command as a user meets it: version, ``python -m``, exit codes, help text, bad
option values, ``chat --base-url`` / ``compatible:`` against a real local server, and the demo's
output (prompts, no colour off a TTY, no silent reasoning gap)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import llmroute
from llmroute import cli
from llmroute.cli import demo
from llmroute.cli.console import use_color
from tests.reliability.server import FaultServer, Reply, chat_stream

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmroute", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_version_and_python_dash_m() -> None:
    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"llmroute {llmroute.__version__}"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["demo", "--pace", "fast"], "not a number: 'fast'"),
        (["demo", "--pace", "-1"], "must be 0 or more"),
        (["chat", "--max-tokens", "0", "hi"], "must be 1 or more"),
        (["chat", "--max-tokens", "x", "hi"], "not an integer"),
        (["nope"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_option_values_are_usage_errors_without_traceback(args: list[str], fragment: str) -> None:
    result = _run(*args)
    assert result.returncode == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["chat", "--model", "gpt-4o", "hi"], "--model must look like provider:model-id"),
        (["chat", "--model", "nope:x", "hi"], "unknown provider 'nope'"),
        (["chat", "--model", "compatible:local", "hi"], "compatible:MODEL needs --base-url"),
        (["chat", "  "], "the prompt is empty"),
        (
            ["chat", "--model", "openai:gpt-4o-mini", "--base-url", "ftp://x/v1", "hi"],
            "base_url must be an http(s) URL",
        ),
    ],
)
def test_configuration_errors_exit_2(
    args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(args)
    assert exit_info.value.code == 2
    assert fragment in capsys.readouterr().err


def test_missing_key_names_the_variable_not_a_python_keyword(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["chat", "--model", "anthropic:claude-sonnet-4-5", "hi"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "set ANTHROPIC_API_KEY" in err and "api_key=" not in err


def test_every_option_has_help() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    cli._add_builtin(sub)  # pyright: ignore[reportPrivateUsage]
    for module in cli.SUBCOMMANDS:
        __import__(module, fromlist=["add_parser"]).add_parser(sub)
    for name, command in sub.choices.items():
        for action in command._actions:  # pyright: ignore[reportPrivateUsage]
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_chat_base_url_and_compatible_target_against_a_local_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk_local_test_key")
    server = FaultServer().start()
    try:
        server.add(Reply(parts=chat_stream("Hel", "lo")), Reply(parts=chat_stream("Hi")))
        assert cli.main(["chat", "--model", "compatible:local", "--base-url", server.base_url, "Say hi"]) == 0
        assert "Hello" in capsys.readouterr().out
        # --base-url also overrides a named provider's (credentials still come from its env var).
        code = cli.main(
            ["chat", "--model", "groq:llama", "--base-url", server.base_url, "--max-tokens", "5", "hi"]
        )
        assert code == 0 and "Hi" in capsys.readouterr().out
    finally:
        server.stop()
    assert [r.path for r in server.received] == ["/v1/chat/completions"] * 2
    assert (
        b'"max_tokens":5' in server.received[1].body
        or b'"max_completion_tokens":5' in server.received[1].body
    )


def test_chat_never_writes_a_providers_escape_sequences_to_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a title-setting OSC and a screen clear, each split across chunks, and a bidi override
    server = FaultServer().start()
    try:
        server.add(Reply(parts=chat_stream("Safe \x1b]0;pwn", "ed\x07text \x1b[", "2J\u202eend")))
        assert cli.main(["chat", "--model", "compatible:local", "--base-url", server.base_url, "hi"]) == 0
    finally:
        server.stop()
    out = capsys.readouterr().out
    assert "Safe text end" in out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


def test_provider_failure_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    server = FaultServer().start()
    try:
        server.add(
            Reply(
                400,
                {"content-type": "application/json"},
                [b'{"error": {"message": "bad model"}}'],
                chunked=False,
            )
        )
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["chat", "--model", "compatible:m", "--base-url", server.base_url, "hi"])
    finally:
        server.stop()
    assert exit_info.value.code == 1
    assert "bad model" in capsys.readouterr().err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_tty_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_color(_Tty()) and not use_color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(_Tty())


def test_demo_output_when_piped_has_prompts_no_escapes_and_no_silent_gap() -> None:
    result = _run("demo", "--pace", "0")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\033" not in out and "\b" not in out
    for scene in demo.SCENES:
        assert f"== {scene.title}\n> {scene.prompt}\n" in out
    assert "The weather in Paris is sunny" in out
    assert "tool call get_weather({'city': 'Paris'})" in out
    # xAI's reasoning is cut at 240 characters; the rest is counted, not silently skipped.
    assert "… (+1090 chars)\nHello!" in out


def test_demo_on_a_terminal_counts_hidden_reasoning_live() -> None:
    out = _Tty()
    xai = [s for s in demo.SCENES if s.recording == "xai-reasoning"]
    assert anyio.run(lambda: demo.run(out, pace=0, color=True, live=True, scenes=xai)) == 0
    text = out.getvalue()
    assert "\033[2m[thinking] " in text and "\033[1m== xAI" in text
    counters = text.count("\b")
    assert counters > 0 and re.search(r"finish: stop, 21 in / \d+ out\n$", text)
    assert "(+1090 chars)" in text


def test_demo_default_pacing_stays_short() -> None:
    assert demo.SCENE_SECONDS * len(demo.SCENES) < 6


def test_bundled_recordings_match_the_cassettes() -> None:
    pytest.importorskip("yaml")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bundle_demo.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_demo_extras_run_after_the_scenes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import types

    extra = types.ModuleType("llmroute_test_demo_extra")

    async def extra_demo(out: io.TextIOBase) -> None:
        out.write("== extra scene\n")

    extra.demo = extra_demo  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llmroute_test_demo_extra", extra)
    monkeypatch.setattr(cli, "DEMO_EXTRAS", ("llmroute_test_demo_extra",))
    assert cli.main(["demo", "--pace", "0"]) == 0
    out = capsys.readouterr().out
    assert out.index("finish: stop") < out.index("== extra scene")


def test_serve_says_in_one_line_when_it_cannot_listen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import socket

    config = tmp_path / "gateway.json"
    model = {"provider": "compatible", "base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "m"}
    config.write_text(json.dumps({"keys": ["gw"], "models": {"main": model}}), encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["serve", "--config", str(config), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"llmroute serve: cannot listen on 127.0.0.1:{port}: ") and err.count("\n") == 1
    result = _run("serve", "--config", str(config), "--port", "70000")
    assert (
        result.returncode == 2 and "must be 0 to 65535" in result.stderr and "Traceback" not in result.stderr
    )


def test_an_unexpected_exception_is_one_line_without_its_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(spec: str, base_url: str | None = None) -> llmroute.Model:
        raise ValueError("sk-secret-in-the-message")

    monkeypatch.setattr(cli, "resolve_model", broken)
    monkeypatch.delenv("LLMROUTE_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["chat", "hi"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert (
        err.startswith("llmroute chat: unexpected ValueError (llmroute/cli/__init__.py:")
        and "LLMROUTE_TRACEBACK=1" in err
    )
    assert "sk-secret" not in err and "Traceback" not in err
    monkeypatch.setenv("LLMROUTE_TRACEBACK", "1")
    with pytest.raises(ValueError, match="sk-secret"):
        cli.main(["chat", "hi"])


def test_chat_prints_tokens_and_cost_at_the_end(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk_local_test_key")
    server = FaultServer().start()
    try:
        server.add(Reply(parts=chat_stream("Hi")), Reply(parts=chat_stream("Hi")))  # usage: 5 in, 1 out
        args = ["chat", "--model", "groq:llama-3.3-70b-versatile", "--base-url", server.base_url, "hi"]
        assert cli.main(args) == 0
        out = capsys.readouterr().out
        # Groq llama-3.3-70b-versatile (groq.com/pricing): $0.59 input, $0.79 output per million tokens
        assert out.endswith("finish: stop, 5 in / 1 out\n  cost: $0.00000374 (catalog)\n"), out
        assert cli.main(["chat", "--model", "compatible:local", "--base-url", server.base_url, "hi"]) == 0
        assert capsys.readouterr().out.endswith("  cost: unknown (unknown model 'local' on compatible)\n")
    finally:
        server.stop()
