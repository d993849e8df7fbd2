"""Gemini's ``Schema``: a JSON Schema rewritten into the OpenAPI-3.0 subset Gemini accepts.

Used for function declarations' ``parameters`` and for ``responseSchema`` (structured output).
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

__all__ = ["sanitize_schema"]

# Keywords of the OpenAPI-3.0 subset Gemini's ``Schema`` accepts; everything else is dropped.
_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}
_MAX_REF_DEPTH = 16


def sanitize_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema as Gemini's ``Schema`` accepts it: ``$ref``/``$defs`` inlined, ``const`` and
    ``oneOf`` rewritten, ``null`` types folded into ``nullable``, unsupported keywords dropped."""
    defs: dict[str, Any] = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    return _sanitize(schema, defs, 0)


def _resolve_ref(ref: str, defs: dict[str, Any]) -> dict[str, Any] | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return _as_dict(defs.get(ref[len(prefix) :]))
    return None


def _as_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None  # type: ignore[return-value]


def _as_list(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None  # type: ignore[return-value]


def _sanitize(schema: Any, defs: dict[str, Any], depth: int) -> dict[str, Any]:
    if not isinstance(schema, dict):
        return {}
    node: dict[str, Any] = dict(schema)  # type: ignore[arg-type]
    ref = node.pop("$ref", None)
    if isinstance(ref, str):
        target = _resolve_ref(ref, defs)
        if target is None or depth >= _MAX_REF_DEPTH:
            return {"type": "object"}  # unresolvable or recursive beyond the limit
        node = {**target, **node}  # siblings of $ref (description, ...) override the target
        depth += 1
    out: dict[str, Any] = {}
    nullable = False
    if "const" in node:
        node.setdefault("enum", [node["const"]])
    kind: Any = node.get("type")
    kinds = _as_list(kind)
    if kinds is not None:
        types: list[Any] = [t for t in kinds if t != "null"]
        nullable = len(types) < len(kinds)
        if len(types) == 1:
            kind = types[0]
        elif types:
            node.setdefault("anyOf", [{"type": t} for t in types])
            kind = None
        else:
            kind = None
    variants = _as_list(node.get("anyOf") or node.get("oneOf"))
    if variants is not None:
        kept: list[Any] = [v for v in variants if (_as_dict(v) or {}).get("type") != "null"]
        nullable = nullable or len(kept) < len(variants)
        if len(kept) == 1:
            inner = _sanitize(kept[0], defs, depth)
            for key in ("description", "title", "default"):
                if key in node and key in _SCHEMA_KEYS:
                    inner[key] = node[key]
            if nullable:
                inner["nullable"] = True
            return inner
        if kept:
            out["anyOf"] = [_sanitize(v, defs, depth) for v in kept]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged: dict[str, Any] = {}
        for part in all_of:  # type: ignore[union-attr]
            resolved = _sanitize(part, defs, depth)
            props = {**merged.get("properties", {}), **resolved.get("properties", {})}
            required = [*merged.get("required", []), *resolved.get("required", [])]
            merged.update(resolved)
            if props:
                merged["properties"] = props
            if required:
                merged["required"] = list(dict.fromkeys(required))
        out.update(merged)
    if kind is not None:
        out["type"] = kind
    for key, value in node.items():
        if key not in _SCHEMA_KEYS or key in ("type", "anyOf"):
            continue
        if key == "properties" and isinstance(value, dict):
            own = {str(k): _sanitize(v, defs, depth) for k, v in value.items()}  # type: ignore[union-attr]
            out["properties"] = {**(_as_dict(out.get("properties")) or {}), **own}  # beside allOf's
        elif key == "items":
            out["items"] = _sanitize(value[0] if isinstance(value, list) and value else value, defs, depth)  # type: ignore[index]
        elif key == "format":
            lowered = str(kind).lower() if isinstance(kind, str) else ""
            if value in _FORMATS.get(lowered, ()):
                out["format"] = value
        elif key == "enum" and isinstance(value, list):
            if all(isinstance(v, str) for v in value):  # type: ignore[union-attr]
                out["enum"] = value
            else:  # Gemini enums are strings only: state the allowed values instead
                allowed = ", ".join(msgspec.json.encode(v).decode() for v in value)  # type: ignore[union-attr]
                note = f"Allowed values: {allowed}."
                desc = out.get("description") or node.get("description")
                out["description"] = f"{desc} {note}" if desc else note
        elif key == "required" and isinstance(value, list):
            names: list[Any] = [*(_as_list(out.get("required")) or []), *cast("list[Any]", value)]
            out["required"] = list(dict.fromkeys(names))
        elif key == "description" and "description" in out:
            continue  # already extended with enum values
        else:
            out[key] = value
    props = _as_dict(out.get("properties"))
    required = _as_list(out.get("required"))
    if required is not None and props is not None:
        out["required"] = [r for r in required if r in props]
    if nullable:
        out["nullable"] = True
    return out
