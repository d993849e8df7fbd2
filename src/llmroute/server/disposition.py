"""One request's fields that only one upstream API has, as an inbound dialect lowers them: carried in
that API's provider-options namespace (which only its protocols read, so nothing of it reaches
another API), reported with a ``RequestWarning`` for the targets that do not take it when the
answer means the same without it, refused by name when it would not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..schema.errors import InvalidRequestError
from ..schema.notices import RequestWarning
from ..schema.request import LLMRequest
from .upstream import Upstream

__all__ = ["Dispositions", "Lowered"]


class Lowered(msgspec.Struct, frozen=True):
    """A decoded request, and what the gateway reports about it."""

    request: LLMRequest
    """The request for the upstream call."""
    warnings: tuple[RequestWarning, ...] = ()
    """Fields the upstream does not take, left out (the answer means the same without them)."""
    searches: bool = False
    """The client declared its API's web search tool and the gateway's own search serves it."""


class Dispositions:
    """``family``: the protocols whose API the client speaks; ``namespace``: their provider options."""

    def __init__(self, upstream: Upstream, family: frozenset[str], namespace: str) -> None:
        self.upstream = upstream
        self.native = upstream.some(family)  # carry the API's own fields
        self.elsewhere = upstream.others(family)  # the targets that would not take them
        self.namespace = namespace
        self.options: dict[str, Any] = {}
        self.warnings: list[RequestWarning] = []

    def warn(self, option: str, why: str) -> None:
        self.warnings.append(RequestWarning(option, self.elsewhere or "gateway", why))

    def carry(
        self,
        field: str,
        value: Any,
        *,
        reported: Mapping[str, str],
        refused: Mapping[str, str],
        key: str | None = None,
    ) -> None:
        """An API-only ``field``: carried (as ``key``, default ``field``) to targets of that API,
        reported (a reason in ``reported``) or refused (in ``refused``) for the others."""
        if value is None:
            return
        if self.elsewhere:
            why = refused.get(field)
            if why is not None:
                raise InvalidRequestError(
                    f"{field}: not available through this model ({self.elsewhere}): {why}",
                    param=field,
                    code="unsupported_parameter",
                )
            self.warn(field, reported[field])
        if self.native:
            self.options[key or field] = value

    def lowered(self, request: LLMRequest, *, searches: bool = False) -> Lowered:
        if self.options:
            given = dict(request.provider_options or {})
            given[self.namespace] = {**given.get(self.namespace, {}), **self.options}
            request = msgspec.structs.replace(request, provider_options=given)
        return Lowered(request, tuple(self.warnings), searches)
