"""Mutation testing for llmroute's correctness-critical modules (docs/mutation-testing.md).

    python scripts/mutate.py                      # every module in scripts/mutation.toml
    python scripts/mutate.py route/redact.py      # one module (path under src/llmroute/)
    python scripts/mutate.py --smoke              # the bounded CI set (a few mutants per module)
    python scripts/mutate.py --list route/redact.py   # print the mutants, run nothing

Each mutant is one small AST change (a flipped comparison, an off-by-one constant, a dropped
statement or branch, a narrowed regex, a dropped table entry, a swapped boolean operator). The
runner imports llmroute and the module's test files once, then forks one child per mutant: the
child re-executes the mutated module source, swaps the changed functions' code objects and module
values into the live objects (so every ``from x import y`` sees the mutant), and runs pytest on the
module's test files with ``-x``. A failing run kills the mutant; a run past the timeout counts as
killed too (the mutant hung). Nothing is written to the source tree, so runs are parallel-safe.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import importlib
import os
import re
import signal
import sys
import time
import tomllib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "llmroute"
CONFIG = ROOT / "scripts" / "mutation.toml"

# ---------------------------------------------------------------------------------------------
# Mutant generation


@dataclass
class Mutant:
    id: str
    line: int
    desc: str
    apply: Callable[[], None] = field(repr=False)
    revert: Callable[[], None] = field(repr=False)


_CMP_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITH_FLIP: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add}
_OP_TEXT = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-",
    ast.And: "and", ast.Or: "or",
}  # fmt: skip
_RE_FUNCS = {"compile", "match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer"}
_LOG_METHODS = {"debug", "info", "warning", "error", "exception", "log"}
_DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.If, ast.For,
              ast.While, ast.Continue, ast.Break, ast.Delete)  # fmt: skip


def _set(obj: Any, name: str, value: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    old = getattr(obj, name)
    return (lambda: setattr(obj, name, value)), (lambda: setattr(obj, name, old))


def _set_item(seq: list[Any], i: int, value: Any) -> tuple[Callable[[], None], Callable[[], None]]:
    old = seq[i]

    def apply() -> None:
        seq[i] = value

    def revert() -> None:
        seq[i] = old

    return apply, revert


def _drop_item(seq: list[Any], i: int) -> tuple[Callable[[], None], Callable[[], None]]:
    snapshot = list(seq)

    def apply() -> None:
        del seq[i]

    def revert() -> None:
        seq[:] = snapshot

    return apply, revert


def _regex_variants(pattern: str | bytes) -> Iterator[tuple[str, str | bytes]]:
    """Narrowed variants of a regex source: quantifiers tightened, class members and alternatives
    dropped. Yields ``(description, new pattern)``."""
    is_bytes = isinstance(pattern, bytes)
    text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern

    def out(desc: str, new: str) -> tuple[str, str | bytes]:
        return desc, (new.encode("latin-1") if is_bytes else new)

    i, n = 0, len(text)
    groups: list[tuple[int, list[int]]] = []  # (start index after '(' , positions of '|')
    top_bars: list[int] = []
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < n and text[j] == "^":
                j += 1
            if j < n and text[j] == "]":
                j += 1
            members: list[tuple[int, int]] = []
            while j < n and text[j] != "]":
                start = j
                j += 2 if text[j] == "\\" else 1
                if j + 1 < n and text[j] == "-" and text[j + 1] != "]":
                    j += 2 if text[j + 1] != "\\" else 3
                members.append((start, j))
            if len(members) > 1:
                for a, b in members:
                    yield out(f"class drop {text[a:b]!r} from {text[i : j + 1]!r}", text[:a] + text[b:])
            i = j + 1
            continue
        if c == "(":
            groups.append((i + 1, []))
        elif c == ")" and groups:
            start, bars = groups.pop()
            yield from _alternatives(text, start, i, bars, out)
        elif c == "|":
            (groups[-1][1] if groups else top_bars).append(i)
        elif c == "{":
            m = re.match(r"\{(\d+)(,?)(\d*)\}", text[i:])
            if m:
                lo, comma, hi = int(m[1]), m[2], m[3]
                end = i + m.end()
                if comma and hi:
                    new_q = [f"{{{lo + 1},{hi}}}", f"{{{lo},{int(hi) - 1}}}"]
                elif comma:
                    new_q = [f"{{{lo + 1},}}"]
                else:
                    new_q = [f"{{{lo + 1}}}", f"{{{max(lo - 1, 0)}}}"]
                for q in new_q:
                    yield out(f"quantifier {m[0]}->{q}", text[:i] + q + text[end:])
                i = end
                continue
        elif c in "+*?" and i > 0 and text[i - 1] not in "(?":
            if i + 1 < n and text[i + 1] == "?":  # lazy: leave as is
                i += 2
                continue
            q = {"+": "{2,}", "*": "+", "?": ""}[c]
            yield out(f"quantifier {c}->{q or 'once'}", text[:i] + q + text[i + 1 :])
        i += 1
    if top_bars:
        yield from _alternatives(text, 0, n, top_bars, out)


def _alternatives(
    text: str, start: int, end: int, bars: list[int], out: Callable[[str, str], tuple[str, str | bytes]]
) -> Iterator[tuple[str, str | bytes]]:
    if not bars:
        return
    inner = start
    if text.startswith("?:", start) or text.startswith("?!", start) or text.startswith("?=", start):
        inner = start + 2
    elif text.startswith("?<!", start) or text.startswith("?<=", start):
        inner = start + 3
    cuts = [inner - 1, *bars, end]
    for k in range(len(cuts) - 1):
        a, b = cuts[k] + 1, cuts[k + 1]
        alt = text[a:b]
        # drop the alternative together with one of its bars
        new = text[: a - 1] + text[b:] if k > 0 else text[:a] + text[b + 1 :]
        yield out(f"alternative drop {alt[:40]!r}", new)


class _Generator:
    def __init__(self, tree: ast.Module, relpath: str) -> None:
        self.tree = tree
        self.relpath = relpath
        self.mutants: list[Mutant] = []
        self._seen: dict[str, int] = {}
        self._skip: set[int] = set()  # ids of nodes not to descend into
        self._regex: set[int] = set()

    def add(
        self, qual: str, node: ast.AST, desc: str, pair: tuple[Callable[[], None], Callable[[], None]]
    ) -> None:
        key = f"{self.relpath}::{qual}::{desc}"
        k = self._seen.get(key, 0)
        self._seen[key] = k + 1
        mid = key if k == 0 else f"{key}#{k}"
        self.mutants.append(Mutant(mid, getattr(node, "lineno", 0), desc, *pair))

    def run(self) -> list[Mutant]:
        self._mark_skips(self.tree)
        self._body(self.tree.body, "<module>", in_function=False)
        return self.mutants

    def _mark_skips(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                    if a.annotation:
                        self._skip.add(id(a.annotation))
                for a in (node.args.vararg, node.args.kwarg):
                    if a and a.annotation:
                        self._skip.add(id(a.annotation))
                if node.returns:
                    self._skip.add(id(node.returns))
                for d in node.decorator_list:
                    self._skip.add(id(d))
            elif isinstance(node, ast.AnnAssign):
                self._skip.add(id(node.annotation))
            elif isinstance(node, ast.Call) and node.args:
                f = node.func
                is_re = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "re"
                if is_re and f.attr in _RE_FUNCS and isinstance(node.args[0], ast.Constant):  # type: ignore[union-attr]
                    self._regex.add(id(node.args[0]))
                if isinstance(f, ast.Name) and f.id in {"TypeVar", "NewType", "cast"}:
                    self._skip.add(id(node))

    def _body(self, body: list[ast.stmt], qual: str, in_function: bool) -> None:
        for idx, stmt in enumerate(body):
            if idx == 0 and _is_docstring(stmt):
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
                continue
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id in {"__all__", "__slots__"} for t in targets):
                    continue
                if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                    continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._body(stmt.body, _join(qual, stmt.name), in_function=True)
                continue
            if isinstance(stmt, ast.ClassDef):
                self._body(stmt.body, _join(qual, stmt.name), in_function=False)
                continue
            if in_function and isinstance(stmt, _DELETABLE) and len(body) > 1 and not _is_log_call(stmt):
                self.add(
                    qual,
                    stmt,
                    f"delete {type(stmt).__name__} L{stmt.lineno - _base(qual)}",
                    _set_item(body, idx, ast.Pass(lineno=stmt.lineno, col_offset=stmt.col_offset)),
                )
            if in_function and isinstance(stmt, ast.If) and stmt.orelse:
                for value in (True, False):
                    self.add(qual, stmt, f"if-test->{value}", _set(stmt, "test", ast.Constant(value)))
            self._expr_walk(stmt, qual)
            for sub in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, sub, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    self._body(inner, qual, in_function)
            for handler in getattr(stmt, "handlers", []):
                self._body(handler.body, qual, in_function)
            for case in getattr(stmt, "cases", []):
                self._body(case.body, qual, in_function)

    def _expr_walk(self, stmt: ast.stmt, qual: str) -> None:
        """Mutate the expressions owned by ``stmt`` (not those of nested statements)."""
        todo: list[ast.AST] = []
        for name, value in ast.iter_fields(stmt):
            if name in {"body", "orelse", "finalbody", "handlers", "cases", "decorator_list", "returns"}:
                continue
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, ast.AST))
        while todo:
            node = todo.pop()
            if id(node) in self._skip or isinstance(node, ast.JoinedStr):
                continue
            self._expr(node, qual)
            todo.extend(ast.iter_child_nodes(node))

    def _expr(self, node: ast.AST, qual: str) -> None:
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                flip = _CMP_FLIP.get(type(op))
                if flip:
                    ops = list(node.ops)
                    ops[k] = flip()
                    self.add(
                        qual,
                        node,
                        f"compare {_OP_TEXT[type(op)]}->{_OP_TEXT[flip]} L{node.lineno - _base(qual)}",
                        _set(node, "ops", ops),
                    )
            for operand in [node.left, *node.comparators]:
                if isinstance(operand, ast.Constant) and isinstance(operand.value, (str, bytes)):
                    self._string_change(operand, qual)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            self.add(
                qual,
                node,
                f"boolop {_OP_TEXT[type(node.op)]}->{_OP_TEXT[type(other)]} L{node.lineno - _base(qual)}",
                _set(node, "op", other),
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.add(qual, node, f"drop not L{node.lineno - _base(qual)}", _replace_not(node))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            flip = _ARITH_FLIP.get(type(node.op))
            if flip:
                self.add(
                    qual,
                    node,
                    f"arith {_OP_TEXT[type(node.op)]}->{_OP_TEXT[flip]} L{node.lineno - _base(qual)}",
                    _set(node, "op", flip()),
                )
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                self.add(
                    qual, node, f"const {v}->{not v} L{node.lineno - _base(qual)}", _set(node, "value", not v)
                )
            elif isinstance(v, int) and not isinstance(v, bool):
                for new in (v + 1, v - 1) if v != 0 else (1,):
                    self.add(
                        qual, node, f"const {v}->{new} L{node.lineno - _base(qual)}", _set(node, "value", new)
                    )
            elif isinstance(v, (str, bytes)) and id(node) in self._regex:
                for desc, new in _regex_variants(v):
                    self.add(qual, node, f"regex {desc}", _set(node, "value", new))
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) > 1:
            if all(isinstance(e, ast.Constant) for e in node.elts):
                for k, e in enumerate(node.elts):
                    self.add(qual, node, f"table drop {e.value!r}", _drop_item(node.elts, k))  # type: ignore[attr-defined]
        elif (
            isinstance(node, ast.Dict)
            and len(node.keys) > 1
            and all(isinstance(k, ast.Constant) for k in node.keys)
        ):
            for k, key in enumerate(node.keys):
                snapshot_k, snapshot_v = list(node.keys), list(node.values)

                def apply(node: ast.Dict = node, k: int = k) -> None:
                    del node.keys[k]
                    del node.values[k]

                def revert(
                    node: ast.Dict = node, sk: list[Any] = snapshot_k, sv: list[Any] = snapshot_v
                ) -> None:
                    node.keys[:] = sk
                    node.values[:] = sv

                self.add(qual, node, f"table drop key {key.value!r}", (apply, revert))  # type: ignore[union-attr]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"startswith", "endswith", "get", "pop"}
        ):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, (str, bytes)):
                    self._string_change(arg, qual)

    def _string_change(self, node: ast.Constant, qual: str) -> None:
        v = node.value
        new = v + (b"X" if isinstance(v, bytes) else "X")
        self.add(qual, node, f"string {v!r}->{new!r}", _set(node, "value", new))


def _replace_not(node: ast.UnaryOp) -> tuple[Callable[[], None], Callable[[], None]]:
    # ``not x`` -> ``not not x`` (that is, ``bool(x)``) without touching the parent node
    inner = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=node.operand), node)
    return _set(node, "operand", inner)


_QUAL_BASE: dict[str, int] = {}


def _base(qual: str) -> int:
    """Line numbers in ids are relative to the enclosing function, so edits elsewhere keep ids stable."""
    return _QUAL_BASE.get(qual, 0)


def _join(qual: str, name: str) -> str:
    return name if qual == "<module>" else f"{qual}.{name}"


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_log_call(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr in _LOG_METHODS
        and isinstance(stmt.value.func.value, ast.Name)
        and stmt.value.func.value.id in {"logger", "log", "_log", "_logger", "LOG"}
    )


def generate(relpath: str) -> tuple[ast.Module, list[Mutant]]:
    tree = ast.parse((SRC / relpath).read_text(), filename=str(SRC / relpath))
    _QUAL_BASE.clear()

    def index(body: list[ast.stmt], qual: str) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = _join(qual, stmt.name)
                _QUAL_BASE[q] = stmt.lineno
                index(stmt.body, q)

    index(tree.body, "<module>")
    return tree, _Generator(tree, relpath).run()


# ---------------------------------------------------------------------------------------------
# Applying a mutant inside a forked child


_SIMPLE = (int, float, str, bytes, bool, type(None), frozenset, set, tuple, list, dict, re.Pattern)


def _exec(tree: ast.Module, module: types.ModuleType) -> dict[str, Any]:
    code = compile(tree, module.__file__ or "<mutant>", "exec", dont_inherit=True)
    ns: dict[str, Any] = {
        "__name__": module.__name__,
        "__package__": module.__package__,
        "__file__": module.__file__,
        "__builtins__": builtins,
    }
    exec(code, ns)
    return ns


def _functions(obj: Any) -> Iterator[tuple[str, types.FunctionType]]:
    """The plain functions behind a module/class attribute (through decorators and descriptors)."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        for part, fn in (("fget", obj.fget), ("fset", obj.fset), ("fdel", obj.fdel)):
            if fn is not None:
                yield from ((f".{part}{n}", f) for n, f in _functions(fn))
        return
    seen = 0
    while obj is not None and seen < 5:  # a decorator's wrapper, then what it wraps
        if isinstance(obj, types.FunctionType):
            yield "", obj
        obj = getattr(obj, "__wrapped__", None)
        seen += 1


def _differs(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return True
    if isinstance(a, re.Pattern):
        return (a.pattern, a.flags) != (b.pattern, b.flags)  # type: ignore[union-attr]
    try:
        return bool(a != b)
    except Exception:
        return True


def _swap(live: types.FunctionType, base: types.FunctionType, new: types.FunctionType) -> int:
    if (base.__code__, base.__defaults__, base.__kwdefaults__) == (
        new.__code__,
        new.__defaults__,
        new.__kwdefaults__,
    ):
        return 0
    if live.__code__.co_freevars != new.__code__.co_freevars:
        return 0  # e.g. a dropped ``super()`` call: the closure no longer fits; reported unapplied
    live.__code__, live.__defaults__, live.__kwdefaults__ = new.__code__, new.__defaults__, new.__kwdefaults__
    return 1


def patch(module: types.ModuleType, clean: dict[str, Any], mutant_ns: dict[str, Any]) -> int:
    """Swap what the mutant changed into the live module; the number of changed objects."""
    changed = 0
    live = module.__dict__
    for name, new in mutant_ns.items():
        if name.startswith("__") or name not in live or name not in clean:
            continue
        old, base = live[name], clean[name]
        if isinstance(new, type) and isinstance(old, type):
            for attr, new_member in vars(new).items():
                if attr not in vars(old) or attr not in vars(base):
                    continue
                old_member, base_member = vars(old)[attr], vars(base)[attr]
                pairs = list(
                    zip(_functions(old_member), _functions(base_member), _functions(new_member), strict=False)
                )
                if pairs:
                    for (_, fo), (_, fb), (_, fn) in pairs:
                        changed += _swap(fo, fb, fn)
                elif isinstance(new_member, _SIMPLE) and _differs(base_member, new_member):
                    setattr(old, attr, new_member)
                    changed += 1
            continue
        fpairs = list(zip(_functions(old), _functions(base), _functions(new), strict=False))
        if fpairs:
            for (_, fo), (_, fb), (_, fn) in fpairs:
                changed += _swap(fo, fb, fn)
            clear = getattr(old, "cache_clear", None)
            if callable(clear):
                clear()
            continue
        if isinstance(new, _SIMPLE) and _differs(base, new):
            live[name] = new
            for other in list(sys.modules.values()):
                d = getattr(other, "__dict__", None)
                if isinstance(d, dict) and d is not live:
                    for k, v in list(d.items()):
                        if v is old:
                            d[k] = new
            changed += 1
    return changed


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    mutant: Mutant
    status: str  # killed | survived | timeout | unapplied | error
    seconds: float


def _pytest_args(tests: list[str]) -> list[str]:
    return [*tests, "-x", "-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=", "-W", "ignore"]


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan if the runner dies


def _child(
    tree: ast.Module, module: types.ModuleType, clean: dict[str, Any], tests: list[str], mutant: Mutant | None
) -> int:
    os.setpgid(0, 0)
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    if mutant is not None:
        mutant.apply()
        try:
            ns = _exec(tree, module)
        except Exception:
            return 90  # the mutant does not even import: killed
        finally:
            mutant.revert()
        if patch(module, clean, ns) == 0:
            return 91
    _fewer_examples()
    import pytest

    return int(pytest.main(_pytest_args(tests)))


def _fewer_examples(cap: int = 25) -> None:
    """Property tests run at most ``cap`` examples per mutant (explicit ``@settings`` included)."""
    try:
        from hypothesis import settings
    except ImportError:
        return
    settings.register_profile("mutate", max_examples=cap, deadline=None, database=None)
    settings.load_profile("mutate")
    for name, module in list(sys.modules.items()):
        if not name.startswith("tests."):
            continue
        for obj in list(vars(module).values()):
            own = getattr(obj, "_hypothesis_internal_use_settings", None)
            if isinstance(own, settings) and own.max_examples > cap:
                with contextlib.suppress(Exception):
                    obj._hypothesis_internal_use_settings = settings(own, max_examples=cap, database=None)


def _fork(
    tree: ast.Module, module: types.ModuleType, clean: dict[str, Any], tests: list[str], mutant: Mutant | None
) -> int:
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            code = _child(tree, module, clean, tests, mutant)
        finally:
            os._exit(code)
    return pid


def run_module(
    relpath: str,
    tests: list[str],
    mutants: list[Mutant],
    tree: ast.Module,
    jobs: int,
    timeout: float | None,
    verbose: bool,
) -> list[Result]:
    name = "llmroute." + relpath.removesuffix(".py").replace("/", ".")
    module = importlib.import_module(name)
    clean = _exec(tree, module)
    # warm up: import the test files in the parent so every child starts from a collected state
    import pytest

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        pytest.main([*_pytest_args(tests), "--collect-only"])
    t0 = time.monotonic()
    pid = _fork(tree, module, clean, tests, None)
    _, status = os.waitpid(pid, 0)
    baseline = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{relpath}: the tests fail without any mutant ({tests})")
    limit = timeout or max(6.0, baseline * 3 + 2)
    print(f"{relpath}: {len(mutants)} mutants, tests {baseline:.1f}s, timeout {limit:.0f}s", flush=True)
    results: list[Result] = []
    queue = list(mutants)
    running: dict[int, tuple[Mutant, float]] = {}
    while queue or running:
        while queue and len(running) < jobs:
            m = queue.pop(0)
            running[_fork(tree, module, clean, tests, m)] = (m, time.monotonic())
        time.sleep(0.02)
        for pid, (m, started) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - started
            if done == 0:
                if elapsed > limit:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    del running[pid]
                    results.append(Result(m, "timeout", elapsed))
                continue
            del running[pid]
            code = os.waitstatus_to_exitcode(status)
            st = {0: "survived", 1: "killed", 90: "killed", 91: "unapplied"}.get(code, "error")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # stray servers a test left behind
            results.append(Result(m, st, elapsed))
            if verbose or st in {"survived", "error", "unapplied"}:
                print(
                    f"  {st:9} {m.id}  (line {m.line}){f' exit {code}' if st == 'error' else ''}", flush=True
                )
    return results


def load_config() -> dict[str, Any]:
    with CONFIG.open("rb") as f:
        return tomllib.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "modules", nargs="*", help="paths under src/llmroute/ (default: all in mutation.toml)"
    )
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds per mutant (default: 4x the clean run)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a bounded sample: every Nth mutant (see mutation.toml)"
    )
    parser.add_argument("--every", type=int, default=None, help="a sample: every Nth mutant")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--match", default=None, help="only mutants whose id contains this text")
    parser.add_argument(
        "--ids", default=None, help="only the mutants listed in this file, one id a line (e.g. last run's survivors)"
    )
    parser.add_argument("--tests", nargs="*", default=None, help="override the module's test files")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    cfg = load_config()
    modules: dict[str, dict[str, Any]] = cfg["modules"]
    equivalent: dict[str, str] = {e["id"]: e["reason"] for e in cfg.get("equivalent", [])}
    selected = args.modules or list(modules)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    table: list[tuple[str, int, int, int, int, int, int]] = []
    survivors: list[Result] = []
    for relpath in selected:
        if relpath not in modules:
            raise SystemExit(f"{relpath} is not in {CONFIG.name}")
        tree, mutants = generate(relpath)
        excluded = [m for m in mutants if m.id in equivalent]
        mutants = [m for m in mutants if m.id not in equivalent]
        if args.match:
            mutants = [m for m in mutants if args.match in m.id]
        if args.ids:
            wanted = {line.strip() for line in Path(args.ids).read_text().splitlines() if line.strip()}
            mutants = [m for m in mutants if m.id in wanted]
        step = args.every or (int(cfg.get("smoke", {}).get("every", 10)) if args.smoke else 1)
        mutants = mutants[::step]
        if args.list:
            for m in mutants:
                print(f"{m.id}  (line {m.line})")
            for m in excluded:
                print(f"{m.id}  (line {m.line})  EQUIVALENT: {equivalent[m.id]}")
            continue
        tests = args.tests or modules[relpath]["tests"]
        results = run_module(relpath, tests, mutants, tree, args.jobs, args.timeout, args.verbose)
        count = {
            s: sum(r.status == s for r in results)
            for s in ("killed", "timeout", "survived", "unapplied", "error")
        }
        table.append(
            (
                relpath,
                len(results),
                count["killed"] + count["timeout"],
                count["survived"],
                len(excluded),
                count["unapplied"],
                count["error"],
            )
        )
        survivors.extend(r for r in results if r.status == "survived")
    if args.list:
        return 0
    print()
    print("| module | mutants | killed | survived | equivalent | unapplied | score |")
    print("|---|---|---|---|---|---|---|")
    worst = 100.0
    for relpath, total, killed, survived, eq, unapplied, errors in table:
        scored = killed + survived
        score = 100.0 * killed / scored if scored else 100.0
        worst = min(worst, score)
        print(f"| {relpath} | {total} | {killed} | {survived} | {eq} | {unapplied + errors} | {score:.1f}% |")
    threshold = float(cfg.get("threshold", 90))
    return 0 if worst >= threshold or (args.smoke and not survivors) else 1


if __name__ == "__main__":
    sys.exit(main())
