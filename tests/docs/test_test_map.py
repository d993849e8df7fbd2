"""``tests/README.md`` maps every module of ``src/llmroute`` to the test files that exercise it,
generated from the tests themselves by ``scripts/test_map.py``. It fails here when a module has no
row (added since the file was generated) or a row names a module that is gone, and when no test
reaches a module at all (neither naming it nor naming a module that imports it). The test lists
themselves may lag behind new test files until the script runs again (``--check`` tells)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_map", ROOT / "scripts/test_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
TEXT, UNREACHED = SCRIPT.render()


def _modules() -> set[str]:
    return {
        ".".join(p.relative_to(ROOT / "src").with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "src/llmroute").rglob("*.py")
    }


def _rows(text: str) -> set[str]:
    return set(re.findall(r"^\| `(llmroute[\w.]*)` \|", text, re.MULTILINE))


def test_every_src_module_has_a_row_and_no_row_is_stale() -> None:
    rows = _rows((ROOT / "tests/README.md").read_text(encoding="utf-8"))
    modules = _modules()
    assert sorted(modules - rows) == [], "modules without a row: run .venv/bin/python scripts/test_map.py"
    assert sorted(rows - modules) == [], "rows for modules that are gone: run scripts/test_map.py"


def test_the_script_lists_every_module() -> None:
    assert _rows(TEXT) == _modules()


def test_every_module_is_reached_by_some_test() -> None:
    assert UNREACHED == [], "add a test that exercises these modules"


def test_a_test_file_counts_for_the_modules_it_names(tmp_path: Path) -> None:
    """The reading itself: an import, a name used through a re-export, a ``-m`` run, a helper."""
    helper = tmp_path / "support.py"
    helper.write_text("from llmroute.framing.sse import SSEDecoder\n")
    test = tmp_path / "test_x.py"
    test.write_text(
        "import llmroute\n"
        "from .support import SSEDecoder\n"
        "client = llmroute.Client\n"
        "command = ['python', '-m', 'llmroute', 'serve']\n"
    )
    used = SCRIPT._used_modules(test)
    assert {"llmroute", "llmroute.client", "llmroute.__main__", "llmroute.framing.sse"} <= used
    assert "llmroute.router" not in used
