"""``render_cited`` on real recorded search answers (Gemini grounding, OpenAI Responses annotations,
Anthropic cited blocks; streamed and not), folded by ``websearch.extract``: the result passes the
citation contract against the grounding, cites only URLs present in the recorded bytes, and changes
the model's text only by adding citations and escapes (OpenAI: its cited links are replaced)."""

from __future__ import annotations

import re

import pytest

import llmroute
from llmroute.providers import anthropic, google, openai
from llmroute.testing import Cassette
from llmroute.websearch import GroundedAnswer, UngroundedAnswerError, check_citations, render_cited, sanitize
from llmroute.websearch.extract import fold
from llmroute.websearch.markdown import neutralize
from tests.helpers import load, replay_events

pytestmark = pytest.mark.anyio

GEMINI = google.configure(api_key="k").gemini("gemini-2.5-pro")
RESPONSES = openai.configure(api_key="k").responses("gpt-5")
CLAUDE = anthropic.configure(api_key="k").messages("claude-sonnet-4-0")

CASES = [
    (GEMINI, "pydantic-ai/test_google/test_google_model_web_search_tool.yaml", 0, False),
    (GEMINI, "pydantic-ai/test_google/test_google_model_web_search_tool.yaml", 1, False),
    (GEMINI, "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml", 0, True),
    (RESPONSES, "vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml", 0, True),
    (CLAUDE, "pydantic-ai/test_anthropic/test_anthropic_web_search_tool.yaml", 0, False),
    (CLAUDE, "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml", 0, True),
    (CLAUDE, "vercel-ai/anthropic/anthropic-web-search-tool.1.chunks.yaml", 0, True),
]
# OpenAI answers recorded without annotations or listed sources: nothing to cite.
UNGROUNDED = [
    (
        RESPONSES,
        "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool.yaml",
        0,
        False,
    ),
    (
        RESPONSES,
        "pydantic-ai/test_openai_responses/test_openai_responses_model_web_search_tool_stream.yaml",
        0,
        True,
    ),
]
_INSERTED = re.compile(
    r"\n?\[Source\]\([^\s)]*(?:\([^\s)]*\)[^\s)]*)*\)\n\n| \[Source\]\([^\s)]*(?:\([^\s)]*\)[^\s)]*)*\)"
)


async def _recorded(
    model: llmroute.Model, rel: str, index: int, stream: bool
) -> tuple[Cassette, GroundedAnswer]:
    cassette = Cassette([load(rel).interactions[index]])
    request = llmroute.request(
        model=model, prompt="q", generation=None if stream else llmroute.GenerationOptions(stream=False)
    )
    return cassette, fold(await replay_events(cassette, request), provider=model.provider, model=model.id)


@pytest.mark.parametrize(
    ("model", "rel", "index", "stream"), CASES, ids=[f"{c[1].split('/')[-1]}#{c[2]}" for c in CASES]
)
async def test_recorded_answers_render_to_passing_cited_answers(
    model: llmroute.Model, rel: str, index: int, stream: bool
) -> None:
    cassette, answer = await _recorded(model, rel, index, stream)
    assert answer.text.strip() and answer.citations

    out = render_cited(answer)
    report = check_citations(out, searched=1, allowed_urls=[s.url for s in answer.sources if s.url])
    assert report.ok, report.violations
    recorded = cassette.interactions[0].response.body.decode()
    assert report.inline_urls and all(
        u in recorded or u.replace("/", "\\/") in recorded for u in report.inline_urls
    )

    if model is RESPONSES:  # its cited spans are its own links, replaced by the citations
        return
    body = out.split("\n\n## Sources\n\n", 1)[0]
    escaped, _ = neutralize(sanitize(answer.text), "## Sources")
    assert _INSERTED.sub("", body).rstrip() == escaped.rstrip()


@pytest.mark.parametrize(("model", "rel", "index", "stream"), UNGROUNDED, ids=["whole", "streamed"])
async def test_a_recorded_answer_without_grounding_is_an_error_not_an_unsourced_answer(
    model: llmroute.Model, rel: str, index: int, stream: bool
) -> None:
    _, answer = await _recorded(model, rel, index, stream)
    assert answer.text.strip() and not answer.sources
    with pytest.raises(UngroundedAnswerError) as caught:
        render_cited(answer)
    assert caught.value.code == "UNGROUNDED_ANSWER"
