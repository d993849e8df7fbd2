"""Media input parts from whatever the caller has: ``llmroute.image()`` and ``llmroute.file()``.

A source is raw ``bytes``, a ``pathlib.Path`` or a path string (read now), an ``http(s)://`` or
``gs://`` URL (sent as a reference), a ``data:`` URL, or base64 text. The media type is sniffed
from the bytes' signature, else guessed from the file or URL suffix; ``mime_type=`` overrides.
A string that is neither a URL, an existing path nor valid base64 is an ``InvalidRequestError``.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit

from .schema.content import MediaPart
from .schema.errors import InvalidRequestError

__all__ = ["MediaSource", "file", "image", "sniff_mime_type"]

MediaSource = bytes | str | os.PathLike[str]

_URL_SCHEMES = ("http://", "https://", "gs://")

# Leading bytes of the formats providers accept; (offset, signature, mime type).
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"OggS", "audio/ogg"),
    (4, b"ftypheic", "image/heic"),
    (4, b"ftypheif", "image/heif"),
    (4, b"ftypM4A", "audio/mp4"),
    (4, b"ftyp", "video/mp4"),
)
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}


def sniff_mime_type(data: bytes) -> str | None:
    """The media type from the leading bytes, or ``None`` when unknown."""
    if data[:4] == b"RIFF":
        return _RIFF.get(data[8:12])
    for offset, signature, mime in _SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return mime
    return None


def _bad(param: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{param}: {message}", param=param)


def _guess(name: str) -> str | None:
    return mimetypes.guess_type(name, strict=False)[0]


def _from_data_url(text: str, param: str) -> tuple[str, str]:
    header, sep, payload = text.partition(",")
    if not sep or not header.endswith(";base64"):
        raise _bad(param, "only base64 data: URLs are supported (data:<type>;base64,<payload>)")
    _decode(payload, param)
    return header[len("data:") : -len(";base64")], payload


def _decode(text: str, param: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(
            param, "a str must be an http(s)/gs URL, a data: URL, an existing file path or base64 data"
        ) from None


def _media(
    source: MediaSource, mime_type: str | None, filename: str | None, param: str, kind: str | None
) -> MediaPart:
    value = cast(object, source)  # checked at run time: callers pass anything
    data: bytes | str
    sniffed: str | None = None
    if isinstance(value, bytes | bytearray):
        data = bytes(value)
        sniffed = sniff_mime_type(data)
    elif isinstance(value, os.PathLike) or (isinstance(value, str) and _is_path(value)):
        path = Path(cast("str | os.PathLike[str]", value)).expanduser()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise _bad(param, f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
        sniffed = sniff_mime_type(data) or _guess(path.name)
        filename = filename or path.name
    elif not isinstance(value, str):
        raise _bad(param, f"expected bytes, a path, a URL or base64 text, got {type(value).__name__}")
    elif value.startswith(_URL_SCHEMES):
        data = value
        sniffed = _guess(unquote(urlsplit(value).path))
    elif value.startswith("data:"):
        sniffed, data = _from_data_url(value, param)
    else:
        data = "".join(value.split())  # base64 wrapped over lines
        if not data:
            raise _bad(param, "empty data")
        try:
            sniffed = sniff_mime_type(_decode(data, param)[:16])
        except InvalidRequestError:
            if _guess(value) or os.sep in value:
                raise _bad(param, f"no such file: {value!r}") from None
            raise
    mime = mime_type or sniffed
    if mime is None:
        raise _bad(param, "cannot tell the media type; pass mime_type=... (e.g. 'image/jpeg')")
    if kind is not None and not mime.startswith(kind):
        raise _bad(param, f"{mime} is not an {kind.rstrip('/')} (use llmroute.file for other media)")
    return MediaPart(mime, data, filename)


def _is_path(text: str) -> bool:
    # A short string naming an existing file; base64 payloads are long and never exist as paths.
    if len(text) > 4096 or "\n" in text or text.startswith((*_URL_SCHEMES, "data:")):
        return False
    try:
        return Path(text).expanduser().is_file()
    except (OSError, ValueError):
        return False


def image(source: MediaSource, mime_type: str | None = None, *, filename: str | None = None) -> MediaPart:
    """An image part: ``image(Path("chart.png"))``, ``image(png_bytes)``, ``image("https://...")``."""
    return _media(source, mime_type, filename, "image", "image/")


def file(source: MediaSource, mime_type: str | None = None, *, filename: str | None = None) -> MediaPart:
    """A document, audio or video part (a PDF, a WAV, ...): same sources as ``image``."""
    return _media(source, mime_type, filename, "file", None)
