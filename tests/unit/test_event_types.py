"""Event tags: the ``Literal`` class variable each event declares is its msgspec wire tag, so a
type checker narrows on ``event.type`` and the wire format is unchanged."""

from __future__ import annotations

import typing

import msgspec
import pytest

import llmroute
from llmroute.schema import events

EVENT_CLASSES = typing.get_args(events.LLMEvent)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_literal_tag_is_the_wire_tag(cls: type[events._Event]) -> None:  # pyright: ignore[reportPrivateUsage]
    hints = typing.get_type_hints(cls, include_extras=True)
    (literal,) = typing.get_args(hints["type"])  # ClassVar[Literal["..."]]
    (tag,) = typing.get_args(literal)
    assert tag == cls.__struct_config__.tag == cls.type
    assert "type" not in cls.__struct_fields__  # a class variable, not a field


def test_tags_are_unique_and_round_trip() -> None:
    tags = [cls.type for cls in EVENT_CLASSES]
    assert len(set(tags)) == len(tags)
    event = llmroute.TextDelta("t0", "hi")
    wire = msgspec.json.encode(event)
    assert wire == b'{"type":"text-delta","id":"t0","text":"hi"}'
    back = msgspec.json.decode(wire, type=llmroute.LLMEvent)
    assert back == event and back.type == "text-delta"


def test_instances_expose_the_tag() -> None:
    call = llmroute.ToolCall("c1", "get_weather", {"city": "Paris"})
    assert call.type == "tool-call"
    finish = llmroute.Finish("stop")
    assert finish.type == "finish"
