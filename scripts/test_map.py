"""Write ``tests/README.md``: for each module of ``src/llmroute``, the test files that exercise it.

    .venv/bin/python scripts/test_map.py           # rewrite tests/README.md
    .venv/bin/python scripts/test_map.py --check   # exit 1 when it is stale

Tests are grouped by kind (one folder each), so the map is read from the tests themselves: a test
file exercises a module when it imports it, uses a name it defines (``llmroute.Client`` counts for
``llmroute.client``, whatever re-exports it) or names it in a string (``python -m llmroute``,
``importlib.import_module("llmroute.x")``); a helper module a test imports counts with it, and so do
the ``conftest.py`` files above it. A module no test names is listed with the modules that import
it, whose tests reach it. ``tests/docs/test_test_map.py`` fails when a module has no row or is
reached by no test at all.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TESTS = ROOT / "tests"
README = TESTS / "README.md"
SHOWN = 8  # test files named per kind in one row; more are counted

KINDS = {
    "unit": "one module or seam at a time, no sockets unless the seam is one",
    "conformance": "recorded provider traffic (``cassettes/``) replayed through the whole client",
    "reliability": "retries, deadlines, cancellation, broken and hostile servers on 127.0.0.1",
    "fuzz": "property and fuzz tests over the parsers and request building",
    "gateway": "``llmroute serve`` as a real server process",
    "router": "``Router``: targets, fallbacks, cooldowns, limits",
    "state": "shared state in memory and in a real redis-server",
    "telemetry": "OpenTelemetry spans and metrics through the SDK's in-memory exporters",
    "docs": "README, docs/ and examples/ snippets run as written",
    "packaging": "the built wheel: contents, extras, import cost",
    "bench": "benchmarks (run by hand; ``tests/bench/*.py``)",
}


def src_modules() -> list[str]:
    import llmroute

    names = ["llmroute"]
    names += [m.name for m in pkgutil.walk_packages(llmroute.__path__, "llmroute.")]
    return sorted(names)


def _load(name: str) -> ModuleType | None:
    if name.endswith("__main__"):  # running it is what importing it does
        return None
    try:
        return importlib.import_module(name)
    except Exception:  # __main__ and the like: named, not imported
        return None


def _owner(value: object, module: str) -> str:
    """The module that defines ``value`` (found on ``module``): itself when it is a module."""
    if isinstance(value, ModuleType):
        return value.__name__
    defined = getattr(value, "__module__", None)
    return defined if isinstance(defined, str) and defined.startswith("llmroute") else module


def _resolve(module: str, attrs: list[str]) -> Iterator[str]:
    """Modules reached from ``module`` by the attribute chain ``attrs``: each module on the way,
    and the module defining the last object that is not one."""
    yield module
    current = _load(module)
    for attr in attrs:
        if current is None:
            return
        value = getattr(current, attr, None)
        if value is None:
            candidate = f"{current.__name__}.{attr}"
            value = _load(candidate) if candidate in _ALL else None
            if value is None:
                return
        owner = _owner(value, current.__name__)
        yield owner
        if not isinstance(value, ModuleType):
            return
        current = value


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    attrs: list[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, attrs[::-1]
    return None


def _strings(tree: ast.AST) -> list[str]:
    """The words of the file's string constants, in source order."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    words: list[str] = []
    for node in found:
        words += [w.strip("'\".,:;()`") for w in str(node.value).replace("/", " ").split()]
    return words


def _helper_path(node: ast.ImportFrom, path: Path) -> Path | None:
    """The file under ``tests/`` a ``from tests.x import`` / ``from .x import`` names, if any."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = (node.module or "").split(".") if node.module else []
    elif node.module and node.module.split(".")[0] == "tests":
        base, parts = ROOT, node.module.split(".")
    else:
        return None
    target = base.joinpath(*parts)
    for candidate in (target.with_suffix(".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


_USED: dict[Path, set[str]] = {}


def _used_modules(path: Path) -> set[str]:
    """The llmroute modules ``path`` names, with those of the helper modules it imports (not other
    test files: a constant taken from one is not a use of what that file tests)."""
    if path in _USED:
        return _USED[path]
    _USED[path] = set()  # an import cycle between helpers ends here
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bound: dict[str, tuple[str, list[str]]] = {}  # local name -> (module, attributes)
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "llmroute":
                    if alias.asname:
                        bound[alias.asname] = (alias.name, [])
                    else:
                        bound["llmroute"] = ("llmroute", [])
                    used.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            helper = _helper_path(node, path)
            if helper is not None and not helper.name.startswith("test_"):
                used |= _used_modules(helper)
            if node.module and node.module.split(".")[0] == "llmroute" and not node.level:
                used.add(node.module)
                for alias in node.names:
                    bound[alias.asname or alias.name] = (node.module, [alias.name])
                    used.update(_resolve(node.module, [alias.name]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found = _chain(node)
            if found is not None and found[0] in bound:
                module, attrs = bound[found[0]]
                used.update(_resolve(module, attrs + found[1]))
    words = _strings(tree)
    used.update(w for w in words if w in _ALL)
    for flag, name in itertools.pairwise(words):
        if flag == "-m" and f"{name}.__main__" in _ALL:  # python -m llmroute
            used.add(f"{name}.__main__")
    result = {name for name in used if name in _ALL}
    _USED[path] = result
    return result


def _src_imports() -> dict[str, set[str]]:
    """Module -> the llmroute modules it imports (relative imports resolved)."""
    out: dict[str, set[str]] = {}
    for name in _ALL:
        module = _load(name)
        file = getattr(module, "__file__", None) if module else None
        if file is None:
            path = SRC / (name.replace(".", "/") + ".py")
            if not path.exists():
                continue
            file = str(path)
        package = name if file.endswith("__init__.py") else name.rpartition(".")[0]
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                if base in _ALL:
                    found.add(base)
                for alias in node.names:
                    if f"{base}.{alias.name}" in _ALL:
                        found.add(f"{base}.{alias.name}")
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in _ALL)
        out[name] = found - {name}
    return out


def test_files() -> list[Path]:
    files = [*TESTS.rglob("test_*.py"), *(TESTS / "bench").glob("bench_*.py")]
    return sorted(files)


def _conftests(path: Path) -> list[Path]:
    """The ``conftest.py`` files whose fixtures ``path`` may use (its folder and the ones above)."""
    out: list[Path] = []
    folder = path.parent
    while folder != TESTS.parent:
        if (folder / "conftest.py").is_file():
            out.append(folder / "conftest.py")
        folder = folder.parent
    return out


def kind_of(path: Path) -> str:
    return path.relative_to(TESTS).parts[0]


def build() -> dict[str, dict[str, list[str]]]:
    """Module -> kind -> test files (paths under ``tests/``) that name it."""
    table: dict[str, dict[str, list[str]]] = {name: {} for name in _ALL}
    for path in test_files():
        used = _used_modules(path).union(*(_used_modules(c) for c in _conftests(path)))
        for module in sorted(used):
            table[module].setdefault(kind_of(path), []).append(str(path.relative_to(TESTS)))
    return table


def _short(file: str) -> str:
    """``unit/catalog/test_cost.py`` -> ``catalog/cost`` (the kind is the row's label)."""
    parts = Path(file).with_suffix("").parts[1:]
    return "/".join([*parts[:-1], parts[-1].removeprefix("test_").removeprefix("bench_")])


def _row_tests(kinds: dict[str, list[str]]) -> str:
    parts: list[str] = []
    for kind in KINDS:
        files = kinds.get(kind)
        if not files:
            continue
        names = [_short(f) for f in files]
        shown = ", ".join(names[:SHOWN]) + (f" +{len(names) - SHOWN}" if len(names) > SHOWN else "")
        parts.append(f"**{kind}** ({len(files)}): {shown}")
    return "; ".join(parts)


def render() -> tuple[str, list[str]]:
    """The README text, and the modules no test reaches (neither named nor imported by one)."""
    table = build()
    imports = _src_imports()
    importers: dict[str, list[str]] = {name: [] for name in _ALL}
    for name, used in imports.items():
        for target in used:
            importers[target].append(name)
    lines = [
        "# Tests",
        "",
        "Generated by `scripts/test_map.py` (do not edit: run it after adding a module or a test file;",
        "`tests/docs/test_test_map.py` fails when a module has no row or no test reaches it).",
        "",
        "Tests are grouped by kind, one folder each:",
        "",
    ]
    lines += [f"- `{kind}/`: {text}" for kind, text in KINDS.items()]
    lines += [
        "",
        "Below, each module of `src/llmroute` and the test files that exercise it: a file counts when",
        "it imports the module, uses a name the module defines, or names it (`python -m llmroute`).",
        "Files are named without `test_`; `+N` counts the ones not named. A module no test names is",
        "reached through the modules that import it (themselves named by a test, or reached in turn).",
        "",
    ]
    reached = {name for name in _ALL if table[name]}
    grew = True
    while grew:  # a module is reached when a module importing it is (or a package's module is)
        grew = False
        for name in _ALL:
            inside = any(m.startswith(name + ".") for m in reached)
            if name not in reached and (inside or any(m in reached for m in importers[name])):
                reached.add(name)
                grew = True
    unreached: list[str] = []
    heading: object = object()  # no section yet
    for name in _ALL:
        section = _section(name)
        if section != heading:
            heading = section
            title = f"`{section}`" if section else "`llmroute` and its root modules"
            lines += ["", f"## {title}", "", "| module | tests |", "|---|---|"]
        kinds = table[name]
        if kinds:
            cell = _row_tests(kinds)
        else:
            via = sorted(m for m in importers[name] if m in reached)
            inside = [m for m in _ALL if m.startswith(name + ".") and m in reached]
            names = [f"`{m.removeprefix('llmroute.')}`" for m in via]
            if inside:
                names.append("its modules")
            if names:
                cell = "through " + ", ".join(names)
            else:
                cell = "**no test reaches it**"
                unreached.append(name)
        lines.append(f"| `{name}` | {cell} |")
    return "\n".join(lines) + "\n", unreached


def _section(name: str) -> str | None:
    """The package a module is listed under (``llmroute.protocols``); ``None`` for the root ones."""
    parts = name.split(".")
    if len(parts) == 1:
        return None
    package = ".".join(parts[:2])
    return package if any(m.startswith(package + ".") for m in _ALL) else None


sys.path.insert(0, str(ROOT))
_ALL: list[str] = src_modules()
_ALL.sort(key=lambda n: (_section(n) or "", n))


def main(argv: list[str]) -> int:
    text, unreached = render()
    if "--check" in argv:
        current = README.read_text(encoding="utf-8") if README.exists() else ""
        if current != text:
            print("tests/README.md is stale: run scripts/test_map.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(text, encoding="utf-8")
    for name in unreached:
        print(f"no test reaches {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
