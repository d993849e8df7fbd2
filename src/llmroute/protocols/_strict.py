"""Which JSON schemas a provider's strict (constrained-decoding) mode accepts.

OpenAI's documented rules for ``strict: true`` (Structured Outputs, "Supported schemas"): the root is
an object (not ``anyOf``); every object sets ``additionalProperties: false`` and lists every property
in ``required`` (optional fields are nullable instead); ``allOf``, ``not``, ``if``/``then``/``else``,
``dependentRequired``, ``dependentSchemas`` and ``patternProperties`` are not supported; at most
10 levels of nesting and 5000 properties in all. ``$ref`` into ``$defs`` (recursion included) is
fine. Anthropic's structured outputs take the same closed objects but allow optional properties
(``all_required=False``).
"""

from __future__ import annotations

from typing import Any, cast

__all__ = ["strict_compatible"]

_UNSUPPORTED = frozenset(
    {"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"}
)
MAX_DEPTH = 10
MAX_PROPERTIES = 5000


def strict_compatible(schema: Any, *, all_required: bool = True) -> bool:
    """Whether ``schema`` is accepted in strict mode (rules in the module doc)."""
    if not isinstance(schema, dict):
        return False
    root = cast(dict[str, Any], schema)
    if root.get("type") != "object" or "anyOf" in root:
        return False
    count = [0]
    if not _check(root, 0, count, all_required):
        return False
    for table in ("$defs", "definitions"):
        defs = root.get(table)
        if isinstance(defs, dict):
            for sub in cast(dict[str, Any], defs).values():
                if not _check(sub, 0, count, all_required):
                    return False
    return count[0] <= MAX_PROPERTIES


def _check(node: Any, depth: int, count: list[int], all_required: bool) -> bool:
    if isinstance(node, bool):
        return True
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return False
    schema = cast(dict[str, Any], node)
    if _UNSUPPORTED.intersection(schema):
        return False
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types) or "properties" in schema
    if is_object:
        raw_props: Any = schema.get("properties") or {}
        if not isinstance(raw_props, dict) or schema.get("additionalProperties") is not False:
            return False
        props = cast(dict[str, Any], raw_props)
        count[0] += len(props)
        required: Any = schema.get("required") or []
        if all_required and (not isinstance(required, list) or set(cast(list[Any], required)) != set(props)):
            return False
        if not all(_check(sub, depth + 1, count, all_required) for sub in props.values()):
            return False
    items = schema.get("items")
    if items is not None and not _check(items, depth + 1, count, all_required):
        return False
    for key in ("anyOf", "oneOf", "prefixItems"):
        options = schema.get(key)
        if options is not None:
            if not isinstance(options, list):
                return False
            if not all(_check(sub, depth + 1, count, all_required) for sub in cast(list[Any], options)):
                return False
    return True
