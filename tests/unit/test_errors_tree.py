"""The error tree drawn in ``llmroute.schema.errors``'s docstring is the real class hierarchy: every
``LLMError`` subclass llmroute defines (in any module) appears once, under its real parent, and
nothing drawn is missing from the code. A new error class, or a moved one, fails here until the
drawing is updated."""

from __future__ import annotations

import importlib
import pkgutil

import llmroute
from llmroute.schema import errors
from llmroute.schema.errors import LLMError

_HOME = "llmroute.schema.errors"


def _label(cls: type) -> str:
    """How the drawing names a class: bare in ``schema.errors``, dotted from anywhere else."""
    return cls.__name__ if cls.__module__ == _HOME else f"{cls.__module__}.{cls.__name__}"


def _drawn() -> list[tuple[str | None, str]]:
    """(parent, child) for every line of the drawing, in order."""
    doc = errors.__doc__ or ""
    lines = doc[doc.index("::\n") + 3 :].splitlines()
    lines = [line for line in lines if line.strip()]
    base = len(lines[0]) - len(lines[0].lstrip())
    stack: list[str] = []
    edges: list[tuple[str | None, str]] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if indent < base:
            break
        depth, rest = divmod(indent - base, 2)
        assert rest == 0, f"odd indentation in the drawn tree: {line!r}"
        name = line.split()[0]
        del stack[depth:]
        edges.append((stack[-1] if stack else None, name))
        stack.append(name)
    return edges


def _real() -> list[tuple[str | None, str]]:
    for module in pkgutil.walk_packages(llmroute.__path__, "llmroute."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)  # every subclass, wherever it is defined
    edges: list[tuple[str | None, str]] = [(None, "LLMError")]
    todo: list[type] = [LLMError]
    while todo:
        parent = todo.pop()
        for child in parent.__subclasses__():
            if child.__module__.startswith("llmroute."):  # not ones a test defines
                edges.append((_label(parent), _label(child)))
                todo.append(child)
    return edges


def test_the_drawn_error_tree_is_the_class_hierarchy() -> None:
    drawn = _drawn()
    names = [child for _, child in drawn]
    assert len(names) == len(set(names)), "a class drawn twice"
    assert sorted(drawn, key=str) == sorted(_real(), key=str)


def test_every_class_in_schema_errors_is_drawn() -> None:
    exported = {
        name
        for name in errors.__all__
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), LLMError)
    }
    assert exported <= {child for _, child in _drawn()}
