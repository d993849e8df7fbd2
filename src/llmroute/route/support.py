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
from ..schema.options import CachePolicy
from ..schema.request import LLMRequest
from ..schema.tools import HostedTool

__all__ = [
    "ALWAYS_CONSTRAINED",
    "AUTO_CACHE",
    "FOREIGN_HOSTED",
    "Support",
    "apply_support",
    "breakpoint_cache",
    "hosted_parts",
    "no_field",
    "refusal",
]

# the sentence for ``cache`` on providers whose prompt caching is automatic
AUTO_CACHE = "this provider caches repeated prompt prefixes by itself; there are no breakpoints to send"


def breakpoint_cache(api: str) -> dict[str, str]:
    """``unsent`` entries for the parts of a ``CachePolicy`` an API that caches by breakpoints
    (Anthropic, Bedrock) has no use for: a key, an explicit cache, a lifetime over an hour."""
    return {
        "cache.key": f"{api} caches by breakpoints, not by a key",
        "cache.explicit": f"{api} caches what its breakpoints mark; there is no separate cache to create",
        "cache.ttl.24h": f"{api} keeps a cached prefix at most an hour: sent as 1h",
    }


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


def refusal(route: str, option: str, why: str) -> InvalidRequestError:
    """The error for an option ``route`` cannot honour (``param`` names the option)."""
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


def _cache_gaps(
    policy: CachePolicy, unsent: Mapping[str, str], route: str
) -> tuple[CachePolicy, list[RequestWarning]]:
    """The parts of a cache policy this route leaves out (``cache.key``, ``cache.explicit``,
    ``cache.ttl`` for any value, ``cache.ttl.<value>`` for one, ``cache.ttl.implicit`` for a
    lifetime without an explicit cache): a warning each; the key and the explicit cache dropped
    (a lifetime stays: the lowering sends the nearest it has, as its warning says)."""
    warnings: list[RequestWarning] = []
    dropped: dict[str, Any] = {}
    if policy.key is not None and "cache.key" in unsent:
        warnings.append(RequestWarning("cache.key", route, unsent["cache.key"]))
        dropped["key"] = None
    explicit = policy.explicit
    if explicit and "cache.explicit" in unsent:
        warnings.append(RequestWarning("cache.explicit", route, unsent["cache.explicit"]))
        dropped["explicit"] = explicit = False
    if policy.ttl is not None:
        why = unsent.get(f"cache.ttl.{policy.ttl}") or unsent.get("cache.ttl")
        if why is None and not explicit:
            why = unsent.get("cache.ttl.implicit")
        if why is not None:
            warnings.append(RequestWarning("cache.ttl", route, why))
    return (msgspec.structs.replace(policy, **dropped) if dropped else policy), warnings


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
            raise refusal(route, f"tool_choice={choice.mode!r}", refused[option])

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
            raise refusal(route, option, why)

    g = request.generation
    if g is not None:
        dropped: dict[str, None] = {}
        for name in g.__struct_fields__:
            option = f"generation.{name}"
            if getattr(g, name) is None:
                continue
            if option in refused:
                raise refusal(route, option, refused[option])
            if option in unsent:
                warnings.append(RequestWarning(option, route, unsent[option]))
                dropped[name] = None
        if dropped:
            changes["generation"] = msgspec.structs.replace(g, **dropped)

    out = request.output_schema
    if out is not None and not out.strict and "output_schema.strict" in unsent:
        warnings.append(RequestWarning("output_schema.strict", route, unsent["output_schema.strict"]))

    if request.cache is not None and "cache" not in unsent and "cache" not in refused:
        policy, gaps = _cache_gaps(request.cache, unsent, route)
        warnings.extend(gaps)
        if policy is not request.cache:
            changes["cache"] = policy
    for name in ("cache", "output_schema", "json_mode"):
        if not getattr(request, name, None):
            continue
        if name in refused:
            raise refusal(route, name, refused[name])
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
