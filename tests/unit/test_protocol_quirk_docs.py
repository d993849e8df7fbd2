"""The declared quirks and flags of protocols/ (``ChatQuirks``, ``ResponsesQuirks``, every frozen
Struct a protocol module defines by name) are documented on each field, as ``test_field_docs``
asks of the rest of llmroute; the wire shapes, which repeat a provider's own format, are not."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import msgspec
import pytest

import llmroute.protocols
from tests.unit.test_field_docs import _undocumented


def _flag_structs() -> list[type[msgspec.Struct]]:
    for module in pkgutil.walk_packages(llmroute.protocols.__path__, "llmroute.protocols."):
        importlib.import_module(module.name)
    found: list[type[msgspec.Struct]] = []
    todo: list[type[msgspec.Struct]] = [msgspec.Struct]
    while todo:
        for cls in todo.pop().__subclasses__():
            todo.append(cls)
            if (
                cls.__module__.startswith("llmroute.protocols.")
                and not cls.__name__.startswith("_")
                and cls.__struct_config__.frozen
                and getattr(sys.modules[cls.__module__], cls.__qualname__, None) is cls
                and cls not in found
            ):
                found.append(cls)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


FLAGS = _flag_structs()


def test_the_quirk_structs_are_walked() -> None:
    names = {cls.__name__ for cls in FLAGS}
    assert {"ChatQuirks", "ResponsesQuirks"} <= names


@pytest.mark.parametrize("cls", FLAGS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_quirk_field_has_a_docstring(cls: type[msgspec.Struct]) -> None:
    assert _undocumented(cls) == []
