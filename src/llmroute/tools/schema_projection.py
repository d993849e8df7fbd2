"""JSON Schema for tool inputs and structured output, projected for what providers accept.

``json_schema(T)`` is msgspec's schema for ``T`` with ``$ref``s inlined (providers handle inline
schemas best; only recursive types keep a ``$defs`` table), class-name ``title``s dropped and
``additionalProperties: false`` on every object built from a Struct.

``strict_schema(schema)`` is the OpenAI strict projection (Chat ``strict`` tools, ``response_format``
/ ``text.format`` with ``strict: true``): every property is required, optional ones become nullable
(``anyOf [..., null]``), ``default`` is dropped. ``strip_null_defaults(value, T)`` undoes that on the
way back: a ``null`` the model sent for an optional, non-nullable field means "use the default".

Gemini's restricted dialect is handled by the Gemini protocol itself, on the plain schema.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import msgspec
from msgspec import inspect as mi

__all__ = ["json_schema", "project_schema", "strict_schema", "strip_null_defaults"]

_REF_PREFIX = "#/$defs/"


def json_schema(tp: Any) -> dict[str, Any]:
    """The plain projection of a msgspec type: inline refs, no titles, closed objects."""
    return project_schema(msgspec.json.schema(tp))


def project_schema(raw: dict[str, Any], *, all_titles: bool = False) -> dict[str, Any]:
    """Inline ``#/$defs/`` refs, drop object titles (every title with ``all_titles``: pydantic
    titles each field after its name), close objects. ``raw`` is not modified."""
    raw = dict(raw)
    defs: dict[str, Any] = raw.pop("$defs", {})
    kept: dict[str, Any] = {}

    def inline(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(n, stack) for n in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        node = cast(dict[str, Any], node)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            name = ref[len(_REF_PREFIX) :]
            if name in stack:  # recursive type: keep the reference, ship the definition once
                if name not in kept:
                    kept[name] = None  # placeholder against re-entry
                    kept[name] = inline(defs[name], (*stack, name))
                return {"$ref": ref}
            target = inline(defs[name], (*stack, name))
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return {**target, **inline(extra, stack)} if extra else target
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str) and (all_titles or "properties" in node):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                out[key] = {k: inline(v, stack) for k, v in cast(dict[str, Any], value).items()}
            else:
                out[key] = inline(value, stack)
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out

    schema = cast(dict[str, Any], inline(raw, ()))
    if kept:
        schema["$defs"] = kept
    return schema


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return node
    any_of = node.get("anyOf")
    if isinstance(any_of, list) and any(
        isinstance(n, dict) and cast(dict[str, Any], n).get("type") == "null" for n in cast(list[Any], any_of)
    ):
        return node
    description = node.get("description")
    inner = {k: v for k, v in node.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    return out


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI strict projection of a plain schema (see the module docstring)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in cast(list[Any], node)]
        if not isinstance(node, dict):
            return node
        node = cast(dict[str, Any], node)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "default":
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                out[key] = {k: walk(v) for k, v in cast(dict[str, Any], value).items()}
            else:
                out[key] = walk(value)
        props = out.get("properties")
        if isinstance(props, dict):
            props = cast(dict[str, Any], props)
            required = set(cast(list[str], out.get("required", [])))
            out["properties"] = {
                name: value if name in required else _nullable(cast(dict[str, Any], value))
                for name, value in props.items()
            }
            out["required"] = list(props)
            out["additionalProperties"] = False
        return out

    return cast(dict[str, Any], walk(copy.deepcopy(schema)))


def _accepts_none(t: mi.Type) -> bool:
    if isinstance(t, mi.NoneType | mi.AnyType):
        return True
    if isinstance(t, mi.UnionType):
        return any(_accepts_none(x) for x in t.types)
    if isinstance(t, mi.Metadata):
        return _accepts_none(t.type)
    return False


def strip_null_defaults(value: Any, tp: Any) -> Any:
    """Drop ``null`` values the strict projection allowed for optional fields that do not accept
    ``None`` (so the field's default applies). Returns ``value`` unchanged when nothing applies."""
    return _strip(value, mi.type_info(tp))


def _strip(value: Any, t: mi.Type) -> Any:
    if isinstance(t, mi.Metadata):
        return _strip(value, t.type)
    if isinstance(t, mi.StructType | mi.DataclassType | mi.TypedDictType) and isinstance(value, dict):
        value = cast(dict[str, Any], value)
        out: dict[str, Any] = {}
        for field in t.fields:
            key = field.encode_name
            if key not in value:
                continue
            item = value[key]
            if item is None and not field.required and not _accepts_none(field.type):
                continue
            out[key] = _strip(item, field.type)
        for key, item in value.items():
            if key not in out and not any(f.encode_name == key for f in t.fields):
                out[key] = item
        return out
    if isinstance(t, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType) and isinstance(
        value, list
    ):
        return [_strip(v, t.item_type) for v in cast(list[Any], value)]
    if isinstance(t, mi.DictType) and isinstance(value, dict):
        return {k: _strip(v, t.value_type) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(t, mi.UnionType) and isinstance(value, dict):
        shapes = [x for x in t.types if isinstance(x, mi.StructType | mi.DataclassType | mi.TypedDictType)]
        if len(shapes) == 1:
            return _strip(cast(dict[str, Any], value), shapes[0])
    return cast(Any, value)
