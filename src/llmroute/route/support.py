"""What a protocol does with the request options not every protocol has: one declarative table per
protocol (beside its ``HOSTED_TOOLS``), applied by ``prepare`` before ``build_body`` runs.

Every option is either lowered into the body, or listed here:

- ``unsent``: left out, with a ``RequestWarning`` naming it. Only for options whose absence leaves
  the answer's meaning intact: sampling knobs (``top_k``, ``seed``, penalties, ``stop``), cache
  breakpoints on a provider that caches by itself, ``strict`` on a tool where nothing enforces it.
- ``refused``: an ``InvalidRequestError`` naming the option and the route, before anything is sent,
  because leaving it out would change what the answer means (a tool choice, a hosted tool, a
  modality, structured output).

Options are named by their path in the request: ``generation.top_k``, ``cache``,
``tool_choice.none``, ``tools.strict``. ``tests/unit/test_option_matrix.py`` builds every option
of the schema on every protocol and facade variant and fails on one that is neither lowered, nor
warned about, nor refused, so a new field cannot be dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..schema.content import Part
from ..schema.errors import InvalidRequestError
from ..schema.notices import RequestWarning
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool

__all__ = [
    "ALWAYS_CONSTRAINED",
    "AUTO_CACHE",
    "FOREIGN_HOSTED",
    "Support",
    "apply_support",
    "hosted_parts",
    "no_field",
]

# the sentence for ``cache`` on providers whose prompt caching is automatic
AUTO_CACHE = "this provider caches repeated prompt prefixes by itself; there are no breakpoints to send"


# the sentence for ``output_schema.strict=False`` where the answer is held to the schema regardless
ALWAYS_CONSTRAINED = "the answer is held to the schema either way (a JSON-schema mode or a forced tool)"

# the sentence for hosted (provider-executed) calls and results a protocol cannot replay
FOREIGN_HOSTED = "hosted tool calls this API did not run cannot be replayed; the answer after them stays"


def hosted_parts(why: str = FOREIGN_HOSTED) -> dict[str, str]:
    """``unsent`` entries for hosted tool calls and results in the history (see ``keeps_part``)."""
    return {"parts.tool-call": why, "parts.tool-result": why}


def no_field(api: str, *fields: str) -> dict[str, str]:
    """``unsent`` entries for generation options ``api`` has no field for."""
    return {f"generation.{name}": f"{api} has no {name}" for name in fields}


class Support(msgspec.Struct, frozen=True):
    """A protocol's (or a quirk set's, or a facade variant's) declared gaps. Options in neither
    table are lowered by ``build_body``; a content part type is ``parts.<type>``
    (``parts.reasoning``)."""

    unsent: Mapping[str, str] = msgspec.field(default_factory=dict[str, str])
    """Option path -> why it is not sent (with a ``RequestWarning``)."""
    refused: Mapping[str, str] = msgspec.field(default_factory=dict[str, str])
    """Option path -> why a request using it is refused (``InvalidRequestError``)."""
    keeps_part: Callable[[Part], bool] | None = None
    """The parts of an unsent type the protocol sends all the same (its own reasoning, carrying its ids)."""
    check: Callable[[LLMRequest, str], tuple[LLMRequest, tuple[RequestWarning, ...]]] | None = None
    """A gap that depends on the request as a whole (the route's name is the second argument): the
    request without what the API would refuse in it, and a warning for each thing left out."""

    def with_(
        self, *, unsent: Mapping[str, str] | None = None, refused: Mapping[str, str] | None = None
    ) -> Support:
        """This table with more gaps (a facade variant of a protocol)."""
        return Support(
            {**self.unsent, **(unsent or {})},
            {**self.refused, **(refused or {})},
            self.keeps_part,
            self.check,
        )


# gaps every protocol shares
_UNSENT_EVERYWHERE = {
    "tools.provider_metadata": "no protocol sends a tool definition's provider_metadata",
}


def _refuse(route: str, option: str, why: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"{route}: {option} is not available on this route ({why}); "
        "leaving it out would change what the answer means",
        param=option,
    )


def _unsent_parts(
    request: LLMRequest, unsent: Mapping[str, str], keeps: Callable[[Part], bool] | None, route: str
) -> list[RequestWarning]:
    """One warning per part type the protocol leaves out of the history (it skips them itself)."""
    counts: dict[str, int] = {}
    for message in request.messages:
        for part in message.content:
            option = f"parts.{part.__struct_config__.tag}"
            if option in unsent and not (keeps is not None and keeps(part)):
                counts[option] = counts.get(option, 0) + 1
    return [RequestWarning(option, route, f"{n} left out: {unsent[option]}") for option, n in counts.items()]


def apply_support(
    request: LLMRequest, support: Support, route: str, hosted_kinds: frozenset[str]
) -> tuple[LLMRequest, tuple[RequestWarning, ...]]:
    """``request`` without the options ``support`` leaves unsent (and a warning for each), or an
    ``InvalidRequestError`` for one it refuses. ``request.generation`` is already resolved."""
    unsent, refused = {**_UNSENT_EVERYWHERE, **support.unsent}, support.refused
    warnings: list[RequestWarning] = []
    changes: dict[str, Any] = {}

    choice = request.tool_choice
    if choice is not None:
        option = f"tool_choice.{choice.mode}"
        if option in refused:
            raise _refuse(route, f"tool_choice={choice.mode!r}", refused[option])

    tools = list(request.tools)
    for i, tool in enumerate(tools):
        if isinstance(tool, HostedTool):
            if tool.kind not in hosted_kinds:
                offered = ", ".join(sorted(hosted_kinds)) or "none"
                raise InvalidRequestError(
                    f"{route} has no hosted {tool.kind!r} tool (supported: {offered}); "
                    f"leaving tools[{i}] out would change what the answer means",
                    param=f"tools[{i}]",
                )
            continue
        dropped = {
            name: None
            for name in ("strict", "provider_metadata")
            if getattr(tool, name) is not None and f"tools.{name}" in unsent
        }
        if dropped:
            warnings.extend(RequestWarning(f"tools[{i}].{n}", route, unsent[f"tools.{n}"]) for n in dropped)
            tools[i] = msgspec.structs.replace(tool, **dropped)
    if any(t is not o for t, o in zip(tools, request.tools, strict=True)):
        changes["tools"] = tuple(tools)

    sent_options = request.options_for(str(getattr(request.model, "provider", "")))
    for option, why in refused.items():
        key = option.removeprefix("provider_options.")
        if key != option and key in sent_options:
            raise _refuse(route, option, why)

    g = request.generation
    if g is not None:
        dropped: dict[str, None] = {}
        for name in g.__struct_fields__:
            option = f"generation.{name}"
            if getattr(g, name) is None:
                continue
            if option in refused:
                raise _refuse(route, option, refused[option])
            if option in unsent:
                warnings.append(RequestWarning(option, route, unsent[option]))
                dropped[name] = None
        if dropped:
            changes["generation"] = msgspec.structs.replace(g, **dropped)

    out = request.output_schema
    if out is not None and not out.strict and "output_schema.strict" in unsent:
        warnings.append(RequestWarning("output_schema.strict", route, unsent["output_schema.strict"]))

    for name in ("cache", "output_schema", "json_mode"):
        if not getattr(request, name, None):
            continue
        if name in refused:
            raise _refuse(route, name, refused[name])
        if name in unsent:
            warnings.append(RequestWarning(name, route, unsent[name]))
            changes[name] = None if name != "json_mode" else False

    warnings.extend(_unsent_parts(request, unsent, support.keeps_part, route))
    if changes:
        request = msgspec.structs.replace(request, **changes)
    if support.check is not None:
        request, more = support.check(request, route)
        warnings.extend(more)
    return request, tuple(warnings)
