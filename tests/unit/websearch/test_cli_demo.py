"""The grounded-search part of ``llmroute demo``: bundled recordings through ``GroundedSearch``."""

from __future__ import annotations

import io
import sys

import pytest

from llmroute import cli
from llmroute.cli.demo import load_recording
from llmroute.websearch.cli import DEMO_SCENES, demo


@pytest.mark.anyio
async def test_demo_shows_each_providers_tool_result_with_markers_and_sources() -> None:
    out = io.StringIO()
    await demo(out)
    text = out.getvalue()
    for title in ("Gemini, gemini-2.5-pro", "OpenAI Responses, gpt-5", "Anthropic, claude-sonnet-4-0"):
        assert f"== Grounded search ({title})" in text
    assert "temperatures hovering around 69°F.[1]" in text  # Gemini: UTF-8 byte offsets placed right
    assert "\n\nSources:\n[1] weather.gov (" not in text and "[2] weather.gov (https://vertexaisearch" in text
    assert "Temperature: 66°F with clear skies[1]" in text  # Anthropic: the end of the cited block
    assert "[1] UN overwhelmingly endorses two-state solution" in text  # OpenAI: title of the first citation


@pytest.mark.anyio
async def test_demo_reads_only_package_data_without_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` now fails: the demo must not need it
    out = io.StringIO()
    await demo(out)
    assert out.getvalue().count("\nSources:\n") == len(DEMO_SCENES)


def test_bundled_search_recordings_keep_provenance_and_one_interaction() -> None:
    for scene in DEMO_SCENES:
        cassette = load_recording(scene.recording)
        assert len(cassette.interactions) == 1
        assert cassette.metadata["source"] == f"cassettes/{scene.source}"
        assert cassette.metadata["licence"].startswith("MIT, Copyright")


@pytest.mark.anyio
async def test_a_long_answer_is_cut_after_a_whole_paragraph() -> None:
    out = io.StringIO()
    await demo(out)
    text = out.getvalue()
    assert (
        "killed at least 46" in text and "Want the" not in text
    )  # OpenAI's answer: three items, then the cut
    assert "[… 61 more characters]\n\nSources:\n[1] UN" in text


def test_the_demo_says_what_it_replays_and_what_to_run_next(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--pace", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Real provider streams, recorded earlier and bundled with llmroute")
    assert out.index("== Grounded search (Anthropic") < out.index("Live next: llmroute chat")
    assert out.endswith("llmroute --help for the other commands.\n")
