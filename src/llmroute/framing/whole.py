"""The whole-body framing: a non-streamed response is one frame, its complete body.

``feed`` keeps the bytes and completes nothing; ``close`` returns the body as the single frame the
protocol's ``whole`` handler decodes. The executor caps how many bytes are kept
(``max_response_bytes``), so this decoder never grows without bound.
"""

from __future__ import annotations

__all__ = ["WHOLE_BODY", "WholeBodyDecoder", "WholeBodyFraming"]


class WholeBodyDecoder:
    __slots__ = ("_chunks",)

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        self._chunks.append(chunk)
        return []

    def close(self) -> list[bytes]:
        body = b"".join(self._chunks)
        self._chunks = []
        return [body]  # an empty body is still a frame: the handler says why it is not a response


class WholeBodyFraming:
    name = "whole-body"

    def decoder(self) -> WholeBodyDecoder:
        return WholeBodyDecoder()

    def __repr__(self) -> str:
        return "WholeBodyFraming()"


WHOLE_BODY = WholeBodyFraming()
