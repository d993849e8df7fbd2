"""The executor stays a chain of small rungs (issue #27): no function in ``route/executor.py`` spans
more than 50 lines, so the attempt loop, one attempt, error decoration and transport failures keep
one concern each instead of growing back into one dense ``run_step``."""

from __future__ import annotations

import ast
from pathlib import Path

import llmroute.route.executor as executor

LIMIT = 50


def _spans(source: str) -> dict[str, int]:
    spans: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert node.end_lineno is not None
            spans[f"{node.name}:{node.lineno}"] = node.end_lineno - start + 1
    return spans


def test_every_function_in_the_executor_is_at_most_50_lines() -> None:
    spans = _spans(Path(executor.__file__).read_text(encoding="utf-8"))
    assert spans, "no function found: the test reads the wrong file"
    too_long = {name: n for name, n in spans.items() if n > LIMIT}
    assert not too_long, f"functions over {LIMIT} lines in route/executor.py: {too_long}"


def test_the_span_counts_the_whole_definition() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    spans = _spans(f"@decorator\nasync def f():\n{body}\n")
    assert spans == {"f:2": LIMIT + 2}
