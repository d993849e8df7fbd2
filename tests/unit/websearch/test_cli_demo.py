"""The grounded-search part of ``llmroute demo``: bundled recordings through ``GroundedSearch``."""

from __future__ import annotations

import io

import pytest

from llmroute.websearch.cli import demo
from tests.helpers import CASSETTES


@pytest.mark.anyio
async def test_demo_shows_each_providers_tool_result_with_markers_and_sources() -> None:
    out = io.StringIO()
    await demo(out, CASSETTES)
    text = out.getvalue()
    for provider in ("google", "openai", "anthropic"):
        assert f"Grounded search ({provider})" in text
    assert "temperatures hovering around 69°F.[1]" in text  # Gemini: UTF-8 byte offsets placed right
    assert "\n\nSources:\n[1] weather.gov (" not in text and "[2] weather.gov (https://vertexaisearch" in text
    assert "Temperature: 66°F with clear skies[1]" in text  # Anthropic: the end of the cited block
    assert "[1] UN overwhelmingly endorses two-state solution" in text  # OpenAI: title of the first citation


@pytest.mark.anyio
async def test_demo_finds_the_source_trees_recordings_and_skips_absent_ones() -> None:
    out = io.StringIO()
    await demo(out)
    assert "Grounded search (anthropic)" in out.getvalue()
    empty = io.StringIO()
    await demo(empty, CASSETTES / "no-such-folder")
    assert empty.getvalue() == ""
