"""``Blocks`` (protocols/_shared.py), the text/reasoning block bookkeeping the Chat, Responses and
Bedrock parsers share: a block id that has ended is never opened again. A provider stream asking
for that is malformed, so it is a typed ``InvalidProviderOutputError`` naming the id, not a second
``text-start`` for an id a consumer has already seen end."""

from __future__ import annotations

import pytest

from llmroute import InvalidProviderOutputError
from llmroute.protocols._shared import Blocks
from llmroute.schema.events import (
    LLMEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
)


def test_an_ended_text_id_is_refused_naming_it() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    blocks.text_delta("a", out, "msg:0")
    blocks.end_text(out)
    with pytest.raises(InvalidProviderOutputError, match="text block 'msg:0' opened again after it ended"):
        blocks.text_delta("b", out, "msg:0")
    assert out == [TextStart("msg:0"), TextDelta("msg:0", "a"), TextEnd("msg:0")]  # nothing reopened
    assert blocks.text is None


def test_an_id_closed_by_switching_blocks_is_refused() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    blocks.text_delta("a", out, "text-0")
    blocks.text_delta("b", out, "text-1")  # ends text-0
    with pytest.raises(InvalidProviderOutputError, match="'text-0'"):
        blocks.text_delta("c", out, "text-0")


def test_an_ended_reasoning_id_is_refused() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    blocks.reasoning_delta("hm", out, "rs:0")
    blocks.reasoning_delta("hm", out, "rs:1")
    blocks.end_reasoning(out)
    for id in ("rs:0", "rs:1"):
        with pytest.raises(InvalidProviderOutputError, match=f"reasoning block '{id}' opened again"):
            blocks.reasoning_delta("x", out, id)
    assert out[-1] == ReasoningEnd("rs:1")
    assert blocks.reasoning_ended("rs:0") and not blocks.reasoning_ended("rs:2")


def test_close_ends_both_kinds_for_good() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    blocks.text_delta("a", out, "t")
    blocks.reasoning_delta("b", out, "r")
    blocks.close(out)
    with pytest.raises(InvalidProviderOutputError):
        blocks.text_delta("a", out, "t")
    with pytest.raises(InvalidProviderOutputError):
        blocks.reasoning_delta("b", out, "r")


def test_text_and_reasoning_ids_are_separate_and_open_blocks_continue() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    blocks.reasoning_delta("hm", out, "x")
    blocks.end_reasoning(out)
    blocks.text_delta("a", out, "x")  # a text block may share an ended reasoning block's id
    blocks.text_delta("b", out, "x")  # the open block goes on
    assert out == [
        ReasoningStart("x"),
        ReasoningDelta("x", "hm"),
        ReasoningEnd("x"),
        TextStart("x"),
        TextDelta("x", "a"),
        TextDelta("x", "b"),
    ]


def test_generated_ids_never_collide_with_ended_ones() -> None:
    blocks, out = Blocks(), list[LLMEvent]()
    for _ in range(3):
        blocks.text_delta("a", out)
        blocks.end_text(out)
        blocks.reasoning_delta("b", out)
        blocks.end_reasoning(out)
    starts = [e.id for e in out if isinstance(e, TextStart | ReasoningStart)]
    assert starts == ["text-0", "reasoning-1", "text-2", "reasoning-3", "text-4", "reasoning-5"]
