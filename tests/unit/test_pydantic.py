"""pydantic at the edges (optional): a ``BaseModel`` tool parameter, a ``BaseModel`` or
``TypeAdapter`` for ``generate_object``; validation errors reach the model like msgspec ones."""

from __future__ import annotations

import subprocess
import sys
from typing import Literal

import pytest

pydantic = pytest.importorskip("pydantic")

import llmroute  # noqa: E402
from llmroute.schema.events import Finish, ToolCall, ToolError, ToolResult  # noqa: E402
from llmroute.tools import step_count_is  # noqa: E402
from llmroute.tools.codec import schema_of  # noqa: E402
from tests.unit.test_tools import _object, _text  # noqa: E402
from tests.unit.test_tools_runtime import calls_turn, run, scripted_model, sent, text_turn, turn  # noqa: E402


class City(pydantic.BaseModel):
    city: str = pydantic.Field(description="City name")
    unit: Literal["c", "f"] = "c"


class Forecast(pydantic.BaseModel):
    city: str
    days: list[int]


@llmroute.tool
async def weather(args: City) -> Forecast:
    """Weather for a city."""
    return Forecast(city=args.city, days=[20, 21] if args.unit == "c" else [68, 70])


def test_schema_is_projected_like_msgspec() -> None:
    assert weather.definition.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    nested = schema_of(pydantic.TypeAdapter(list[Forecast]))
    assert nested["items"]["properties"]["days"] == {"type": "array", "items": {"type": "integer"}}
    assert "$defs" not in nested and "title" not in nested["items"]


@pytest.mark.anyio
async def test_tool_with_a_model_parameter_runs_and_validation_errors_reach_the_model() -> None:
    script = [
        calls_turn(ToolCall("c1", "weather", {"city": "Oslo", "unit": "k"})),
        calls_turn(ToolCall("c2", "weather", {"city": "Oslo", "unit": "f"})),
        text_turn("68F."),
    ]
    events, transport = await run(script, tools=[weather])
    (error,) = [e for e in events if isinstance(e, ToolError)]
    assert error.message.startswith("Invalid input for tool weather: ") and "at `$.unit`" in error.message
    results = [e for e in events if isinstance(e, ToolResult)]
    assert results[1].result == {"city": "Oslo", "days": [68, 70]}  # a returned model is dumped as JSON
    assert sent(transport, 1)["messages"][2]["content"][0]["is_error"] is True


@pytest.mark.anyio
async def test_strict_tool_nulls_mean_defaults() -> None:
    strict = llmroute.tool(strict=True)(weather.handler)  # type: ignore[arg-type]
    script = [calls_turn(ToolCall("c1", "weather", {"city": "Oslo", "unit": None}))]
    events, _ = await run(script, tools=[strict], stop_when=step_count_is(1))
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.result == {"city": "Oslo", "days": [20, 21]}


@pytest.mark.anyio
async def test_generate_object_with_a_model_and_a_type_adapter() -> None:
    request = llmroute.request(scripted_model(native_output_schema=True), prompt="Forecast?")
    (value, _), transport = await _object([_text('{"city": "Oslo", "days": [1, 2]}')], request, Forecast)
    assert value == Forecast(city="Oslo", days=[1, 2])
    assert sent(transport, 0)["output_schema"]["schema"]["required"] == ["city", "days"]

    adapter = pydantic.TypeAdapter(list[int])
    (numbers, _), _ = await _object([_text("[1, 2, 3]")], request, adapter)
    assert numbers == [1, 2, 3]

    tool_request = llmroute.request(scripted_model(native_output_schema=False), prompt="Forecast?")
    bad = turn(ToolCall("o1", "Forecast", {"city": "Oslo", "days": ["x"]}), Finish("tool-calls"))
    with pytest.raises(
        llmroute.InvalidProviderOutputError, match=r"does not match Forecast: .*at `\$\.days\.0`"
    ):
        await _object([bad], tool_request, Forecast)


def test_pydantic_is_never_imported_by_llmroute() -> None:
    code = (
        "import sys, msgspec, llmroute\n"
        "@llmroute.tool\n"
        "def f(a: int) -> int: return a\n"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
