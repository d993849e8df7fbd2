"""``RequestWarning``: an option the route did not send (the answer means the same without it)."""

from __future__ import annotations

import msgspec

__all__ = ["RequestWarning"]


class RequestWarning(msgspec.Struct, frozen=True, gc=False):
    """A request option the route left out of the body, and why.

    Only options whose absence leaves the answer's meaning intact are dropped this way (sampling
    knobs such as ``top_k`` or ``seed``, cache breakpoints on a provider that caches by itself);
    the rest are refused with ``InvalidRequestError`` before anything is sent. Reported on
    ``PreparedRequest.warnings``, the ``step-start`` event and ``LLMResponse.warnings``."""

    option: str
    """The option's path in the request: ``generation.top_k``, ``cache``, ``tools[0].strict``."""
    route: str
    """The route that left it out (``Route.name``)."""
    message: str
    """Why, in a sentence."""

    def __str__(self) -> str:
        return f"{self.route}: {self.option} not sent: {self.message}"
