"""What strict-compatible means (OpenAI's documented Structured Outputs rules, ``protocols/_strict``)
and Responses function tools sending ``strict`` explicitly (issue #21)."""

from __future__ import annotations

from typing import Any

import pytest

import llmroute
from llmroute.protocols._strict import strict_compatible
from llmroute.providers import openai

CITY = {"type": "string"}
CLOSED: dict[str, Any] = {
    "type": "object",
    "properties": {"city": CITY, "days": {"type": ["integer", "null"]}},
    "required": ["city", "days"],
    "additionalProperties": False,
}


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"x": node}, "required": ["x"], "additionalProperties": False}
    return node


@pytest.mark.parametrize(
    ("schema", "ok"),
    [
        (CLOSED, True),
        ({**CLOSED, "additionalProperties": True}, False),  # objects must be closed
        ({k: v for k, v in CLOSED.items() if k != "additionalProperties"}, False),
        ({**CLOSED, "required": ["city"]}, False),  # every property required (nullable instead)
        ({"anyOf": [CLOSED]}, False),  # the root is an object, not anyOf
        ({"type": "array", "items": CLOSED}, False),
        ({**CLOSED, "properties": {"city": {"allOf": [CITY]}, "days": CITY}}, False),
        ({**CLOSED, "properties": {"city": {"not": CITY}, "days": CITY}}, False),
        ({**CLOSED, "properties": {"city": {"anyOf": [CITY, {"type": "null"}]}, "days": CITY}}, True),
        ({**CLOSED, "properties": {"city": {"type": "array", "items": CLOSED}, "days": CITY}}, True),
        (
            {**CLOSED, "properties": {"city": {"type": "array", "items": {"type": "object"}}, "days": CITY}},
            False,
        ),
        (
            {**CLOSED, "properties": {"city": {"$ref": "#/$defs/c"}, "days": CITY}, "$defs": {"c": CLOSED}},
            True,
        ),
        ({**CLOSED, "$defs": {"c": {"type": "object", "properties": {}}}}, False),  # definitions too
        (_nested(10), True),
        (_nested(12), False),  # at most 10 levels of nesting
        ({"type": "object", "properties": {}, "required": [], "additionalProperties": False}, True),
        ({"type": "object"}, False),
        ("not a schema", False),
    ],
)
def test_strict_compatible_follows_the_documented_rules(schema: Any, ok: bool) -> None:
    assert strict_compatible(schema) is ok


def test_anthropic_flavour_allows_optional_properties() -> None:
    optional = {**CLOSED, "required": ["city"]}
    assert strict_compatible(optional, all_required=False)
    assert not strict_compatible({**optional, "additionalProperties": True}, all_required=False)


def test_too_many_properties() -> None:
    wide = {
        "type": "object",
        "properties": {f"p{i}": CITY for i in range(5001)},
        "required": [f"p{i}" for i in range(5001)],
        "additionalProperties": False,
    }
    assert not strict_compatible(wide)


@pytest.mark.anyio
async def test_responses_tools_always_say_strict() -> None:
    model = openai.configure(api_key="sk-test").responses("gpt-5")
    tools = [
        llmroute.ToolDefinition("closed", "d", CLOSED),
        llmroute.ToolDefinition("open", "d", {"type": "object", "properties": {"q": CITY}}),
        llmroute.ToolDefinition("off", "d", CLOSED, strict=False),
    ]
    async with llmroute.Client() as client:
        body = (await client.prepare(llmroute.request(model, prompt="hi", tools=tools))).json()
        assert [(t["name"], t["strict"]) for t in body["tools"]] == [
            ("closed", True),
            ("open", False),
            ("off", False),
        ]
        bad = llmroute.ToolDefinition("bad", "d", {"type": "object"}, strict=True)
        with pytest.raises(llmroute.InvalidRequestError, match="'bad' asks for strict=True"):
            await client.prepare(llmroute.request(model, prompt="hi", tools=[bad]))
