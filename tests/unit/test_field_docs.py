"""Every field of every public msgspec Struct in llmroute is documented on the field, as an
attribute docstring (a string right under it, pydantic-ai ``ModelProfile`` style), so editors and
docs show it where it is used. A new field without one fails here.

Walked: every ``msgspec.Struct`` class an llmroute module defines by name, except private ones (a
leading underscore on the class or a module) and ``protocols/`` (wire shapes and quirk flags). A field inherited from
a base is documented where the base declares it."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
import textwrap

import msgspec
import pytest

import llmroute

# The JSON shape of an outside format, decoded as is: each field is that format's own (the class
# docstring names the format), so a docstring would only repeat its documentation.
WIRE_SHAPES = {
    "llmroute.catalog.sources.ModelsDevModel",  # https://models.dev/api.json
    "llmroute.server.dialects.openai_chat.ChatRequest",  # OpenAI POST /v1/chat/completions
    "llmroute.server.dialects.openai_responses.ResponsesRequest",  # OpenAI POST /v1/responses
}
# Modules that hold only an outside format's request shapes (each module's docstring names it).
WIRE_MODULES = {
    "llmroute.server.dialects.anthropic_messages.wire",  # Anthropic POST /v1/messages, /v1/messages/count_tokens
    "llmroute.server.dialects.gemini.wire",  # Gemini generateContent, streamGenerateContent, countTokens
}


def _public_structs() -> list[type[msgspec.Struct]]:
    for module in pkgutil.walk_packages(llmroute.__path__, "llmroute."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[msgspec.Struct]] = []
    todo: list[type[msgspec.Struct]] = [msgspec.Struct]
    while todo:
        for cls in todo.pop().__subclasses__():
            todo.append(cls)
            module = cls.__module__
            if (
                module.startswith("llmroute.")
                and not cls.__name__.startswith("_")
                and not any(part.startswith("_") for part in module.split("."))
                and not module.startswith("llmroute.protocols.")
                and f"{module}.{cls.__qualname__}" not in WIRE_SHAPES
                and module not in WIRE_MODULES
                and getattr(sys.modules[module], cls.__qualname__, None) is cls  # not a defstruct
                and cls not in found
            ):
                found.append(cls)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _documented(cls: type) -> dict[str, bool]:
    """Field name -> has an attribute docstring, for the fields ``cls``'s own body declares."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    out: dict[str, bool] = {}
    for node, after in zip(body.body, [*body.body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
                and bool(after.value.value.strip())
            )
    return out


def _undocumented(cls: type[msgspec.Struct]) -> list[str]:
    declared: dict[str, bool] = {}
    for base in reversed(cls.__mro__):  # the nearest declaration wins
        if isinstance(base, type) and issubclass(base, msgspec.Struct) and base is not msgspec.Struct:
            declared.update(_documented(base))
    return [name for name in cls.__struct_fields__ if not declared.get(name, False)]


STRUCTS = _public_structs()


def test_the_walk_finds_the_public_option_types() -> None:
    names = {c.__qualname__ for c in STRUCTS}
    expected = {
        "Timeouts",
        "RetryPolicy",
        "GenerationOptions",
        "LLMRequest",
        "Usage",
        "Target",
        "GatewayConfig",
    }
    assert expected <= names


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_field_has_an_attribute_docstring(cls: type[msgspec.Struct]) -> None:
    assert _undocumented(cls) == [], f"document each field with a string right under it: {cls.__qualname__}"


def test_a_missing_field_docstring_is_found() -> None:
    class Documented(msgspec.Struct):
        a: int
        """Documented."""
        b: int = 0

    class Child(Documented):
        c: int = 1
        """Documented."""

    assert _undocumented(Documented) == ["b"]
    assert _undocumented(Child) == ["b"]
