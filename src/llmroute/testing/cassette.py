"""Cassettes: vcrpy-format YAML (load, save scrubbed and scanned, inspect), and a compact JSON
form the core reads without PyYAML (the recordings ``llmroute demo`` ships as package data)."""

from __future__ import annotations

import gzip
import importlib
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..route.redact import REDACTED, SECRET_PATTERN, collect_secrets, is_secret_name, redact_url

__all__ = [
    "Cassette",
    "CassetteSecretError",
    "Interaction",
    "RecordedRequest",
    "RecordedResponse",
    "find_secrets",
]

_REDACTABLE = {"REDACTED", REDACTED, "", "DUMMY", "dummy", "test", "x"}
_SCRUBBED_RESPONSE_HEADERS = frozenset({"set-cookie", "cookie"})


class CassetteSecretError(Exception):
    """A cassette still holds something that looks like a credential; it was not written."""


class RecordedRequest(msgspec.Struct):
    """A request as recorded (secrets scrubbed)."""

    method: str
    """The HTTP method."""
    url: str
    """The URL."""
    headers: dict[str, list[str]]
    """Headers by name, each with every value."""
    body: bytes
    """The body bytes."""

    def json(self) -> Any:
        return msgspec.json.decode(self.body) if self.body else None


class RecordedResponse(msgspec.Struct):
    """A response as recorded."""

    status: int
    """The HTTP status."""
    headers: dict[str, list[str]]
    """Headers by name, each with every value."""
    body: bytes
    """The whole body."""

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None


class Interaction(msgspec.Struct):
    """One request and the response it got."""

    request: RecordedRequest
    """What was sent."""
    response: RecordedResponse
    """What came back."""


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("llmroute.testing needs PyYAML: pip install 'llmroute[test]'") from exc
    return yaml


def _text_or_bytes(body: bytes) -> str | bytes:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, dict):
        value = value.get("string")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")  # pyright: ignore[reportUnknownArgumentType]


def _headers(raw: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(raw, dict):
        for k, v in raw.items():  # pyright: ignore[reportUnknownVariableType]
            out[str(k).lower()] = [str(x) for x in v] if isinstance(v, list) else [str(v)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return out


def _decompress(body: bytes, headers: dict[str, list[str]]) -> bytes:
    """The body as the client reads it: vcrpy without ``decode_compressed_response`` keeps the
    compressed bytes and ``Content-Encoding``. Decoded here (gzip and deflate; br and zstd when
    ``brotli`` / ``zstandard`` is installed), and the header dropped, so replays serve JSON and
    SSE, not gzip. A body that is not actually compressed is kept as it is."""
    codings = [c.strip().lower() for v in headers.get("content-encoding", ()) for c in v.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings or not body:
        return body
    for coding in reversed(codings):
        body = _decode_one(coding, body)
    headers.pop("content-encoding", None)
    headers.pop("content-length", None)
    return body


def _decode_one(coding: str, body: bytes) -> bytes:
    if coding in ("gzip", "x-gzip"):
        if not body.startswith(b"\x1f\x8b"):
            return body  # already decoded by whoever saved it
        return gzip.decompress(body)
    if coding == "deflate":
        for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):  # zlib-wrapped, or raw as some servers send
            try:
                return zlib.decompress(body, wbits)
            except zlib.error:
                continue
        return body
    module = {"br": ("brotli", "brotlicffi"), "zstd": ("zstandard",)}.get(coding)
    if module is None:
        raise ValueError(
            f"cassette body has Content-Encoding {coding!r}, which llmroute.testing cannot decode"
        )
    for name in module:
        try:
            lib = importlib.import_module(name)
        except ImportError:
            continue
        if coding == "br":
            return lib.decompress(body)
        return lib.ZstdDecompressor().decompressobj().decompress(body)
    raise ValueError(f"cassette body has Content-Encoding {coding!r}: pip install {module[0]} to replay it")


def _status(status: Any) -> int:
    if isinstance(status, dict):
        return int(status.get("code", 200))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return int(status)


class Cassette:
    """Interactions in call order. ``metadata`` holds provenance (not part of vcrpy's format)."""

    def __init__(self, interactions: Sequence[Interaction], metadata: dict[str, Any] | None = None) -> None:
        self.interactions = list(interactions)
        self.metadata = metadata or {}

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        yaml = _yaml()
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)
        interactions: list[Interaction] = []
        for item in data.get("interactions", []):
            req, resp = item["request"], item["response"]
            status: Any = resp.get("status", {})
            response_headers = _headers(resp.get("headers"))
            response_body = _decompress(_as_bytes(resp.get("body")), response_headers)
            interactions.append(
                Interaction(
                    RecordedRequest(
                        str(req.get("method", "POST")),
                        str(req.get("uri", "")),
                        _headers(req.get("headers")),
                        _as_bytes(req.get("body")),
                    ),
                    RecordedResponse(_status(status), response_headers, response_body),
                )
            )
        return cls(interactions, data.get("llmroute_metadata") or {})

    @classmethod
    def from_json(cls, data: bytes) -> Cassette:
        """The JSON form (``to_json``): msgspec-decoded, bodies base64 as msgspec encodes bytes."""
        stored = _json_decoder.decode(data)
        return cls(stored.interactions, stored.metadata)

    def to_json(self) -> bytes:
        """Compact JSON; scrubbed and scanned like ``save`` (refuses to hold a credential)."""
        cassette = self.scrubbed()
        data = msgspec.json.format(
            msgspec.json.encode(_Stored(cassette.interactions, cassette.metadata)), indent=1
        )
        problems = find_secrets(cassette, _decoded_text(cassette), _request_secrets(self))
        if problems:
            raise CassetteSecretError("refusing to write: " + "; ".join(problems))
        return data

    def to_vcr_dict(self) -> dict[str, Any]:
        return {
            "interactions": [
                {
                    "request": {
                        "body": _text_or_bytes(i.request.body),
                        "headers": i.request.headers,
                        "method": i.request.method,
                        "uri": i.request.url,
                    },
                    "response": {
                        "body": {"string": _text_or_bytes(i.response.body)},
                        "headers": i.response.headers,
                        "status": {"code": i.response.status, "message": _REASONS.get(i.response.status, "")},
                    },
                }
                for i in self.interactions
            ],
            "version": 1,
            **({"llmroute_metadata": self.metadata} if self.metadata else {}),
        }

    def scrubbed(self) -> Cassette:
        """Credentials removed from request headers, URLs and response cookies."""
        out: list[Interaction] = []
        for i in self.interactions:
            headers = {k: ([REDACTED] if is_secret_name(k) else v) for k, v in i.request.headers.items()}
            rheaders = {k: v for k, v in i.response.headers.items() if k not in _SCRUBBED_RESPONSE_HEADERS}
            out.append(
                Interaction(
                    RecordedRequest(i.request.method, redact_url(i.request.url), headers, i.request.body),
                    RecordedResponse(i.response.status, rheaders, i.response.body),
                )
            )
        return Cassette(out, self.metadata)

    def save(self, path: str | Path, *, scrub: bool = True) -> None:
        """Write as vcrpy YAML. Refuses (``CassetteSecretError``) if a secret survives scrubbing."""
        cassette = self.scrubbed() if scrub else self
        yaml = _yaml()
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump(
            cassette.to_vcr_dict(), Dumper=dumper, allow_unicode=True, sort_keys=False, width=120
        )
        problems = find_secrets(cassette, text, _request_secrets(self))
        if problems:
            raise CassetteSecretError(f"refusing to write {path}: " + "; ".join(problems))
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


class _Stored(msgspec.Struct):
    interactions: list[Interaction]
    metadata: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])


_json_decoder = msgspec.json.Decoder(_Stored)


def _decoded_text(cassette: Cassette) -> str:
    # The scan must see bodies as text: in the JSON form they are base64.
    return "\n".join(
        i.request.body.decode("utf-8", "replace") + "\n" + i.response.body.decode("utf-8", "replace")
        for i in cassette.interactions
    )


def find_secrets(cassette: Cassette, serialized: str | None = None, known: Iterable[str] = ()) -> list[str]:
    """Where a credential may remain. Descriptions only: the secret itself is never echoed.
    ``known`` are the credential values the requests carried before scrubbing: any of them left
    in ``serialized`` (e.g. echoed by an error body) is refused whatever its shape."""
    problems: list[str] = []
    for n, i in enumerate(cassette.interactions):
        for name, values in i.request.headers.items():
            if is_secret_name(name) and any(v not in _REDACTABLE for v in values):
                problems.append(f"interaction {n}: request header {name!r} holds a credential")
        for name in i.response.headers:
            if name in _SCRUBBED_RESPONSE_HEADERS:
                problems.append(f"interaction {n}: response header {name!r} is kept")
        query = i.request.url.partition("?")[2]
        for pair in query.split("&"):
            key, _, value = pair.partition("=")
            if is_secret_name(key) and value not in _REDACTABLE and value != "%5BREDACTED%5D":
                problems.append(f"interaction {n}: query parameter {key!r} holds a credential")
    if serialized is not None:
        for value in known:
            at = serialized.find(value) if len(value) >= _MIN_KNOWN else -1
            if at >= 0:
                problems.append(f"a credential value the request carried appears at offset {at}")
        for match in SECRET_PATTERN.finditer(serialized):
            if not re.fullmatch(r"Bearer\s+\[?REDACTED\]?", match.group(0)):
                problems.append(f"text shaped like a credential at offset {match.start()}")
    return problems


_MIN_KNOWN = 8  # shorter values (test keys like "test") would match ordinary text


def _request_secrets(cassette: Cassette) -> set[str]:
    """Credential values in the (unscrubbed) requests: secret-named headers and query values."""
    found: set[str] = set()
    for i in cassette.interactions:
        headers = {k: v for k, values in i.request.headers.items() for v in values}
        found.update(collect_secrets(headers, i.request.url))
    return found


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Overloaded",
}
