"""``llmroute.image()`` / ``file()``: bytes, paths, URLs, data: URLs and base64, with the media type
sniffed from the bytes or the suffix, and clear errors for everything else."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

import llmroute
from llmroute.media import sniff_mime_type

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 8
PDF = b"%PDF-1.7\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 "


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (b"GIF89a..", "image/gif"),
        (WEBP, "image/webp"),
        (PDF, "application/pdf"),
        (WAV, "audio/wav"),
        (b"ID3\x04", "audio/mpeg"),
        (b"OggS\x00", "audio/ogg"),
        (b"\x00\x00\x00\x18ftypheic", "image/heic"),
        (b"\x00\x00\x00\x18ftypisom", "video/mp4"),
        (b"plain", None),
    ],
)
def test_sniffing(data: bytes, mime: str | None) -> None:
    assert sniff_mime_type(data) == mime


def test_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert llmroute.image(PNG) == llmroute.MediaPart("image/png", PNG)
    path = tmp_path / "chart.png"
    path.write_bytes(PNG)
    assert llmroute.image(path) == llmroute.MediaPart("image/png", PNG, "chart.png")
    monkeypatch.chdir(tmp_path)
    assert llmroute.image("chart.png") == llmroute.MediaPart("image/png", PNG, "chart.png")
    notes = tmp_path / "notes.pdf"
    notes.write_bytes(b"no signature")  # the suffix decides when the bytes do not
    assert llmroute.file(notes).mime_type == "application/pdf"
    url = llmroute.image("https://example.test/img/cat.JPG?sig=abc")
    assert url.is_url and url.mime_type == "image/jpeg"
    assert llmroute.file("gs://bucket/report.pdf").mime_type == "application/pdf"
    b64 = base64.b64encode(JPEG).decode()
    assert llmroute.image(b64) == llmroute.MediaPart("image/jpeg", b64)
    wrapped = b64[:8] + "\n" + b64[8:]
    assert llmroute.image(wrapped).data == b64
    assert (
        llmroute.image(f"data:image/webp;base64,{base64.b64encode(WEBP).decode()}").mime_type == "image/webp"
    )
    assert llmroute.file(WAV).mime_type == "audio/wav"
    assert llmroute.image(b"raw", "image/png").mime_type == "image/png"  # explicit wins


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: llmroute.image("hello world"), "a str must be an http(s)/gs URL"),
        (lambda: llmroute.image("photo.png"), "no such file: 'photo.png'"),
        (lambda: llmroute.image("https://example.test/image"), "cannot tell the media type"),
        (lambda: llmroute.image(b"not an image"), "cannot tell the media type"),
        (lambda: llmroute.image(PDF), "application/pdf is not an image"),
        (lambda: llmroute.image(""), "empty data"),
        (lambda: llmroute.image(42), "got int"),
        (lambda: llmroute.file("data:text/plain,hello"), "only base64 data: URLs"),
        (lambda: llmroute.image(Path("/nonexistent/x.png")), "cannot read"),
    ],
)
def test_bad_sources(call: Any, fragment: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as err:
        call()
    assert fragment in str(err.value)
    assert err.value.param in ("image", "file")
