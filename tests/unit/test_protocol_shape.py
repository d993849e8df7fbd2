"""Issue #15's "done when", checked: no source module over 1,000 lines, and the protocol modules read
the same way side by side (the six section headers in order, ``NAME``, one ``route`` signature, the
shared helper vocabulary and none of the names it replaced). See /work/briefs/vocabulary.md."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import llmroute
from llmroute.providers import registry

SRC = Path(llmroute.__file__).parent
PROTOCOLS: list[ModuleType] = sorted((entry.load() for entry in registry.PROTOCOLS), key=lambda m: m.NAME)
HEADERS = [
    "# 1. quirks, constants and request body Structs ",
    "# 2. stream event Structs ",
    "# 3. parser state ",
    "# 4. build_body ",
    "# 5. step / on_halt ",
    "# 6. the Protocol value and its default route ",
]
# the names issue #15 item 1 replaced: none may come back in any protocol module
RETIRED = {
    "_tool_def",
    "_declaration",
    "_function_tool",
    "_tool_spec",
    "_hosted",
    "_hosted_tool",
    "_close",
    "_close_blocks",
    "_lower",
    "_media",
    "_media_out",
    "_tools",
    "_tool_choice",
}


def _ids(module: ModuleType) -> str:
    return module.NAME


# A protocol split by direction is a package: its modules, in the six sections' reading order.
PACKAGE_ORDER = ["wire", "state", "lower", "parse", "__init__"]


def _files(module: ModuleType) -> list[Path]:
    path = Path(module.__file__ or "")
    if path.name != "__init__.py":
        return [path]
    return [path.parent / f"{name}.py" for name in PACKAGE_ORDER]


def _namespace(module: ModuleType) -> set[str]:
    """Names defined at module level, over a package's modules too."""
    names = set(vars(module))
    if Path(module.__file__ or "").name == "__init__.py":
        for name in PACKAGE_ORDER[:-1]:
            names |= set(vars(importlib.import_module(f"{module.__name__}.{name}")))
    return names


def test_no_source_module_is_over_1000_lines() -> None:
    sizes = {
        str(p.relative_to(SRC)): len(p.read_text(encoding="utf-8").splitlines()) for p in SRC.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 1000} == {}


@pytest.mark.parametrize("module", PROTOCOLS, ids=_ids)
def test_the_six_section_headers_in_order_padded_to_column_100(module: ModuleType) -> None:
    lines = [line for path in _files(module) for line in path.read_text(encoding="utf-8").splitlines()]
    found = [(n, line) for n, line in enumerate(lines) if re.match(r"# \d\. ", line)]
    assert [line.rstrip("-") for _, line in found] == HEADERS
    assert all(len(line) == 100 and line.endswith("--") for _, line in found)


@pytest.mark.parametrize("module", PROTOCOLS, ids=_ids)
def test_only_imports_all_and_name_come_before_section_1(module: ModuleType) -> None:
    text = _files(module)[0].read_text(encoding="utf-8")
    first = text.splitlines().index(next(line for line in text.splitlines() if line.startswith("# 1. ")))
    before = [node for node in ast.parse(text).body if node.lineno <= first]
    allowed = (ast.Import, ast.ImportFrom)
    names: list[str] = []
    for node in before[1:]:  # the docstring first
        if isinstance(node, allowed):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        assert isinstance(node, ast.Assign | ast.AnnAssign), ast.unparse(node)
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        assert isinstance(target, ast.Name)
        names.append(target.id)
    assert isinstance(before[0], ast.Expr)  # the module docstring
    assert set(names) <= {"__all__", "NAME"} and "NAME" in names


def test_the_protocol_names() -> None:
    # written out: routes, errors and recorded metadata carry these strings
    assert [m.NAME for m in PROTOCOLS] == [
        "anthropic-messages",
        "bedrock-converse",
        "gemini",
        "openai-chat",
        "openai-responses",
    ]


@pytest.mark.parametrize("module", PROTOCOLS, ids=_ids)
def test_name_is_the_protocol_name_and_the_route_default(module: ModuleType) -> None:
    assert module.PROTOCOL.name == module.NAME
    params = inspect.signature(module.route).parameters
    assert list(params)[:2] == ["endpoint", "auth"]
    assert params["name"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["name"].default == module.NAME
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


@pytest.mark.parametrize("module", PROTOCOLS, ids=_ids)
def test_the_shared_helper_vocabulary(module: ModuleType) -> None:
    names = _namespace(module)
    assert {"_lower_messages", "_lower_media", "_lower_tools", "_lower_tool", "_lower_hosted"} <= names
    assert {"_lower_tool_choice", "_close_all", "_usage", "build_body", "step", "on_halt"} <= names
    assert module.PROTOCOL.hosted_kinds == frozenset(module.HOSTED_TOOLS)


def test_no_protocol_module_keeps_a_retired_helper_name() -> None:
    kept: list[str] = []
    for path in sorted((SRC / "protocols").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module-level helpers
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in RETIRED:
                kept.append(f"{path.name}: {node.name}")
    assert kept == []
