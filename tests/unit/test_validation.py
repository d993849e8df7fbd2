"""Bad input is an ``InvalidRequestError`` naming the argument, raised before any network I/O."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import compatible, openai


def _model(**kwargs: Any) -> llmroute.Model:
    return openai.configure(api_key="sk-test-0123456789abcdef", **kwargs).chat("gpt-4o-mini")


def _tool(name: str, schema: dict[str, Any] | None = None) -> llmroute.ToolDefinition:
    return llmroute.ToolDefinition(name, "a tool", schema or {"type": "object", "properties": {}})


# (id, call building the request, param, message fragment)
BAD_REQUESTS: list[tuple[str, Callable[[], Any], str, str]] = [
    ("prompt-int", lambda: llmroute.request(_model(), prompt=42), "prompt", "got int"),  # type: ignore[arg-type]
    ("prompt-item", lambda: llmroute.request(_model(), prompt=["hi", 3]), "prompt", "got int"),  # type: ignore[list-item]
    ("system-int", lambda: llmroute.request(_model(), system=1, prompt="hi"), "system", "got int"),  # type: ignore[arg-type]
    (
        "system-item",
        lambda: llmroute.request(_model(), system=["a", None], prompt="hi"),
        "system",
        "NoneType",
    ),  # type: ignore[list-item]
    (
        "generation-dict",
        lambda: llmroute.request(_model(), prompt="hi", generation={"max_tokens": 5}),  # type: ignore[arg-type]
        "generation",
        "GenerationOptions(**your_dict)",
    ),
    ("messages-str", lambda: llmroute.request(_model(), messages="hi"), "messages", "got str"),  # type: ignore[arg-type]
    (
        "messages-item-str",
        lambda: llmroute.request(_model(), messages=[llmroute.user("a"), "b"]),  # type: ignore[list-item]
        "messages[1]",
        "llmroute.user",
    ),
    ("tools-str", lambda: llmroute.request(_model(), prompt="hi", tools="get_weather"), "tools", "got str"),  # type: ignore[arg-type]
    ("tools-item", lambda: llmroute.request(_model(), prompt="hi", tools=[print]), "tools[0]", "not a tool"),  # type: ignore[list-item]
    ("model-str", lambda: llmroute.request("gpt-4o", prompt="hi"), "model", "not a string"),  # type: ignore[arg-type]
    (
        "model-prefixed",
        lambda: llmroute.request("openai:gpt-4o-mini", prompt="hi"),  # type: ignore[arg-type]
        "model",
        'openai.configure().chat("gpt-4o-mini")',
    ),
    (
        "model-prefixed-anthropic",
        lambda: llmroute.request("anthropic:claude-sonnet-4-5", prompt="hi"),  # type: ignore[arg-type]
        "model",
        'anthropic.configure().messages("claude-sonnet-4-5")',
    ),
    ("model-none", lambda: llmroute.request(None, prompt="hi"), "model", "NoneType"),  # type: ignore[arg-type]
    (
        "tool-name-space",
        lambda: llmroute.request(_model(), prompt="hi", tools=[_tool("get weather")]),
        "tools[0].name",
        "^[a-zA-Z0-9_-]{1,64}$",
    ),
    (
        "tool-name-long",
        lambda: llmroute.request(_model(), prompt="hi", tools=[_tool("x" * 65)]),
        "tools[0].name",
        "must match",
    ),
    (
        "tool-name-empty",
        lambda: llmroute.request(_model(), prompt="hi", tools=[_tool("")]),
        "tools[0].name",
        "''",
    ),
    (
        "tool-duplicate",
        lambda: llmroute.request(_model(), prompt="hi", tools=[_tool("a"), _tool("b"), _tool("a")]),
        "tools[2]",
        "duplicate tool name 'a'",
    ),
    (
        "tool-schema-unencodable",
        lambda: llmroute.request(
            _model(), prompt="hi", tools=[_tool("f", {"type": "object", "default": object()})]
        ),
        "tools[0].input_schema",
        "tool f: input schema cannot be encoded",
    ),
    (
        "tool-choice-bad-name",
        lambda: llmroute.request(_model(), prompt="hi", tool_choice="get weather"),
        "tool_choice",
        "must match",
    ),
    (
        "tool-choice-type",
        lambda: llmroute.request(_model(), prompt="hi", tool_choice=3),
        "tool_choice",
        "got int",
    ),  # type: ignore[arg-type]
    ("prompt-empty", lambda: llmroute.request(_model(), prompt=""), "prompt", "empty"),
    ("prompt-blank", lambda: llmroute.request(_model(), prompt=" \n\t"), "prompt", "only whitespace"),
    ("prompt-blank-list", lambda: llmroute.request(_model(), prompt=["", "  "]), "prompt", "empty"),
    (
        "user-message-blank",
        lambda: llmroute.request(_model(), messages=[llmroute.user("  ")]),
        "messages[0].content",
        "empty",
    ),
    ("empty-conversation", lambda: llmroute.request(_model(), system="Be brief."), "messages", "empty"),
    *[
        (
            f"max-tokens-{v!r}",
            (
                lambda v=v: llmroute.request(
                    _model(), prompt="hi", generation=llmroute.GenerationOptions(max_tokens=v)
                )
            ),
            "generation.max_tokens",
            "must be",
        )
        for v in (0, -5, 1.5, True)
    ],
    *[
        (
            f"temperature-{v!r}",
            (
                lambda v=v: llmroute.request(
                    _model(), prompt="hi", generation=llmroute.GenerationOptions(temperature=v)
                )
            ),
            "generation.temperature",
            "between 0 and 2",
        )
        for v in (-0.1, 2.5, math.nan, math.inf)
    ],
    *[
        (
            f"top-p-{v!r}",
            (
                lambda v=v: llmroute.request(
                    _model(), prompt="hi", generation=llmroute.GenerationOptions(top_p=v)
                )
            ),
            "generation.top_p",
            "between 0 and 1",
        )
        for v in (1.01, -1.0, math.nan)
    ],
]


def _self_referential_schema() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["child"] = schema
    return schema


# Bad input that raised a bare exception (UnicodeEncodeError, RecursionError, TypeError) at prepare.
BAD_REQUESTS += [
    (
        "prompt-lone-surrogate",
        lambda: llmroute.request(_model(), prompt="caf\udce9 au lait"),
        "messages[0].content[0].text",
        "lone surrogate U+DCE9 at index 3",
    ),
    (
        "system-lone-surrogate",
        lambda: llmroute.request(_model(), system="be \ud83d brief", prompt="hi"),
        "system[0].text",
        "lone surrogate U+D83D",
    ),
    (
        "tool-schema-self-referential",
        lambda: llmroute.request(_model(), prompt="hi", tools=[_tool("tree", _self_referential_schema())]),
        "tools[0].input_schema",
        "tool tree: input schema cannot be encoded as JSON (it contains itself)",
    ),
    (
        "provider-options-int-key",
        lambda: llmroute.request(_model(), prompt="hi", provider_options={"openai": {1: "x"}}),  # type: ignore[dict-item]
        "provider_options['openai']",
        "option names must be strings, got int",
    ),
    (
        "provider-options-namespace-int",
        lambda: llmroute.request(_model(), prompt="hi", provider_options={2: {}}),  # type: ignore[dict-item]
        "provider_options",
        "namespaces must be strings",
    ),
    (
        "provider-options-unserialisable",
        lambda: llmroute.request(_model(), prompt="hi", provider_options={"openai": {"user": object()}}),
        "provider_options['openai']['user']",
        "cannot be encoded as JSON",
    ),
    (
        "model-option-unserialisable",
        lambda: openai.configure(api_key="k").chat("m", metadata={"a": object()}),
        "metadata",
        "openai: option 'metadata' cannot be encoded as JSON",
    ),
]


@pytest.mark.parametrize(
    ("build", "param", "fragment"), [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS]
)
def test_bad_request_arguments(build: Callable[[], Any], param: str, fragment: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as err:
        build()
    assert err.value.param == param
    assert str(err.value).startswith(f"{param}: ")
    assert fragment in str(err.value)


def test_good_edges_pass() -> None:
    request = llmroute.request(
        _model(),
        prompt="hi",
        tools=[_tool("a-b_C9"), _tool("x" * 64)],
        tool_choice="later_tool",  # may name a tool the runtime adds at stream(tools=...)
        generation=llmroute.GenerationOptions(max_tokens=1, temperature=0, top_p=1.0),
    )
    assert len(request.tools) == 2


def _sending_client(sent: list[httpx.Request]) -> llmroute.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    return llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def _replace(**changes: Any) -> llmroute.LLMRequest:
    return msgspec.structs.replace(llmroute.request(_model(), prompt="hi"), **changes)


# Requests built around llmroute.request() (msgspec.structs.replace, LLMRequest(...)) are checked
# again by prepare(), on every call and tool-loop step.
BAD_PREPARED: list[tuple[str, Callable[[], llmroute.LLMRequest], str, str]] = [
    (
        "tool-choice-absent",
        lambda: _replace(tools=(_tool("a"),), tool_choice=llmroute.ToolChoice.named("b")),
        "tool_choice",
        "'b', which is not among the tools (a)",
    ),
    ("messages-empty", lambda: _replace(messages=()), "messages", "empty"),
    (
        "user-message-blank",
        lambda: _replace(messages=(llmroute.Message("user", (llmroute.TextPart(""),)),)),
        "messages[0].content",
        "empty",
    ),
    (
        "part-wrong",
        lambda: _replace(messages=(llmroute.Message("user", ("hi",)),)),
        "messages[0].content[0]",
        "got str",
    ),  # type: ignore[arg-type]
    (
        "generation-nan",
        lambda: _replace(generation=llmroute.GenerationOptions(temperature=math.nan)),
        "generation.temperature",
        "nan",
    ),
    ("model-str", lambda: _replace(model="gpt-4o"), "model", "not a string"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("build", "param", "fragment"), [b[1:] for b in BAD_PREPARED], ids=[b[0] for b in BAD_PREPARED]
)
async def test_prepare_rejects_before_sending(
    build: Callable[[], llmroute.LLMRequest], param: str, fragment: str
) -> None:
    sent: list[httpx.Request] = []
    async with _sending_client(sent) as client:
        with pytest.raises(llmroute.InvalidRequestError) as err:
            await client.prepare(build())
        assert err.value.param == param and fragment in str(err.value)
        with pytest.raises(llmroute.InvalidRequestError):
            await client.generate(build())
        with pytest.raises(llmroute.InvalidRequestError):
            async for _ in client.stream(build()):
                pass
    assert sent == []


@pytest.mark.parametrize(
    ("build", "param", "fragment"),
    [
        (lambda: openai.configure(api_key=""), "api_key", "openai: api_key is empty or whitespace"),
        (lambda: openai.configure(api_key="  \n"), "api_key", "leave api_key out"),
        (lambda: compatible.configure("groq", api_key=" "), "api_key", "GROQ_API_KEY"),
        (lambda: openai.configure(api_key="k", base_url="api.openai.com/v1"), "base_url", "http(s) URL"),
        (lambda: compatible.configure(base_url="ftp://host/v1"), "base_url", "ftp://host/v1"),
        (lambda: compatible.configure(base_url="localhost:8080/v1"), "base_url", "http(s) URL"),
    ],
)
def test_configure_refuses_a_blank_key_and_a_base_url_without_scheme(
    build: Callable[[], Any], param: str, fragment: str
) -> None:
    """Refused when configured, not at the first call."""
    with pytest.raises(llmroute.InvalidRequestError) as err:
        build()
    assert err.value.param == param and fragment in str(err.value)


@pytest.mark.anyio
async def test_a_value_in_the_history_without_json_form_is_typed() -> None:
    call = llmroute.ToolCallPart("call_1", "f", {"text": "\udc80"})
    history = [llmroute.user("hi"), llmroute.Message("assistant", (call,))]
    request = llmroute.request(_model(), messages=history)
    with pytest.raises(llmroute.InvalidRequestError, match="cannot be encoded as JSON") as err:
        await llmroute.Client().prepare(request)
    assert err.value.param == "messages"


@pytest.mark.anyio
async def test_api_key_whitespace_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    request = llmroute.request(openai.configure(api_key=" sk-test-0123456789abcdef\n").chat("m"), prompt="hi")
    prepared = await llmroute.Client().prepare(request)
    assert prepared.headers["authorization"] == "Bearer sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", "  sk-env-0123456789abcdef  ")
    prepared = await llmroute.Client().prepare(llmroute.request(openai.configure().chat("m"), prompt="hi"))
    assert prepared.headers["authorization"] == "Bearer sk-env-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", "   ")
    with pytest.raises(llmroute.AuthenticationError, match="OPENAI_API_KEY is set but blank"):
        await llmroute.Client().prepare(llmroute.request(openai.configure().chat("m"), prompt="hi"))


def test_tool_decorator_rejects_bad_names_and_schemas() -> None:
    class Opaque:
        pass

    with pytest.raises(llmroute.InvalidRequestError, match="must match") as err:
        llmroute.tool(name="no spaces")(lambda: "x")
    assert err.value.param == "name"

    def uses_opaque(thing: Opaque) -> str:
        return ""

    with pytest.raises(
        llmroute.InvalidRequestError, match="tool uses_opaque: its parameters have no JSON Schema"
    ):
        llmroute.tool(uses_opaque)


@pytest.mark.parametrize(
    ("build", "param", "fragment"),
    [
        (lambda: llmroute.Client(timeouts=5), "timeouts", "Timeouts(total=5)"),  # type: ignore[arg-type]
        (lambda: llmroute.Client(retry=3), "retry", "RetryPolicy"),  # type: ignore[arg-type]
        (lambda: llmroute.Client(http="x"), "http", "httpx.AsyncClient"),  # type: ignore[arg-type]
        (lambda: llmroute.Client(max_error_bytes=-1), "max_error_bytes", "at least 0"),
        (lambda: llmroute.Client(max_response_bytes=0), "max_response_bytes", "at least 1"),
        (lambda: llmroute.Client(max_connections="9"), "max_connections", "'9'"),  # type: ignore[arg-type]
        (lambda: llmroute.Client(sleep=1), "sleep", "async function"),  # type: ignore[arg-type]
        (lambda: llmroute.Client().context(timeouts=5), "timeouts", "Timeouts"),  # type: ignore[arg-type]
        (lambda: llmroute.Timeouts(total=-1), "Timeouts.total", "> 0"),
        (lambda: llmroute.Timeouts(connect=0), "Timeouts.connect", "> 0"),
        (lambda: llmroute.Timeouts(idle=math.nan), "Timeouts.idle", "nan"),
        (lambda: llmroute.Timeouts(first_byte="5"), "Timeouts.first_byte", "'5'"),  # type: ignore[arg-type]
        (lambda: llmroute.Timeouts().replace(pool=-2), "Timeouts.pool", "-2"),
        (lambda: llmroute.RetryPolicy(max_retries=-1), "RetryPolicy.max_retries", ">= 0"),
        (lambda: llmroute.RetryPolicy(max_retries=1.5), "RetryPolicy.max_retries", "int"),  # type: ignore[arg-type]
        (lambda: llmroute.RetryPolicy(initial_backoff=-1), "RetryPolicy.initial_backoff", ">= 0"),
        (lambda: llmroute.RetryPolicy(multiplier=0.5), "RetryPolicy.multiplier", ">= 1"),
        (lambda: llmroute.RetryPolicy(jitter=2), "RetryPolicy.jitter", "between 0 and 1"),
        (lambda: llmroute.RetryPolicy(statuses={"429"}), "RetryPolicy.statuses", "ints"),  # type: ignore[arg-type]
    ],
)
def test_client_and_policy_arguments_checked_at_construction(
    build: Callable[[], Any], param: str, fragment: str
) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as err:
        build()
    assert err.value.param == param and fragment in str(err.value)


def test_policy_edges_pass() -> None:
    llmroute.Timeouts(connect=0.05, total=None, pool=0.2)
    llmroute.RetryPolicy(max_retries=0, initial_backoff=0, jitter=0.0, multiplier=1)
    llmroute.Client(max_connections=1, max_response_bytes=1, max_error_bytes=0)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.generate("Hello"),
        lambda c: c.stream({"model": "gpt-4o", "prompt": "Hello"}).response(),
        lambda c: c.prepare("Hello"),
        lambda c: c.count_tokens("Hello"),
        lambda c: c.check_context("Hello"),
    ],
)
async def test_a_prompt_where_the_request_goes_is_a_typed_error(call: Callable[[Any], Any]) -> None:
    """The common first mistake (``client.generate("Hello")``) names the request, not ``.model``."""
    sent: list[httpx.Request] = []
    async with _sending_client(sent) as client:
        with pytest.raises(llmroute.InvalidRequestError) as err:
            await call(client)
    assert err.value.param == "request" and "llmroute.request(model, prompt=...)" in str(err.value)
    assert sent == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("call", "param", "fragment"),
    [
        (lambda c: c.generate_object(llmroute.request(_model(), prompt="hi"), 5), "schema", "got int 5"),
        (lambda c: c.generate_object(llmroute.request(_model(), prompt="hi"), "Foo"), "schema", "got str"),
        (lambda c: c.generate_object(5, dict), "request", "llmroute.request"),
        (
            lambda c: c.generate_object(llmroute.request(_model(), prompt="hi"), dict, mode="json"),
            "mode",
            "'json'",
        ),
    ],
)
async def test_generate_object_arguments(call: Callable[[Any], Any], param: str, fragment: str) -> None:
    sent: list[httpx.Request] = []
    async with _sending_client(sent) as client:
        with pytest.raises(llmroute.InvalidRequestError) as err:
            await call(client)
    assert err.value.param == param and fragment in str(err.value)
    assert sent == []


def test_tool_arguments() -> None:
    with pytest.raises(llmroute.InvalidRequestError, match="expected a function, got int") as err:
        llmroute.tool(5)  # type: ignore[call-overload]
    assert err.value.param == "fn"
    with pytest.raises(llmroute.InvalidRequestError, match="expected a function"):
        llmroute.tool(name="ok")(5)  # type: ignore[arg-type]
    with pytest.raises(llmroute.InvalidRequestError, match=r"a lambda .*\(name=") as err:
        llmroute.tool(lambda city: city)
    assert err.value.param == "name"
    assert llmroute.tool(name="echo")(lambda city: city).definition.name == "echo"


def test_chat_with_a_transport_says_it_is_a_responses_option() -> None:
    """``transport="websocket"`` on ``.chat`` was sent as a body field over HTTP."""
    with pytest.raises(llmroute.InvalidRequestError, match=r"\.responses\(") as err:
        openai.configure(api_key="k").chat("gpt-4o", transport="websocket")
    assert err.value.param == "transport"
    with pytest.raises(llmroute.InvalidRequestError, match="unknown transport 'ws'"):
        openai.configure(api_key="k").responses("gpt-4o", transport="ws")  # type: ignore[arg-type]
