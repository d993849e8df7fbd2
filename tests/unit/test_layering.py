"""The package's shape: no import cycles, no import up a floor, and the lower floors stay free of httpx."""

from __future__ import annotations

import ast
import builtins
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import llmroute.protocols

PROTOCOL_MODULES = sorted(
    f"llmroute.protocols.{info.name}" for info in pkgutil.iter_modules(llmroute.protocols.__path__)
)
HTTPX_FREE = ["llmroute.schema", "llmroute.route", "llmroute.protocols", *PROTOCOL_MODULES]


@pytest.mark.parametrize("module", HTTPX_FREE)
def test_import_does_not_pull_httpx(module: str) -> None:
    # A fresh interpreter: this test process has httpx loaded already.
    code = f"import sys, {module}; assert 'httpx' not in sys.modules, 'httpx imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# --- layering: one import graph of src/llmroute (module-level imports only) ---

SRC = Path(llmroute.__file__).parent

# Lower numbers are lower floors; a module may import its own floor or any below it, never above.
# Every first-level name under llmroute/ must be listed (a new one needs a floor).
LAYERS: dict[str, int] = {
    "_version": 0,
    "schema": 0,
    "terminal": 0,  # terminal-control hygiene for provider text: no llmroute imports
    "framing": 1,
    "build": 1,  # request constructors: values only
    "catalog": 1,  # model limits, capabilities, prices; data only
    "client_tools": 1,
    "hosted": 1,
    "media": 1,
    "state": 1,  # shared state (in-process / Redis) for router health and gateway limits
    "route": 2,
    "protocols": 3,
    "tools": 3,
    "telemetry": 3,  # OpenTelemetry as one set of route.hooks; optional, never imported by llmroute
    "client": 4,
    "stream": 4,
    "sync": 4,
    "tokens": 4,  # count_tokens / check_context: sends through a Client
    "providers": 4,
    "router": 4,  # Router over Targets: runs model calls through route.executor, health in state
    "testing": 4,
    "websearch": 5,
    "adapters": 5,  # pydantic-ai, openai-agents, LangChain models over Model/Router; optional, lazily imported
    "server": 5,
    "cli": 5,  # the `llmroute` command and its presentation: console (terminal rendering), demo
    "__main__": 5,
    "": 6,  # llmroute/__init__.py: the public surface
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(
    tree: ast.Module, *, type_only: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module loads: not inside a function, not under ``if TYPE_CHECKING:``
    (its ``else`` branch does run); ``type_only``: those under ``if TYPE_CHECKING:`` too."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            checking = _is_type_checking(node.test) and not type_only
            body = node.orelse if checking else [*node.body, *node.orelse]
            stack.extend(reversed(body))
        elif isinstance(node, ast.Try):
            handlers = [stmt for handler in node.handlers for stmt in handler.body]
            stack.extend(reversed([*node.body, *handlers, *node.orelse, *node.finalbody]))
        elif isinstance(node, ast.With | ast.ClassDef):
            stack.extend(reversed(node.body))


def _import_graph(*, type_only: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports at load time; ``type_only``: and under ``TYPE_CHECKING``."""
    files = {_module_name(path): path for path in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")), type_only=type_only):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                # `from pkg import sub` is an edge to the submodule (a parent package always
                # loads first anyway); `from pkg import name` an edge to pkg.
                subs = [f"{module}.{alias.name}" for alias in node.names]
                targets = [sub if sub in files else module for sub in subs]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def _floor(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    assert top in LAYERS, f"llmroute.{top} has no floor in LAYERS (tests/unit/test_layering.py)"
    return LAYERS[top]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_graph_sees_imports() -> None:
    graph = _import_graph()
    assert "llmroute.route.model" in graph["llmroute.protocols.openai_chat"]
    assert "llmroute.schema.errors" in graph["llmroute.client"]
    # function-local and TYPE_CHECKING imports are not edges
    assert "llmroute.tools.runtime" not in graph["llmroute.client"]
    assert "llmroute.client" not in graph["llmroute"]


def test_cycle_finder() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert _cycles(_import_graph()) == []


def test_type_checking_imports_are_edges_of_the_full_graph() -> None:
    full, runtime = _import_graph(type_only=True), _import_graph()
    # a satellite reads its protocol's parser state under TYPE_CHECKING, from the state's own module
    reasoning = "llmroute.protocols.openai_chat.reasoning"
    assert "llmroute.protocols.openai_chat.state" in full[reasoning]
    assert "llmroute.protocols.openai_chat.state" not in runtime[reasoning]
    # function-local imports are still not edges
    assert "llmroute.protocols.anthropic_messages.lower" not in full["llmroute.protocols.anthropic_support"]


def test_no_import_cycles_type_only_imports_included() -> None:
    # issue #27: no circle at all, not even one closed by an ``if TYPE_CHECKING:`` import
    assert _cycles(_import_graph(type_only=True)) == []


def test_lower_layers_never_import_higher_ones() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in sorted(_import_graph().items())
        for target in sorted(targets)
        if _floor(target) > _floor(module)
    ]
    assert upward == []


def test_no_module_named_like_a_builtin_or_stdlib_module() -> None:
    # `from .types import x` next to `import types` reads wrong and shadows in tracebacks and IDEs.
    taken = set(dir(builtins)) | set(sys.stdlib_module_names)
    clashes = [str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if path.stem in taken]
    assert clashes == []
