"""The option matrix (issue #21): every option of the request schema, on every protocol and facade
variant, is lowered (the prepared request changes), or not sent with a ``RequestWarning`` naming it,
or refused with an ``InvalidRequestError`` naming it. Nothing is dropped without a word.

The cases are generated from the schema's own fields (``msgspec.structs.fields``), so a field added
to ``GenerationOptions``, ``CachePolicy``, ``HttpOverlay`` or ``ToolDefinition`` is covered without
anyone remembering; a new ``LLMRequest`` field or ``Part`` type fails ``test_every_field_has_a_case``
until it gets one. ``route/support.py`` holds the tables this checks.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest

from llmroute import client_tools, hosted
from llmroute.providers import (
    anthropic,
    azure,
    bedrock,
    compatible,
    glm,
    google,
    openai,
    openrouter,
    vertex,
    xai,
)
from llmroute.route.compiler import prepare
from llmroute.route.model import Model
from llmroute.schema.content import (
    ApprovalRequestPart,
    ApprovalResponsePart,
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from llmroute.schema.errors import InvalidRequestError
from llmroute.schema.options import CachePolicy, GenerationOptions, HttpOverlay
from llmroute.schema.request import LLMRequest, OutputSchema
from llmroute.schema.tools import ToolChoice, ToolDefinition

KEY = "test-key-0000"

# Every protocol and facade variant a user can reach, by the facades' own constructors.
VARIANTS: dict[str, Callable[[], Model]] = {
    "openai-chat": lambda: openai.configure(api_key=KEY).chat("gpt-4.1"),
    "openai-chat-reasoning": lambda: openai.configure(api_key=KEY).chat("o4-mini"),
    "openai-responses": lambda: openai.configure(api_key=KEY).responses("gpt-5"),
    "azure-chat": lambda: azure.configure("res", api_key=KEY, api_version="2025-04-01-preview").chat("dep"),
    "azure-responses": lambda: azure.configure(
        "res", api_key=KEY, api_version="2025-04-01-preview"
    ).responses("dep"),
    "anthropic": lambda: anthropic.configure(api_key=KEY).messages("claude-sonnet-4-5"),
    "anthropic-legacy": lambda: anthropic.configure(api_key=KEY).messages("claude-3-5-haiku-latest"),
    "gemini": lambda: google.configure(api_key=KEY).gemini("gemini-2.5-flash"),
    "gemini-code-assist": lambda: google.code_assist(access_token=KEY, project="p").gemini("gemini-2.5-pro"),
    "vertex-gemini": lambda: vertex.configure(project="p", location="us-central1", access_token=KEY).gemini(
        "gemini-2.5-flash"
    ),
    "bedrock-converse": lambda: bedrock.configure("us-east-1", api_key=KEY).converse(
        "us.amazon.nova-pro-v1:0"
    ),
    "bedrock-converse-claude": lambda: bedrock.configure("us-east-1", api_key=KEY).converse(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    ),
    "bedrock-anthropic": lambda: bedrock.configure("us-east-1", api_key=KEY).anthropic(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    ),
    "openrouter-chat": lambda: openrouter.configure(api_key=KEY).chat("openai/gpt-4.1"),
    "openrouter-responses": lambda: openrouter.configure(api_key=KEY).responses("openai/gpt-4.1"),
    "xai-chat": lambda: xai.configure(api_key=KEY).chat("grok-4"),
    "xai-responses": lambda: xai.configure(api_key=KEY).responses("grok-4"),
    "glm-chat": lambda: glm.configure(api_key=KEY).chat("glm-4.6"),
    **{
        f"compatible-{name}": (lambda name=name: compatible.configure(name, api_key=KEY).chat("m"))
        for name in sorted(compatible.FAMILIES)
        if name not in ("xai", "openrouter")  # their own facades, above
    },
}

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
FUNCTION = ToolDefinition("lookup", "Look a city up.", SCHEMA)


def _base(model: Model, **changes: Any) -> LLMRequest:
    """A request rich enough that every option has something to act on: a system prompt, a tool,
    and four messages (so cache breakpoints over the last N messages move)."""
    request = LLMRequest(
        model=model,
        system=(TextPart("Be brief."),),
        messages=(
            Message("user", (TextPart("one"),)),
            Message("assistant", (TextPart("two"),)),
            Message("user", (TextPart("three"),)),
            Message("assistant", (TextPart("four"),)),
            Message("user", (TextPart("five"),)),
        ),
        tools=(FUNCTION,),
        generation=GenerationOptions(),
    )
    return msgspec.structs.replace(request, **changes)


# -- values from types: a non-default value for any field, read from the schema ---------------------


def _sample(info: msgspec.inspect.Type, default: Any) -> Any:
    """A value of the field's type that differs from its default."""
    if isinstance(info, msgspec.inspect.UnionType):
        for member in info.types:
            if not isinstance(member, msgspec.inspect.NoneType):
                return _sample(member, default)
    if isinstance(info, msgspec.inspect.BoolType):
        return not default if isinstance(default, bool) else False
    if isinstance(info, msgspec.inspect.IntType):
        return default - 1 if isinstance(default, int) and default > 1 else 7
    if isinstance(info, msgspec.inspect.FloatType):
        return 0.25
    if isinstance(info, msgspec.inspect.StrType):
        return "changed"
    if isinstance(info, msgspec.inspect.LiteralType):
        return next(v for v in reversed(info.values) if v != default)
    if isinstance(info, msgspec.inspect.VarTupleType | msgspec.inspect.ListType):
        return (_sample(info.item_type, None),)
    if isinstance(info, msgspec.inspect.DictType):
        return {"x_matrix_probe": "1"}
    if isinstance(info, msgspec.inspect.AnyType):
        return {"x_matrix_probe": 1}
    raise AssertionError(f"no sample value for {info!r}: teach _sample this type")


def _field_samples(struct: type[msgspec.Struct]) -> dict[str, Any]:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    out: dict[str, Any] = {}
    for field in info.fields:
        default = field.default if field.default is not msgspec.NODEFAULT else None
        out[field.name] = _sample(field.type, default)
    return out


# -- the cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    option: str  # the path a warning or an error must name
    change: Callable[[LLMRequest], LLMRequest]  # the rich base request -> with the option
    base: Callable[[LLMRequest], LLMRequest] = lambda r: r  # ... -> what to compare with
    names: tuple[str, ...] = ()  # other words an error may name the option by


def _replace(**changes: Any) -> Callable[[LLMRequest], LLMRequest]:
    return lambda r: msgspec.structs.replace(r, **changes)


def _generation_cases() -> list[Case]:
    return [
        Case(f"generation.{name}", _replace(generation=GenerationOptions(**{name: value})), names=(name,))
        for name, value in _field_samples(GenerationOptions).items()
    ]


def _cache_cases() -> list[Case]:
    with_cache = _replace(cache=CachePolicy())
    cases = [Case("cache", with_cache)]
    for name, value in _field_samples(CachePolicy).items():
        cases.append(Case(f"cache.{name}", _replace(cache=CachePolicy(**{name: value})), base=with_cache))
    return cases


def _http_cases() -> list[Case]:
    return [
        Case(f"http.{name}", _replace(http=HttpOverlay(**{name: value})))
        for name, value in _field_samples(HttpOverlay).items()
    ]


_TOOL_FIELD_VALUES: dict[str, Any] = {
    # fields whose sample must be a meaningful value, not just a different one
    "input_schema": {"type": "object", "properties": {"zip": {"type": "string"}}},
    "kind": "custom",
    "options": {"format": {"type": "text"}},
}


def _tool_cases() -> list[Case]:
    cases: list[Case] = [Case("tools", _replace(tools=(FUNCTION,)), base=_replace(tools=()))]
    samples = _field_samples(ToolDefinition) | _TOOL_FIELD_VALUES
    for name, value in samples.items():
        tool = msgspec.structs.replace(FUNCTION, **{name: value})
        if name == "options":
            tool = msgspec.structs.replace(tool, kind="custom")
            base_tool = msgspec.structs.replace(FUNCTION, kind="custom")
            cases.append(
                Case(
                    f"tools.{name}",
                    _replace(tools=(tool,)),
                    base=_replace(tools=(base_tool,)),
                    names=("custom",),
                )
            )
            continue
        cases.append(Case(f"tools.{name}", _replace(tools=(tool,)), names=(str(value),)))
    return cases


def _hosted_cases() -> list[Case]:
    made = [
        hosted.web_search(),
        hosted.web_fetch(),
        hosted.url_context(),
        hosted.code_execution(),
        hosted.file_search(vector_store_ids=["vs_1"]),
        hosted.image_generation(),
        hosted.mcp(server_label="docs", server_url="https://mcp.example.invalid/sse"),
        hosted.shell(),
        hosted.x_search(),
    ]
    constructors = {n for n in hosted.__all__ if n.islower() and n not in ("search_result",)}
    assert {t.kind for t in made} == constructors, "a hosted tool constructor has no matrix case"
    return [Case(f"hosted.{t.kind}", _replace(tools=(FUNCTION, t)), names=(repr(t.kind),)) for t in made]


def _client_tool_cases() -> list[Case]:
    made: list[ToolDefinition] = [
        client_tools.custom("freeform", "Free text."),
        client_tools.shell(),
        client_tools.local_shell(),
        client_tools.apply_patch(),
        client_tools.computer_use(display_width=1024, display_height=768),
        client_tools.tool_search(),
    ]
    return [
        Case(f"client_tools.{t.kind}", _replace(tools=(FUNCTION, t)), names=(repr(t.kind),)) for t in made
    ]


def _choice_cases() -> list[Case]:
    info = msgspec.inspect.type_info(ToolChoice)
    assert isinstance(info, msgspec.inspect.StructType)
    mode_type = info.fields[0].type
    assert isinstance(mode_type, msgspec.inspect.LiteralType)
    cases: list[Case] = []
    for mode in mode_type.values:
        choice = ToolChoice.named("lookup") if mode == "tool" else ToolChoice(mode)
        # "auto" is what an unset choice means: it is compared with "required" instead
        base = _replace(tool_choice=ToolChoice("required")) if mode == "auto" else (lambda r: r)
        cases.append(Case(f"tool_choice.{mode}", _replace(tool_choice=choice), base=base, names=(mode,)))
    return cases


def _in_user(part: Part) -> tuple[Callable[[LLMRequest], LLMRequest], Callable[[LLMRequest], LLMRequest]]:
    """(change, base): the last user message with ``part``, and without it."""

    def with_(*parts: Part) -> Callable[[LLMRequest], LLMRequest]:
        return lambda r: msgspec.structs.replace(
            r, messages=(*r.messages[:-1], Message("user", (TextPart("look:"), *parts)))
        )

    return with_(part), with_()


def _in_assistant(
    *parts: Part,
    then: Message | None = None,
    base_then: Message | None = None,
    base_parts: tuple[Part, ...] = (),
) -> tuple[Callable[[LLMRequest], LLMRequest], Callable[[LLMRequest], LLMRequest]]:
    """(change, base): one more assistant turn holding ``parts`` (and ``base_parts``)."""

    def with_(parts: tuple[Part, ...], then: Message | None) -> Callable[[LLMRequest], LLMRequest]:
        tail = (then,) if then is not None else ()
        return lambda r: msgspec.structs.replace(
            r, messages=(*r.messages, Message("assistant", (*parts, TextPart("ok"))), *tail, r.messages[-1])
        )

    return with_(parts, then), with_(base_parts, base_then)


def _part_case(option: str, pair: tuple[Any, Any], names: tuple[str, ...] = ()) -> Case:
    change, base = pair
    return Case(option, change, base=base, names=names)


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
CALL = ToolCallPart("call_1", "lookup", {"city": "Oslo"})
RESULT = Message("tool", (ToolResultPart("call_1", "lookup", "sunny"),))
PART_CASES: dict[type, list[Case]] = {
    TextPart: [_part_case("parts.text", _in_user(TextPart("more")))],
    MediaPart: [
        _part_case(
            f"parts.media.{mime}", _in_user(MediaPart(mime, data)), (mime, mime.split("/")[0], "MediaPart")
        )
        for mime, data in (
            ("image/png", PNG),
            ("image/png", "https://example.invalid/cat.png"),
            ("application/pdf", b"%PDF-1.4 test"),
            ("text/plain", b"plain words"),
            ("audio/wav", b"RIFF0000WAVEfmt "),
            ("video/mp4", b"\x00\x00\x00\x18ftypmp42"),
        )
    ],
    ReasoningPart: [
        _part_case(
            "parts.reasoning", _in_assistant(ReasoningPart("thinking", signature="sig")), ("Reasoning",)
        ),
        _part_case("parts.reasoning", _in_assistant(ReasoningPart("thinking")), ("Reasoning",)),
    ],
    ToolCallPart: [
        _part_case("parts.tool-call", _in_assistant(CALL, then=RESULT)),
        # a hosted call another provider ran, with its result, in the assistant turn
        _part_case(
            "parts.tool-call",
            _in_assistant(
                ToolCallPart("srv_1", "web_search", {"query": "oslo"}, provider_executed=True),
                ToolResultPart("srv_1", "web_search", {"sources": [], "queries": []}, provider_executed=True),
            ),
        ),
    ],
    ToolResultPart: [
        _part_case(
            "parts.tool-result",
            _in_assistant(
                CALL,
                then=Message(
                    "tool", (ToolResultPart("call_1", "lookup", {"forecast": "sunny"}, is_error=True),)
                ),
                base_parts=(CALL,),
                base_then=RESULT,
            ),
        )
    ],
    ApprovalRequestPart: [
        _part_case(
            "parts.approval-request",
            _in_assistant(ApprovalRequestPart("apr_1", "lookup", {"city": "Oslo"})),
            ("ApprovalRequestPart", "approval"),
        )
    ],
    ApprovalResponsePart: [
        _part_case(
            "parts.approval-response",
            _in_user(ApprovalResponsePart("apr_1", True)),
            ("ApprovalResponsePart", "approval"),
        )
    ],
}

OUTPUT = OutputSchema("answer", SCHEMA)

# One entry per ``LLMRequest`` field: its cases, or why it has none.
REQUEST_CASES: dict[str, list[Case] | str] = {
    "model": "the route itself: every case runs on every model",
    "system": [Case("system", _replace(system=(TextPart("Be brief."),)), base=_replace(system=()))],
    "messages": [case for cases in PART_CASES.values() for case in cases],
    "tools": _tool_cases() + _hosted_cases() + _client_tool_cases(),
    "tool_choice": _choice_cases(),
    "generation": _generation_cases(),
    "provider_options": [],  # per model below: the namespace is the model's provider
    "http": _http_cases(),
    "cache": _cache_cases(),
    "output_schema": [
        Case("output_schema", _replace(output_schema=OUTPUT)),
        *(
            Case(
                f"output_schema.{name}",
                _replace(output_schema=msgspec.structs.replace(OUTPUT, **{name: value})),
                base=_replace(output_schema=OUTPUT),
            )
            for name, value in (_field_samples(OutputSchema) | {"schema": {**SCHEMA, "required": []}}).items()
            if name != "name"  # the format's identifier: see test_output_schema_name
        ),
    ],
    "metadata": "the caller's own notes, never sent (test_metadata_is_never_sent)",
    "tool_handlers": "the handlers of tools[...], run by the tool loop, never sent (their definitions are)",
    "json_mode": [Case("json_mode", _replace(json_mode=True))],
    "session": "a router's pin key, and the provider's affinity hint where it has one "
    "(tests/unit/test_cache_lowering.py)",
}


def _provider_option_case(model: Model) -> Case:
    return Case(
        "provider_options",
        lambda r: msgspec.structs.replace(r, provider_options={model.provider: {"x_matrix_probe": 1}}),
    )


def test_every_field_has_a_case() -> None:
    """A new request field or part type fails here until the matrix covers it."""
    assert set(REQUEST_CASES) == {f.name for f in msgspec.structs.fields(LLMRequest)}
    assert set(PART_CASES) == set(typing.get_args(Part))


def _all_cases() -> list[Case]:
    return [case for cases in REQUEST_CASES.values() if isinstance(cases, list) for case in cases]


def _prepared(request: LLMRequest) -> Any:
    return asyncio.run(prepare(request))


def _snapshot(prepared: Any) -> tuple[Any, ...]:
    return (prepared.url, sorted(prepared.headers.items()), prepared.json())


def _outcome(model: Model, case: Case) -> str:
    """``lowered`` / ``warned`` / ``refused``; an assertion error when none of them."""
    plain = _base(model)
    try:
        base = _snapshot(_prepared(case.base(plain)))
    except InvalidRequestError:  # the base's own option is refused here (a custom tool's options)
        with pytest.raises(InvalidRequestError):
            _prepared(case.change(plain))
        return "refused"
    try:
        prepared = _prepared(case.change(plain))
    except InvalidRequestError as exc:
        message = str(exc)
        words = (case.option, case.option.split(".")[-1], *case.names)
        assert any(w in message for w in words), f"{case.option} refused without naming it: {message}"
        return "refused"
    root = case.option.split(".")[0]
    named = [
        w
        for w in prepared.warnings
        if w.option.split("[")[0].split(".")[0] in (root, case.option.split(".")[0])
    ]
    warned = [w for w in named if case.option.split(".")[-1] in w.option or w.option == root]
    if warned:
        return "warned"
    assert _snapshot(prepared) != base, (
        f"{model.route.name}: {case.option} was neither sent, nor warned about, nor refused"
    )
    return "lowered"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_option_is_lowered_warned_or_refused(variant: str) -> None:
    model = VARIANTS[variant]()
    failures: list[str] = []
    for case in [*_all_cases(), _provider_option_case(model)]:
        try:
            _outcome(model, case)
        except AssertionError as exc:
            failures.append(str(exc).split("\n")[0])
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_metadata_is_never_sent(variant: str) -> None:
    model = VARIANTS[variant]()
    base = _snapshot(_prepared(_base(model)))
    assert _snapshot(_prepared(_base(model, metadata={"trace": "x_matrix_probe"}))) == base


# JSON-schema modes with no name beside the schema: the name only identifies the format there
# (OpenAI requires one; it names the forced tool), so it has nothing to change.
UNNAMED = {"gemini", "gemini-code-assist", "vertex-gemini", "anthropic", "bedrock-anthropic"}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_output_schema_name(variant: str) -> None:
    model = VARIANTS[variant]()
    base = _snapshot(_prepared(_base(model, output_schema=OUTPUT)))
    renamed = _snapshot(
        _prepared(_base(model, output_schema=msgspec.structs.replace(OUTPUT, name="renamed")))
    )
    assert (renamed == base) is (variant in UNNAMED)
