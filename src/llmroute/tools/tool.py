"""``@llmroute.tool``: a Python function as a tool the model can call.

    class Weather(msgspec.Struct):
        city: str
        unit: Literal["c", "f"] = "c"

    @llmroute.tool(description="Get current weather for a city.")
    async def get_weather(args: Weather) -> dict[str, Any]: ...

The function takes either one msgspec Struct (or dataclass / TypedDict / pydantic ``BaseModel``)
parameter, or plain typed parameters (``async def add(a: int, b: int = 0)``), which become the fields of a generated Struct.
Sync functions run in a worker thread. The parameter type gives the JSON Schema sent to the
provider (``schema.json_schema``; ``strict=True`` sends the OpenAI strict projection) and validates
the model's input with ``msgspec.convert`` (pydantic's own validation for pydantic models).

A handler raising ``ToolFailure`` reports a failure the model can read and recover from; so, by
default, does any other exception (see ``tools.runtime``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Awaitable, Callable
from typing import Any, cast, overload

import anyio.to_thread
import msgspec

from ..schema.content import MediaPart, TextPart
from ..schema.errors import InvalidRequestError
from ..schema.tools import ToolDefinition
from ..schema.validate import check_tool_name
from .codec import ValidationFailed, convert, is_pydantic_model, schema_of, to_builtins
from .schema_projection import strict_schema

__all__ = ["InvalidToolInput", "Tool", "ToolFailure", "tool"]

_RAW_LIMIT = 500


class ToolFailure(Exception):
    """Raised by a handler: a recoverable failure. The model receives ``message`` as an error
    tool result (and a ``tool-error`` event is emitted)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidToolInput(ToolFailure):
    """The model's input does not validate against the tool's parameters."""


_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


class Tool:
    """A tool definition plus the handler that runs it. ``definition`` is what the provider sees.

    ``params`` is the type the input is validated into (``None``: the raw JSON value is passed,
    for dynamic tools such as MCP ones). ``handler`` ``None`` is a schema-only tool: the runtime
    advertises it but leaves its calls to the caller (the loop stops after that step)."""

    __slots__ = ("_call", "definition", "handler", "params")

    def __init__(
        self,
        definition: ToolDefinition,
        handler: Callable[..., Any] | None = None,
        params: Any = None,
        *,
        call: Callable[[Any], Awaitable[Any]] | None = None,
    ) -> None:
        self.definition = definition
        self.handler = handler
        self.params = params
        self._call = call if call is not None else (_make_call(handler, "single") if handler else None)

    @classmethod
    def dynamic(
        cls,
        name: str,
        input_schema: dict[str, Any],
        handler: Callable[[Any], Any] | None = None,
        *,
        description: str = "",
        strict: bool | None = None,
    ) -> Tool:
        """A tool with a hand-written JSON Schema; the handler gets the model's JSON value as is."""
        return cls(ToolDefinition(name, description, input_schema, strict), handler, None)

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def executable(self) -> bool:
        return self._call is not None

    def parse(self, input: Any) -> Any:
        """Validate the model's input into ``params``; raises ``InvalidToolInput`` naming the field."""
        if isinstance(input, str) and self.definition.kind != "custom":  # custom tools take free text
            raw = input if len(input) <= _RAW_LIMIT else input[:_RAW_LIMIT] + "..."
            raise InvalidToolInput(f"Invalid input for tool {self.name}: arguments are not valid JSON: {raw}")
        if self.params is None:
            return input
        try:
            return convert(input, self.params, strict_nulls=bool(self.definition.strict))
        except ValidationFailed as exc:
            raise InvalidToolInput(f"Invalid input for tool {self.name}: {exc.message}") from None

    async def invoke(self, args: Any) -> Any:
        """Run the handler on validated ``args``; returns the result value for the model."""
        if self._call is None:
            raise ToolFailure(f"Tool has no handler: {self.name}")
        return to_result(await self._call(args))

    async def __call__(self, input: Any) -> Any:
        """Validate and run: ``await get_weather({"city": "Paris"})``."""
        return await self.invoke(self.parse(input))

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


def to_result(value: Any) -> Any:
    """A handler's return value as a tool result: text, content parts, or plain JSON data."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, tuple | list) and value and all(isinstance(p, TextPart | MediaPart) for p in value):  # type: ignore[union-attr]
        return tuple(cast(list[TextPart | MediaPart], value))
    if isinstance(value, TextPart | MediaPart):
        return (value,)
    return to_builtins(value)


def _make_call(fn: Callable[..., Any], mode: str) -> Callable[[Any], Awaitable[Any]]:
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    def arguments(args: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if mode == "single":
            return (args,), {}
        if mode == "none":
            return (), {}
        return (), {f: getattr(args, f) for f in args.__struct_fields__}

    if is_async:

        async def call_async(args: Any) -> Any:
            a, kw = arguments(args)
            return await fn(*a, **kw)

        return call_async

    async def call_sync(args: Any) -> Any:
        a, kw = arguments(args)
        return await anyio.to_thread.run_sync(functools.partial(fn, *a, **kw), abandon_on_cancel=True)

    return call_sync


def _is_record(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    cls = cast(type[Any], tp)
    return (
        issubclass(cls, msgspec.Struct)
        or dataclasses.is_dataclass(cls)
        or typing.is_typeddict(cls)
        or is_pydantic_model(cls)
    )


def _caller_namespace(depth: int) -> dict[str, Any]:
    """The locals of the frame that applied ``@tool``: with postponed annotations a tool defined in
    a function names types local to it (pydantic resolves them the same way)."""
    frame = sys._getframe(depth + 1)  # pyright: ignore[reportPrivateUsage]
    try:
        return dict(frame.f_locals)
    finally:
        del frame


def _build(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    strict: bool | None,
    localns: dict[str, Any] | None = None,
) -> Tool:
    if not callable(fn):
        raise InvalidRequestError(
            f"llmroute.tool: expected a function, got {type(fn).__name__} {fn!r:.60}", param="fn"
        )
    if name is None:
        own = getattr(fn, "__name__", None)
        if not isinstance(own, str) or own == "<lambda>":
            what = "a lambda" if own == "<lambda>" else f"a {type(fn).__name__}"
            raise InvalidRequestError(
                f"name: {what} has no usable tool name; pass one: llmroute.tool(name='lookup')(fn)",
                param="name",
            )
        name = own
    tool_name = check_tool_name(name, "name")
    try:
        hints = typing.get_type_hints(fn, localns=localns, include_extras=True)
    except NameError as exc:
        raise InvalidRequestError(
            f"tool {tool_name}: cannot resolve a parameter annotation ({exc})", param="tools"
        ) from None
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(params) != len(inspect.signature(fn).parameters):
        raise InvalidRequestError(
            f"tool {tool_name}: *args / **kwargs parameters are not supported", param="tools"
        )
    mode: str
    if len(params) == 1 and _is_record(hints.get(params[0].name)):
        mode, params_type = "single", hints[params[0].name]
    elif not params:
        mode, params_type = "none", None
    else:
        mode = "kwargs"
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for p in params:
            annotation = hints.get(p.name, Any)
            fields.append((p.name, annotation) if p.default is p.empty else (p.name, annotation, p.default))
        params_type = msgspec.defstruct(f"{tool_name}_args", fields, kw_only=True)
    try:
        schema = schema_of(params_type) if params_type is not None else dict(_EMPTY_SCHEMA)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            f"tool {tool_name}: its parameters have no JSON Schema ({exc})".replace("\n", " "), param="tools"
        ) from None
    if strict:
        schema = strict_schema(schema)
    definition = ToolDefinition(
        tool_name,
        description if description is not None else (inspect.getdoc(fn) or ""),
        schema,
        True if strict else None,
    )
    if params_type is None:
        params_type = dict[str, Any]
    return Tool(definition, fn, params_type, call=_make_call(fn, mode))


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, strict: bool | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a ``Tool`` from a function: ``@tool`` or ``@tool(description=..., name=..., strict=...)``.
    The description defaults to the docstring; ``strict=True`` sends OpenAI's strict schema."""
    localns = _caller_namespace(1)
    if fn is not None:
        return _build(fn, name, description, strict, localns)
    if name is not None and not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(f"name: expected a str, got {type(name).__name__}", param="name")

    def decorate(f: Callable[..., Any]) -> Tool:
        return _build(f, name, description, strict, {**localns, **_caller_namespace(1)})

    return decorate
