"""The framing seam: bytes in, frames out, independent of chunk boundaries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["FrameDecoder", "Framing"]

F_co = TypeVar("F_co", covariant=True)


class FrameDecoder(Protocol[F_co]):
    def feed(self, chunk: bytes) -> Sequence[F_co]:
        """Consume ``chunk``; return every frame it completes (in order)."""
        ...

    def close(self) -> Sequence[F_co]:
        """End of input: return what the format says to flush, or raise on a truncated frame."""
        ...


class Framing(Protocol[F_co]):
    name: str

    def decoder(self) -> FrameDecoder[F_co]: ...
