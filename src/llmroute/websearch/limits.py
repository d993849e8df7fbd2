"""Size and time limits of one grounded search, and the typed error when one is passed.

The query and prompt limits are checked before any request is sent. The response cap and the wall
clock are enforced by the core (``max_response_bytes`` closes the connection at once; a cancel scope
bounds the whole search, provider fallback included); ``SearchLimits.exceeded`` turns the core's
errors into the same ``LimitExceeded`` so a caller sees one error type with one of four codes.
"""

from __future__ import annotations

import builtins
from collections.abc import Generator
from contextlib import contextmanager
from typing import Literal

import anyio
import msgspec

from ..protocols._offsets import utf16_units
from ..schema.errors import InvalidRequestError, LLMError, ResponseTooLargeError, TimeoutError

__all__ = ["LimitCode", "LimitExceeded", "SearchLimits"]

LimitCode = Literal["QUERY_TOO_LONG", "PROMPT_TOO_LARGE", "RESPONSE_TOO_LARGE", "SEARCH_TIMEOUT"]


class LimitExceeded(LLMError):
    """A search limit was passed. ``code`` is the ``LimitCode``; ``limit`` and ``actual`` are in
    ``unit`` (``actual`` is ``None`` when it is unknown, e.g. a body cut off at the cap). Never
    retried, and the message never quotes the query or the prompt."""

    code: LimitCode  # pyright: ignore[reportIncompatibleVariableOverride]

    def __init__(
        self, code: LimitCode, *, limit: float, actual: float | None, unit: str, message: str
    ) -> None:
        super().__init__(message, code=code, retryable=False)
        self.code = code
        self.limit = limit
        self.actual = actual
        self.unit = unit


class SearchLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Caps on one search; passing one is a ``LimitExceeded``."""

    max_query_units: int = 32_768
    """Query length, in UTF-16 code units."""
    max_prompt_bytes: int = 98_304
    """System and user prompt together, in UTF-8 bytes."""
    max_response_bytes: int = 50 * 1024 * 1024
    """The provider's response body, in bytes."""
    timeout: float = 600.0
    """Seconds of wall clock for the whole search, retries and fallback included."""

    def __post_init__(self) -> None:
        for name in ("max_query_units", "max_prompt_bytes", "max_response_bytes", "timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise InvalidRequestError(f"SearchLimits.{name} must be a positive number, got {value!r}")

    def check_query(self, query: str) -> None:
        """Raise ``LimitExceeded("QUERY_TOO_LONG")`` when the query is too long."""
        units = utf16_units(query)
        _at_most("QUERY_TOO_LONG", "query", units, self.max_query_units, "UTF-16 code units")

    def check_prompt(self, *parts: str) -> None:
        """Raise ``LimitExceeded("PROMPT_TOO_LARGE")`` when the prompt parts (system, user) together
        are too large."""
        size = sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)
        _at_most("PROMPT_TOO_LARGE", "search prompt", size, self.max_prompt_bytes, "UTF-8 bytes")

    def exceeded(self, error: BaseException) -> LimitExceeded | None:
        """The ``LimitExceeded`` a core error stands for (response cap: ``RESPONSE_TOO_LARGE``; a
        total deadline or the wall clock: ``SEARCH_TIMEOUT``), else ``None``."""
        if isinstance(error, LimitExceeded):
            return error
        if isinstance(error, ResponseTooLargeError):
            return LimitExceeded(
                "RESPONSE_TOO_LARGE",
                limit=error.limit,
                actual=None,
                unit="bytes",
                message=f"search response passed {error.limit:,} bytes; the connection was closed",
            )
        if (isinstance(error, TimeoutError) and error.deadline == "total") or type(
            error
        ) is builtins.TimeoutError:
            return self._timed_out()
        return None

    @contextmanager
    def wall_clock(self) -> Generator[None, None, None]:
        """Bound the enclosed search by ``timeout`` seconds; on expiry it is cancelled and
        ``LimitExceeded("SEARCH_TIMEOUT")`` is raised."""
        try:
            with anyio.fail_after(self.timeout):
                yield
        except builtins.TimeoutError as exc:
            raise self._timed_out() from exc

    def _timed_out(self) -> LimitExceeded:
        return LimitExceeded(
            "SEARCH_TIMEOUT",
            limit=self.timeout,
            actual=None,
            unit="seconds",
            message=f"search did not finish within {self.timeout:g} s",
        )


def _at_most(code: LimitCode, what: str, actual: int, limit: int, unit: str) -> None:
    if actual > limit:
        raise LimitExceeded(
            code,
            limit=limit,
            actual=actual,
            unit=unit,
            message=f"{what} is {actual:,} {unit}; the limit is {limit:,}",
        )
