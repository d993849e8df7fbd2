"""One request and one real recording per registered wire protocol, pointed at any base URL.

The hostile-bytes tests (``tests/reliability/test_hostile.py``) serve these recordings, mutated, from
a real 127.0.0.1 server; the fuzz suite (``tests/fuzz``) feeds them in-process.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import llmroute
from llmroute.providers.registry import PROTOCOLS as REGISTERED
from llmroute.providers.registry import ProtocolEntry
from llmroute.testing import Cassette

from .helpers import CASSETTES

__all__ = ["EVENTSTREAM", "PROTOCOLS", "SSE", "WireCase", "frames"]

SSE = {"content-type": "text/event-stream"}
EVENTSTREAM = {"content-type": "application/vnd.amazon.eventstream"}


@dataclass(frozen=True)
class WireCase:
    name: str
    cassette: str
    make: Callable[[str], llmroute.LLMRequest]  # origin ("http://127.0.0.1:PORT") -> request
    headers: dict[str, str]

    def body(self) -> bytes:
        return Cassette.load(CASSETTES / self.cassette).interactions[0].response.body

    def request(self, origin: str) -> llmroute.LLMRequest:
        return self.make(origin)


def _case(entry: ProtocolEntry) -> WireCase:
    def make(origin: str) -> llmroute.LLMRequest:
        return llmroute.request(model=entry.sample(origin), prompt="hi")

    return WireCase(entry.name, entry.stream, make, {"content-type": entry.content_type})


# one case per registered protocol, keyed by its NAME (``llmroute.providers.registry``)
PROTOCOLS = {entry.name: _case(entry) for entry in REGISTERED}


def frames(body: bytes) -> list[bytes]:
    """An AWS event-stream body cut into its frames (each starts with its total length)."""
    out: list[bytes] = []
    while body:
        (total,) = struct.unpack(">I", body[:4])
        out.append(body[:total])
        body = body[total:]
    return out
