"""Media types read from the bytes themselves (magic numbers), for payloads that arrive without one."""

from __future__ import annotations

import base64
import binascii

__all__ = ["sniff", "sniff_base64"]

# (offset, magic, media type); RIFF and ISO-BMFF containers name their format a few bytes in
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (8, b"WAVE", "audio/wav"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"\xff\xf2", "audio/mpeg"),
    (4, b"ftypavif", "image/avif"),
    (4, b"ftypheic", "image/heic"),
    (4, b"ftypM4A", "audio/mp4"),
    (4, b"ftyp", "video/mp4"),
    (0, b"\x1aE\xdf\xa3", "video/webm"),
)
_RIFF = (b"WEBP", b"WAVE")
HEAD = 32  # bytes enough for every magic above


def sniff(data: bytes) -> str | None:
    """The media type the first bytes announce, or ``None`` when they announce none we know."""
    for offset, magic, mime in _MAGIC:
        if data.startswith(magic, offset) and (magic not in _RIFF or data.startswith(b"RIFF")):
            return mime
    return None


def sniff_base64(data: str) -> str | None:
    """``sniff`` on base64 text, decoding only its head."""
    head = data[: HEAD // 3 * 4].strip()
    try:
        return sniff(base64.b64decode(head + "=" * (-len(head) % 4)))
    except (binascii.Error, ValueError):
        return None
