"""The README's cited-answer example runs and prints exactly the Markdown shown under it."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_readme_cited_example_output_is_current() -> None:
    section = README.read_text(encoding="utf-8").split("## Cited search answers", 1)[1]
    code, shown = re.findall(r"```(?:python|markdown)\n(.*?)```", section, re.DOTALL)[:2]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == shown + "\n"  # print() adds a newline after the final one
