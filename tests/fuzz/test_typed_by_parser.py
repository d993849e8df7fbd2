"""Mutated real recordings fail with the parser's own message, not the executor's catch-all (issue
#21: 630 of 206,000 mutated streams were typed only by the catch-all).

The executor turns any exception a parser did not foresee into ``InvalidProviderOutputError`` with
``code="bad_shape"`` and "an unexpected frame shape (TypeError)" (``route.decoding.output_error``):
typed, but it names no field. Every failure here must be an ``LLMError`` raised on purpose -- a
precise message, never that fallback. The recordings are the fuzz suite's (one per protocol) plus a
Gemini grounded search (usage, grounding) and a Responses web search (usage, ``web_search_call``).
The named cases are the root causes the campaign found, each failing before its fix."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import llmroute
from llmroute.testing import Cassette

from ..helpers import CASSETTES
from ..routes import PROTOCOLS, WireCase
from .test_protocols import FUZZ, _events, cuts, hostile_values, paths, replace_at, replay

CASES: dict[str, tuple[WireCase, bytes]] = {
    name: (case, case.body()) for name, case in PROTOCOLS.items() if name != "bedrock-converse"
}
for _name, _protocol, _path in (
    ("gemini-search", "gemini", "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml"),
    (
        "responses-search",
        "openai-responses",
        "vercel-ai/openai/responses/openai-web-search-tool.1.chunks.yaml",
    ),
):
    _body = Cassette.load(CASSETTES / _path).interactions[0].response.body
    CASES[_name] = (replace(PROTOCOLS[_protocol], cassette=_path), _body)


def _fallback(failure: BaseException) -> bool:
    """The executor's catch-all (``output_error``), as opposed to an error a parser raised."""
    return getattr(failure, "code", None) == "bad_shape" and "unexpected frame shape" in str(failure)


def _splice(body: bytes, case: WireCase, index: int, path: tuple[Any, ...], value: Any) -> bytes:
    events = _events(case, body)
    new = json.dumps(replace_at(json.loads(events[index][1]), path, value)).encode()
    return b"".join(p + (new if i == index else d) + s for i, (p, d, s) in enumerate(events))


def _run(name: str, body: bytes, chunks: list[int] | None = None) -> BaseException | None:
    case = CASES[name][0]
    points = sorted({c % (len(body) + 1) for c in chunks or []})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if b > a]
    return replay(case, pieces)[1]


def _where(name: str, key: str) -> tuple[int, tuple[Any, ...]]:
    """The last event holding ``key`` at any depth (for a Responses item field: the last
    ``response.output_item.done``, the event that carries the item), and the path to it."""
    case, body = CASES[name]
    events = _events(case, body)
    for index in range(len(events) - 1, -1, -1):
        try:
            value = json.loads(events[index][1])
        except ValueError:
            continue
        if key == "action" and value.get("type") != "response.output_item.done":
            continue
        for path in paths(value):
            if path and path[-1] == key:
                return index, path
    raise AssertionError(f"{key} not in {name}")


# The root causes the campaign found: (recording, field, bad value, what the message must name).
ROOT_CAUSES = [
    ("gemini-search", "thoughtsTokenCount", "x", "'thoughtsTokenCount' is str"),
    ("gemini-search", "promptTokenCount", [], "'promptTokenCount' is list"),
    ("gemini-search", "usageMetadata", "x", "usageMetadata"),
    ("gemini", "candidatesTokenCount", 1.5, "'candidatesTokenCount' is float"),
    ("responses-search", "input_tokens", "x", "'input_tokens' is str"),
    ("responses-search", "input_tokens_details", "x", "'input_tokens_details' is str"),
    ("responses-search", "output_tokens_details", [1], "'output_tokens_details' is list"),
    ("responses-search", "action", "x", "action is str, not an object"),
    ("anthropic-messages", "output_tokens", "x", "output_tokens is str"),
    ("anthropic-messages", "input_tokens", {}, "input_tokens is dict"),
]


@pytest.mark.parametrize(
    ("name", "key", "value", "named"), ROOT_CAUSES, ids=[f"{c[0]}-{c[1]}" for c in ROOT_CAUSES]
)
def test_each_root_cause_has_a_precise_message(name: str, key: str, value: Any, named: str) -> None:
    case, body = CASES[name]
    index, path = _where(name, key)
    failure = _run(name, _splice(body, case, index, path, value))
    assert isinstance(failure, llmroute.InvalidProviderOutputError), failure
    assert not _fallback(failure), str(failure)
    assert named in str(failure)


def test_a_bool_usage_counter_in_chat_is_not_a_count() -> None:
    case, body = CASES["openai-chat"]
    index, path = _where("openai-chat", "completion_tokens")
    events, failure = replay(case, [_splice(body, case, index, path, True)])
    assert failure is None
    (finish,) = [e for e in events if isinstance(e, llmroute.Finish)]
    assert finish.usage is not None and finish.usage.output_tokens is None  # unknown, not True


@pytest.mark.parametrize("name", list(CASES))
@FUZZ
@given(data=st.data(), cuts=cuts)
def test_mutated_values_fail_with_the_parsers_message(
    name: str, data: st.DataObject, cuts: list[int]
) -> None:
    case, body = CASES[name]
    events = _events(case, body)
    index = data.draw(st.integers(0, len(events) - 1))
    try:
        value = json.loads(events[index][1])
    except ValueError:
        return  # [DONE]
    path = data.draw(st.sampled_from(paths(value)[1:] or [()]))
    failure = _run(name, _splice(body, case, index, path, data.draw(hostile_values)), cuts)
    if failure is not None:
        assert isinstance(failure, llmroute.LLMError), f"untyped {type(failure).__name__}: {failure!r}"
        assert not _fallback(failure), f"typed only by the executor's catch-all: {failure}"
