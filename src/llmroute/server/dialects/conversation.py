"""What every dialect's ``decode`` shares on the way to an ``LLMRequest``: one way to turn a bad body
into a typed error (``decode_body``), the conversation as it is read (``Conversation``), function
tools, tool choice, JSON-schema output and images. Each dialect keeps its own field names and error
paths.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from ...route.decoding import is_utf8
from ...schema.content import MediaPart, Message, Part, Role, TextPart, ToolCallPart, ToolResultPart
from ...schema.errors import InvalidRequestError
from ...schema.options import GenerationOptions
from ...schema.request import LLMRequest, ModelRef, OutputSchema
from ...schema.tools import ToolChoice, ToolDefinition

__all__ = [
    "Conversation",
    "arguments_json",
    "decode_body",
    "function_tool",
    "image_part",
    "output_format",
    "output_schema",
    "tool_choice",
]

_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}

T = TypeVar("T")


def decode_body(decoder: msgspec.json.Decoder[T], body: bytes) -> T:
    """Parse and validate; ``InvalidRequestError`` names the bad field (``$.messages[0].role``)."""
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise InvalidRequestError(f"invalid request: {exc}", code="invalid_request") from None
    except UnicodeDecodeError:  # msgspec < 0.23: a JSON string holding bytes that are not UTF-8
        raise _not_utf8() from None
    except msgspec.DecodeError:
        # msgspec >= 0.23 raises DecodeError for bad UTF-8 too; ask the bytes, not the message
        if not is_utf8(body):
            raise _not_utf8() from None
        raise InvalidRequestError(
            "invalid request: the body is not valid JSON", code="invalid_json"
        ) from None


def _not_utf8() -> InvalidRequestError:
    return InvalidRequestError(
        "invalid request: the body holds bytes that are not valid UTF-8", code="invalid_json"
    )


class Conversation:
    """A client's messages, in order, as the system prompt and canonical messages. Tool calls are
    remembered by id so a result that does not name its tool still gets the name."""

    def __init__(self, system: Iterable[TextPart] = (), *, field: str = "messages") -> None:
        """``field``: the request field the turns come from, named in an error (``input``)."""
        self.system: list[TextPart] = list(system)
        self.field = field
        self.messages: list[Message] = []
        self._names: dict[str, str] = {}  # tool call id -> tool name

    def instructions(self, parts: Iterable[Part]) -> None:
        """A system or developer message: before the first turn its text joins the system prompt;
        later it stays in place as a system message."""
        if self.messages:
            self.messages.append(Message("system", tuple(parts)))
        else:
            self.system.extend(p for p in parts if isinstance(p, TextPart))

    def add(self, role: Role, parts: tuple[Part, ...], *, merge: bool = False) -> None:
        """``merge``: join the previous message when it has the same role (sibling calls, outputs)."""
        if merge and self.messages and self.messages[-1].role == role:
            self.messages[-1] = Message(role, (*self.messages[-1].content, *parts))
        else:
            self.messages.append(Message(role, parts))

    def call(self, call_id: str, name: str, arguments: str | None, where: str) -> ToolCallPart:
        """A client-side function call; ``arguments`` is its JSON text (``where`` names it in errors)."""
        try:
            decoded: Any = msgspec.json.decode(arguments or "{}")
        except msgspec.DecodeError:
            raise InvalidRequestError(f"{where}: not valid JSON") from None
        self._names[call_id] = name
        return ToolCallPart(call_id, name, decoded)

    def result(self, call_id: str, output: str | tuple[Part, ...], name: str = "") -> None:
        """A function call's output; consecutive outputs are one tool message. The tool's name is the
        call's when the call came earlier, else ``name``."""
        self.add("tool", (ToolResultPart(call_id, self._names.get(call_id, name), output),), merge=True)

    def request(
        self,
        model: ModelRef,
        *,
        tools: Iterable[ToolDefinition],
        tool_choice: ToolChoice | None,
        generation: GenerationOptions,
        output_schema: OutputSchema | None,
        json_mode: bool = False,
    ) -> LLMRequest:
        if not self.messages:  # worded for an HTTP client (the library's says prompt=...)
            raise InvalidRequestError(
                f"{self.field}: the conversation is empty: send at least one user message "
                "(system or developer instructions alone are not a turn)",
                param=self.field,
            )
        return LLMRequest(
            model=model,
            system=tuple(self.system),
            messages=tuple(self.messages),
            tools=tuple(tools),
            tool_choice=tool_choice,
            generation=generation,
            output_schema=output_schema,
            json_mode=json_mode,
        )


def function_tool(
    name: str, description: str, parameters: dict[str, Any] | None, strict: bool | None
) -> ToolDefinition:
    """A client's function tool; no ``parameters`` means no arguments."""
    return ToolDefinition(name, description, parameters or _NO_PARAMETERS, strict)


def tool_choice(choice: str | None) -> ToolChoice | None:
    """``auto``, ``none`` or ``required`` (a named function is each shape's own)."""
    if choice is None:
        return None
    if choice not in ("auto", "none", "required"):
        raise InvalidRequestError(
            f"tool_choice: expected auto, none, required or a named function, got {choice!r}"
        )
    return ToolChoice.parse(choice)


def output_schema(
    name: str, schema: dict[str, Any], description: str | None, strict: bool | None
) -> OutputSchema:
    """A ``json_schema`` output format, strict unless the client says otherwise."""
    return OutputSchema(name, schema, description, True if strict is None else strict)


def output_format(kind: str, schema: OutputSchema | None, where: str) -> tuple[OutputSchema | None, bool]:
    """A client's output format as ``(output_schema, json_mode)``: ``text`` is neither,
    ``json_object`` is JSON mode, ``json_schema`` needs its schema (``where`` names it)."""
    if kind == "json_object":
        return None, True
    if kind == "json_schema" and schema is None:
        raise InvalidRequestError(f"{where}: json_schema needs a name and a schema", code="invalid_value")
    return schema, False


def image_part(url: str, where: str) -> MediaPart:
    """An image given by a ``data:`` URL (base64) or an http(s) URL (media type guessed from its path)."""
    if url.startswith("data:"):
        header, sep, data = url.partition(",")
        mime = header[5:].split(";", 1)[0]
        if not sep or not header.endswith(";base64") or not mime or not data:
            raise InvalidRequestError(f"{where}: a data URL must be data:<mime>;base64,<data>")
        return MediaPart(mime, data)
    if url.startswith(("http://", "https://")):
        guessed, _ = mimetypes.guess_type(url.split("?", 1)[0])
        return MediaPart(guessed if guessed and guessed.startswith("image/") else "image/jpeg", url)
    raise InvalidRequestError(f"{where}: an image must be an http(s) or data URL")


def arguments_json(arguments: Any) -> str:
    """A call's arguments as the JSON text both shapes send back (a string passes as it is)."""
    return arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()
