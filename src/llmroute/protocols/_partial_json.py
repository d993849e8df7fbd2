"""Tool arguments streamed as (JSON path, value) pairs, as Gemini's ``partialArgs`` sends them.

``PathWriter`` builds the arguments object and, as each pair arrives, the JSON text it adds: the
fragments concatenate to the compact JSON of the finished object, so callers get ordinary
``tool-input-delta`` text. Providers send the pairs in document order (depth first, keys once,
array indices rising); a pair that breaks that order still lands in the object, but the text stops
there (the parsed ``tool-call`` input stays authoritative).
"""

from __future__ import annotations

import re
from typing import Any, cast

import msgspec

__all__ = ["PathWriter", "parse_path"]

Step = str | int  # an object key or an array index

_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")
_encode = msgspec.json.Encoder().encode


def parse_path(path: str) -> tuple[Step, ...]:
    """``$.a.b[0]['c d']`` -> ``("a", "b", 0, "c d")``; anything else is a ``ValueError``."""
    if not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} does not start at the root ($)")
    steps: list[Step] = []
    pos = 1
    while pos < len(path):
        match = _STEP.match(path, pos)
        if match is None:
            raise ValueError(f"JSON path {path!r}: cannot read from {path[pos:]!r}")
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            key = name if name is not None else (single if single is not None else double)
            steps.append(re.sub(r"\\(.)", r"\1", key) if name is None else key)
        pos = match.end()
    if not steps:
        raise ValueError(f"JSON path {path!r} names the root, not an argument")
    return tuple(steps)


def _fragment(text: str) -> str:
    """A string's JSON text without its quotes (escaped exactly as a whole string would be)."""
    return _encode(text).decode()[1:-1]


class _Container:
    __slots__ = ("array", "count", "keys", "step")

    def __init__(self, step: Step | None, array: bool = False) -> None:
        self.step = step  # how its parent reaches it (None: the root object)
        self.array = array
        self.count = 0  # members written so far
        self.keys: set[str] = set()


class PathWriter:
    """The arguments object built from path/value pairs, and the JSON text each pair adds."""

    __slots__ = ("_open", "_ordered", "_string", "value")

    def __init__(self) -> None:
        self.value: dict[str, Any] = {}
        self._open: list[_Container] = []  # root first; empty until the first text
        self._string: tuple[Step, ...] | None = None  # the string still open in the text
        self._ordered = True

    def set(self, path: tuple[Step, ...], value: Any) -> str:
        """Apply one pair (a string at the path of the string still being streamed extends it) and
        return the JSON text it adds (empty once the order broke)."""
        extend = isinstance(value, str) and self._string == path
        self._assign(path, value, extend)
        if not self._ordered:
            return ""
        if extend:
            return _fragment(value)
        text = ['"'] if self._string is not None else []
        self._string = None
        if not self._open:
            self._open.append(_Container(None))
            text.append("{")
        keep = self._common(path[:-1])
        while len(self._open) > keep:
            text.append(self._close())
        for n in range(keep - 1, len(path)):
            step = path[n]
            opened = self._member(step)
            if opened is None:  # the text so far stays a valid prefix: it just ends here
                self._ordered = False
                return "".join(text)
            text.append(opened)
            if n < len(path) - 1:
                array = isinstance(path[n + 1], int)
                self._open.append(_Container(step, array))
                text.append("[" if array else "{")
        if isinstance(value, str):
            self._string = path
            text.append('"' + _fragment(value))
        else:
            text.append(_encode(value).decode())
        return "".join(text)

    def finish(self) -> str:
        """The text that closes everything still open (``{}`` when nothing arrived)."""
        if not self._ordered:
            return ""
        text = ['"'] if self._string is not None else []
        self._string = None
        if not self._open:
            return "{}"
        while self._open:
            text.append(self._close())
        return "".join(text)

    # -- the object ----------------------------------------------------------------------------------

    def _assign(self, path: tuple[Step, ...], value: Any, extend: bool) -> None:
        node: Any = self.value
        for n, step in enumerate(path):
            last = n == len(path) - 1
            if isinstance(step, int):
                if not isinstance(node, list):
                    raise ValueError(f"argument path step [{step}] indexes a non-array")
                items = cast("list[Any]", node)
                items.extend([None] * (step + 1 - len(items)))
                if last:
                    items[step] = items[step] + value if extend else value
                    return
                if items[step] is None:
                    items[step] = [] if isinstance(path[n + 1], int) else {}
                node = items[step]
            else:
                if not isinstance(node, dict):
                    raise ValueError(f"argument path step {step!r} names a member of a non-object")
                members = cast("dict[str, Any]", node)
                if last:
                    members[step] = members[step] + value if extend else value
                    return
                node = members.setdefault(step, [] if isinstance(path[n + 1], int) else {})

    # -- the text ------------------------------------------------------------------------------------

    def _common(self, container: tuple[Step, ...]) -> int:
        """How many open containers (root included) the next pair's container shares."""
        keep = 1
        while keep < len(self._open) and keep - 1 < len(container):
            if self._open[keep].step != container[keep - 1]:
                break
            keep += 1
        return keep

    def _member(self, step: Step) -> str | None:
        """Separator and key for a new member of the innermost open container (``null`` fills an
        array gap); ``None`` when the step goes back (a key seen, an index passed)."""
        container = self._open[-1]
        head = "," if container.count else ""
        if container.array != isinstance(step, int):
            return None
        if isinstance(step, int):
            if step < container.count:
                return None
            fill = "null," * (step - container.count)
            container.count = step + 1
            return head + fill
        if step in container.keys:
            return None
        container.keys.add(step)
        container.count += 1
        return head + _encode(step).decode() + ":"

    def _close(self) -> str:
        return "]" if self._open.pop().array else "}"
