"""``llmroute models``: a table or JSON, offline."""

from __future__ import annotations

import json
import sys

import pytest

from llmroute import cli
from llmroute.catalog import cli as models_cli


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "sonnet-4-5", "--provider", "anthropic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "provider",
        "model",
        "context",
        "max",
        "out",
        "$/M",
        "in",
        "$/M",
        "out",
        "$/M",
        "cached",
    ]
    row = next(line for line in lines if " claude-sonnet-4-5-20250929 " in line)
    assert row.split() == ["anthropic", "claude-sonnet-4-5-20250929", "200,000", "64,000", "3", "15", "0.3"]


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "gemini-2.5-pro", "--provider", "google", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    pro = next(r for r in rows if r["id"] == "gemini-2.5-pro")
    assert pro["context_window"] == 1_048_576 and pro["max_output_tokens"] == 65_536
    assert pro["prices"]["input"] == 1.25 and pro["prices"]["tiers"][0] == {
        "above": 200_000,
        "input": 2.5,
        "output": 15,
        "cache_read": 0.25,
        "cache_write": None,
        "cache_write_1h": None,
    }
    assert cli.main(["models", "no-such-model-anywhere"]) == 1
    assert capsys.readouterr().out == (
        "no models match 'no-such-model-anywhere' (llmroute models lists them all)\n"
    )
    assert cli.main(["models", "gpt-4o", "--provider", "groq"]) == 1
    assert "on groq" in capsys.readouterr().out


def test_without_the_extra_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models_cli, "_available", lambda: False)
    with pytest.raises(SystemExit) as exit:
        cli.main(["models"])
    assert exit.value.code == 2
    assert "pip install 'llmroute[catalog]'" in capsys.readouterr().err


def test_prices_print_as_plain_decimals(capsys: pytest.CaptureFixture[str]) -> None:
    """A registered price of 1e-7 $/M reads 0.0000001 (not 1E-7), and 10.00 reads 10."""
    from decimal import Decimal

    from llmroute import catalog
    from llmroute.catalog import ModelInfo, Prices

    fresh = catalog.Catalog()
    fresh.register(
        ModelInfo(
            provider="openai",
            id="tiny-ft-zz",
            context_window=8_000,
            prices=Prices(input=Decimal("1E-7"), output=Decimal("10.00")),
        )
    )
    models_cli._table(fresh.models("tiny-ft-zz"), sys.stdout)  # pyright: ignore[reportPrivateUsage]
    row = capsys.readouterr().out.splitlines()[1]
    assert row.split() == ["openai", "tiny-ft-zz", "8,000", "-", "0.0000001", "10", "-"]
