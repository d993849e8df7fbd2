"""``@tool``, schema projection, stop conditions and structured output."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.schema.content import Message, TextPart, ToolCallPart
from llmroute.schema.events import Finish, TextDelta, TextEnd, TextStart, ToolCall
from llmroute.schema.response import StepResult
from llmroute.schema.tools import ToolDefinition
from llmroute.testing import Interaction, ReplayTransport
from llmroute.testing.cassette import RecordedRequest, RecordedResponse
from llmroute.tools import (
    InvalidToolInput,
    Tool,
    ToolFailure,
    has_tool_call,
    json_schema,
    output_request,
    step_count_is,
    strict_schema,
    strip_null_defaults,
    tool,
)
from tests.unit.test_tools_runtime import scripted_model, sent, turn

# -- @tool ----------------------------------------------------------------------------------------


class Weather(msgspec.Struct):
    city: str
    unit: Literal["c", "f"] = "c"


class Inner(msgspec.Struct):
    """A point."""

    x: int
    label: str | None = None


class Nested(msgspec.Struct):
    inner: Inner
    items: list[Inner] = []
    maybe: Inner | None = None


@dataclasses.dataclass
class Point:
    x: int


class Tree(msgspec.Struct):
    value: int
    children: list[Tree] = []


def test_tool_from_struct_parameter() -> None:
    @llmroute.tool(description="Get current weather for a city.")
    async def get_weather(args: Weather) -> dict[str, Any]:
        return {"city": args.city}

    assert isinstance(get_weather, Tool)
    assert get_weather.definition == ToolDefinition(
        "get_weather",
        "Get current weather for a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"], "default": "c"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )
    assert get_weather.parse({"city": "Paris"}) == Weather("Paris")


def test_tool_from_plain_parameters_docstring_and_name() -> None:
    @tool(name="adder")
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert add.name == "adder" and add.definition.description == "Add two numbers."
    assert add.definition.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_tool_without_parameters_and_with_dataclass() -> None:
    @tool
    async def now() -> str:
        return "noon"

    assert now.definition.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}

    @tool
    def norm(p: Point) -> int:
        return abs(p.x)

    assert norm.parse({"x": -3}) == Point(-3)


def test_tool_rejects_var_args_and_unresolvable_annotations() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="not supported"):

        @tool
        def bad(*args: int) -> int:
            return 0

    with pytest.raises(llmroute.InvalidRequestError, match="cannot resolve"):

        @tool
        def unknown(arg: Undefined) -> int:  # type: ignore[name-defined]  # noqa: F821
            return 0


def test_tool_defined_in_a_local_scope_resolves_local_types() -> None:
    # Postponed annotations (this module has `from __future__ import annotations`) name a class
    # that exists only in this function: resolved from the caller's frame at decoration time.
    class Local(msgspec.Struct):
        x: int

    @tool
    def local(arg: Local) -> int:
        return arg.x

    @tool(description="with arguments")
    def local_kwargs(arg: Local, scale: int = 2) -> int:
        return arg.x * scale

    assert local.parse({"x": 4}) == Local(4)
    assert local.definition.input_schema["properties"] == {"x": {"type": "integer"}}
    assert local_kwargs.definition.input_schema["required"] == ["arg"]


@pytest.mark.anyio
async def test_tool_call_validates_and_runs() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        return a + b

    assert await add({"a": 1}) == 3
    with pytest.raises(
        InvalidToolInput, match=r"Invalid input for tool add: Expected `int`, got `str` - at `\$.a`"
    ):
        await add({"a": "x"})
    with pytest.raises(InvalidToolInput, match="not valid JSON"):
        await add("{oops")


@pytest.mark.anyio
async def test_results_are_plain_data() -> None:
    @tool
    async def w(city: str) -> Weather:
        return Weather(city)

    @tool
    async def parts(city: str) -> list[TextPart]:
        return [TextPart(city)]

    assert await w({"city": "Oslo"}) == {"city": "Oslo", "unit": "c"}
    assert await parts({"city": "Oslo"}) == (TextPart("Oslo"),)


@pytest.mark.anyio
async def test_dynamic_and_schema_only_tools() -> None:
    echo = Tool.dynamic("echo", {"type": "object"}, lambda value: value, description="Echo.")
    assert await echo({"any": [1]}) == {"any": [1]}
    schema_only = Tool(ToolDefinition("ask"))
    assert not schema_only.executable
    with pytest.raises(ToolFailure, match="no handler"):
        await schema_only({})


# -- schema projection ----------------------------------------------------------------------------


def test_json_schema_inlines_refs_and_drops_titles() -> None:
    inner = {
        "description": "A point.",
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["x"],
        "additionalProperties": False,
    }
    assert json_schema(Nested) == {
        "type": "object",
        "properties": {
            "inner": inner,
            "items": {"type": "array", "items": inner, "default": []},
            "maybe": {"anyOf": [inner, {"type": "null"}], "default": None},
        },
        "required": ["inner"],
        "additionalProperties": False,
    }


def test_json_schema_keeps_defs_for_recursive_types() -> None:
    schema = json_schema(Tree)
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert schema["$defs"]["Tree"]["properties"]["value"] == {"type": "integer"}
    assert "$ref" not in schema


def test_strict_projection_requires_everything_and_nulls_optionals() -> None:
    strict = strict_schema(json_schema(Weather))
    assert strict == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"anyOf": [{"enum": ["c", "f"]}, {"type": "null"}]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    }
    nested = strict_schema(json_schema(Nested))
    inner = nested["properties"]["inner"]
    assert inner["required"] == ["x", "label"]
    assert inner["properties"]["label"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }  # already nullable
    assert nested["properties"]["items"]["anyOf"][0]["items"]["required"] == ["x", "label"]
    assert "default" not in msgspec.json.encode(nested).decode()


def test_strict_projection_keeps_a_field_named_default() -> None:
    class Odd(msgspec.Struct):
        default: int = 0

    assert strict_schema(json_schema(Odd))["properties"] == {
        "default": {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    }


def test_strip_null_defaults() -> None:
    value = {"inner": {"x": 1, "label": None}, "items": [{"x": 2, "label": None}], "maybe": None}
    assert strip_null_defaults(value, Nested) == value  # label and maybe accept None
    assert strip_null_defaults({"city": "Oslo", "unit": None}, Weather) == {"city": "Oslo"}
    assert strip_null_defaults({"city": None}, Weather) == {"city": None}  # required: left to validation


@pytest.mark.anyio
async def test_strict_tool_accepts_null_for_defaulted_fields() -> None:
    @tool(strict=True)
    async def get_weather(args: Weather) -> str:
        return args.unit

    assert get_weather.definition.strict is True
    assert get_weather.definition.input_schema["required"] == ["city", "unit"]
    assert await get_weather({"city": "Oslo", "unit": None}) == "c"


# -- stop conditions ------------------------------------------------------------------------------


def _step(index: int, *names: str) -> StepResult:
    calls = tuple(ToolCallPart(f"c{i}", n, {}) for i, n in enumerate(names))
    return StepResult(index, Message("assistant", calls), "tool-calls", None)


def test_stop_conditions() -> None:
    assert not step_count_is(2)(_step(0))
    assert step_count_is(2)(_step(1))
    assert step_count_is(1)(_step(0))
    with pytest.raises(ValueError):
        step_count_is(0)
    assert has_tool_call("done", "final")(_step(0, "search", "final"))
    assert not has_tool_call("done")(_step(0, "search"))


def test_lazy_exports() -> None:
    import subprocess
    import sys

    code = "import sys, llmroute; assert 'llmroute.tools' not in sys.modules; llmroute.tool; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
    assert llmroute.step_count_is is step_count_is and llmroute.has_tool_call is has_tool_call
    assert llmroute.ToolFailure is ToolFailure and llmroute.Tool is Tool
    with pytest.raises(AttributeError):
        _ = llmroute.not_a_thing  # type: ignore[attr-defined]


# -- structured output ----------------------------------------------------------------------------


async def _object(
    interactions: list[Interaction], request: llmroute.LLMRequest, schema: Any, **kwargs: Any
) -> tuple[Any, ReplayTransport]:
    transport = ReplayTransport(interactions)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        result = await client.generate_object(request, schema, **kwargs)
    return result, transport


def _text(text: str) -> Interaction:
    return turn(TextStart("t"), TextDelta("t", text), TextEnd("t"), Finish("stop"))


@pytest.mark.anyio
async def test_generate_object_native_mode() -> None:
    """A protocol with a native mode but not OpenAI's strict dialect gets the plain schema."""
    request = llmroute.request(scripted_model(native_output_schema=True), prompt="Weather in Oslo?")
    (value, response), transport = await _object([_text('{"city": "Oslo"}')], request, Weather)
    assert value == Weather("Oslo", "c") and response.text == '{"city": "Oslo"}'
    body = sent(transport, 0)
    assert body["output_schema"] == {"name": "Weather", "schema": json_schema(Weather), "strict": False}
    assert body["tools"] == [] and body["tool_choice"] is None


@pytest.mark.anyio
async def test_generate_object_forced_tool_mode() -> None:
    request = llmroute.request(scripted_model(native_output_schema=False), prompt="Weather in Oslo?")
    answer = turn(ToolCall("o1", "Weather", {"city": "Oslo", "unit": "f"}), Finish("tool-calls"))
    result, transport = await _object([answer], request, Weather, name="Weather")
    assert result.value == Weather("Oslo", "f")
    body = sent(transport, 0)
    assert body["tool_choice"] == {"mode": "tool", "name": "Weather"}
    assert body["tools"][0]["input_schema"] == json_schema(Weather)
    assert body["output_schema"] is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("native", "answer", "needle", "raw"),
    [
        (True, _text("not json"), "not valid JSON", "not json"),
        (
            True,
            _text('{"city": 5}'),
            "does not match Weather: Expected `str`, got `int` - at `$.city`",
            '{"city": 5}',
        ),
        (
            False,
            turn(ToolCall("o1", "Weather", {"unit": "c"}), Finish("tool-calls")),
            "missing required field `city`",
            '{"unit":"c"}',
        ),
        (False, turn(ToolCall("o1", "Weather", "{bad"), Finish("tool-calls")), "not valid JSON", "{bad"),
        (False, _text("I cannot."), "did not call the Weather output tool", "I cannot."),
    ],
    ids=["native-not-json", "native-invalid", "tool-invalid", "tool-not-json", "tool-not-called"],
)
async def test_generate_object_invalid_output(
    native: bool, answer: Interaction, needle: str, raw: str
) -> None:
    request = llmroute.request(scripted_model(native_output_schema=native), prompt="Weather?")
    with pytest.raises(llmroute.InvalidProviderOutputError) as info:
        await _object([answer], request, Weather)
    assert needle in info.value.message
    assert info.value.raw == raw
    assert info.value.partial is not None


def _chat_sse(*contents: str) -> bytes:
    chunks = [
        {
            "id": "x",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}],
        }
        for c in contents
    ]
    chunks.append(
        {"id": "x", "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    body = b"".join(b"data: " + msgspec.json.encode(c) + b"\n\n" for c in chunks)
    return body + b"data: [DONE]\n\n"


@pytest.mark.anyio
async def test_generate_object_on_openai_chat_uses_response_format() -> None:
    model = openai.configure(api_key="sk-test").chat("gpt-4o-mini")
    interaction = Interaction(
        RecordedRequest("POST", "https://api.openai.com/v1/chat/completions", {}, b""),
        RecordedResponse(
            200, {"content-type": ["text/event-stream"]}, _chat_sse('{"city":', ' "Paris", "unit": null}')
        ),
    )
    result, transport = await _object([interaction], llmroute.request(model, prompt="Paris?"), Weather)
    assert result.value == Weather("Paris", "c")  # strict mode's null means "the default"
    body = sent(transport, 0)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "schema": strict_schema(json_schema(Weather)), "strict": True},
    }
    assert "tools" not in body


@pytest.mark.anyio
async def test_output_request_per_protocol() -> None:
    from llmroute.providers import anthropic, google

    prompt = "Weather in Oslo?"
    async with llmroute.Client() as client:
        responses = openai.configure(api_key="sk-test").responses("gpt-5")
        req, tool_name = output_request(llmroute.request(responses, prompt=prompt), Weather)
        body = msgspec.json.decode((await client.prepare(req)).body)
        assert tool_name is None
        assert body["text"]["format"] == {
            "type": "json_schema",
            "name": "Weather",
            "schema": strict_schema(json_schema(Weather)),
            "strict": True,
        }

        gemini = google.configure(api_key="test-key").gemini("gemini-2.5-flash")
        req, tool_name = output_request(llmroute.request(gemini, prompt=prompt), Weather)
        body = msgspec.json.decode((await client.prepare(req)).body)
        schema = body["generationConfig"]["responseSchema"]
        assert tool_name is None and schema["required"] == ["city"]  # plain: optional stays optional

        # Claude 4.5+: native structured outputs; older Claude: the protocol's own forced tool
        claude = anthropic.configure(api_key="sk-ant-test").messages("claude-sonnet-4-5")
        req, tool_name = output_request(llmroute.request(claude, prompt=prompt), Weather)
        body = msgspec.json.decode((await client.prepare(req)).body)
        assert tool_name is None and "tools" not in body
        assert body["output_config"]["format"] == {"type": "json_schema", "schema": json_schema(Weather)}
        older = anthropic.configure(api_key="sk-ant-test").messages("claude-3-5-haiku-latest")
        req, tool_name = output_request(llmroute.request(older, prompt=prompt), Weather)
        body = msgspec.json.decode((await client.prepare(req)).body)
        assert tool_name is None and "output_config" not in body
        assert body["tool_choice"] == {"type": "tool", "name": "Weather"}
        assert body["tools"][0]["name"] == "Weather"
        assert body["tools"][0]["input_schema"]["required"] == ["city"]
