"""How a tool's parameter type or a structured-output type is described to the model and how the
model's JSON becomes an instance of it.

msgspec types (Structs, dataclasses, TypedDicts, builtins) use msgspec. A pydantic ``BaseModel``
subclass or ``TypeAdapter`` uses pydantic: its JSON Schema (projected like msgspec's) and its
validation. pydantic is optional: it is never imported here; a type can only be a pydantic one if
the caller imported pydantic already. Validation failures of either kind raise ``ValidationFailed``
with a message the model can act on, so both go back to it the same way.
"""

from __future__ import annotations

import sys
from typing import Any, cast

import msgspec

from .schema_projection import json_schema, project_schema, strip_null_defaults

__all__ = ["ValidationFailed", "convert", "is_pydantic", "is_pydantic_model", "schema_of", "to_builtins"]


class ValidationFailed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _pydantic() -> Any:
    return sys.modules.get("pydantic")


def is_pydantic_model(tp: object) -> bool:
    """A ``pydantic.BaseModel`` subclass."""
    pydantic = _pydantic()
    return pydantic is not None and isinstance(tp, type) and issubclass(tp, pydantic.BaseModel)


def is_pydantic(tp: object) -> bool:
    """A ``BaseModel`` subclass or a ``TypeAdapter``."""
    pydantic = _pydantic()
    return pydantic is not None and (isinstance(tp, pydantic.TypeAdapter) or is_pydantic_model(tp))


def schema_of(tp: Any) -> dict[str, Any]:
    """The plain JSON Schema projection (see ``tools.schema_projection``)."""
    if is_pydantic_model(tp):
        return project_schema(tp.model_json_schema(), all_titles=True)
    if is_pydantic(tp):
        return project_schema(tp.json_schema(), all_titles=True)
    return json_schema(tp)


def _strip_pydantic_nulls(value: Any, tp: Any) -> Any:
    # The strict projection made optional fields nullable; a null for a field whose default is
    # not None means "use the default" (as strip_null_defaults does for msgspec types).
    if not is_pydantic_model(tp) or not isinstance(value, dict):
        return value
    fields: dict[str, Any] = tp.model_fields
    items = cast(dict[str, Any], value)
    return {
        k: v
        for k, v in items.items()
        if not (v is None and k in fields and not fields[k].is_required() and fields[k].default is not None)
    }


def convert(value: Any, tp: Any, *, strict_nulls: bool = False) -> Any:
    """``value`` (decoded JSON) as an instance of ``tp``; ``ValidationFailed`` if it does not fit.
    ``strict_nulls``: the schema was the strict projection, so drop nulls standing for defaults."""
    if is_pydantic(tp):
        pydantic = _pydantic()
        if strict_nulls:
            value = _strip_pydantic_nulls(value, tp)
        try:
            if is_pydantic_model(tp):
                return tp.model_validate(value)
            return tp.validate_python(value)
        except pydantic.ValidationError as exc:
            errors = exc.errors(include_url=False)
            detail = "; ".join(
                f"{e['msg']} - at `$.{'.'.join(str(p) for p in e['loc'])}`" if e["loc"] else e["msg"]
                for e in errors
            )
            raise ValidationFailed(detail) from None
    if strict_nulls:
        value = strip_null_defaults(value, tp)
    try:
        return msgspec.convert(value, tp)
    except msgspec.ValidationError as exc:
        raise ValidationFailed(str(exc)) from None


def to_builtins(value: Any) -> Any:
    """A handler's return value as JSON data (pydantic models dumped in JSON mode)."""
    pydantic = _pydantic()
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    return msgspec.to_builtins(value)
