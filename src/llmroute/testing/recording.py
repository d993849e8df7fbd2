"""Record and replay with vcrpy: replay by default, record only with ``LLMROUTE_RECORD=1``.

Requests are scrubbed before they are written (auth headers, ``key=`` query parameters, cookies), and
a cassette that still holds anything shaped like a credential is refused. The refusal is raised after
vcrpy has restored httpx, never from inside its save hook (vcrpy leaves httpx patched when saving
fails).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..route.redact import REDACTED, collect_secrets, is_secret_name
from .cassette import Cassette, CassetteSecretError, find_secrets

__all__ = ["RECORD_ENV", "recording_enabled", "use_cassette"]

RECORD_ENV = "LLMROUTE_RECORD"
MATCH_ON = ("method", "scheme", "host", "port", "path", "query", "body")


def _vcr(module: str) -> Any:
    """vcrpy is untyped and optional: load it only when recording or replaying through it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != "vcr":
            raise
        # Still a ModuleNotFoundError (``except ImportError`` keeps working), but naming the extra.
        raise ModuleNotFoundError(
            "llmroute.testing.use_cassette records and replays through vcrpy, which is not installed: "
            "pip install 'llmroute[test]' (or pip install vcrpy)",
            name=exc.name,
        ) from None


def recording_enabled() -> bool:
    return os.environ.get(RECORD_ENV, "") in ("1", "true", "yes")


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers: dict[str, Any] = response.get("headers", {})
    for name in list(headers):
        if name.lower() in ("set-cookie", "cookie"):
            del headers[name]
    return response


def _scrub_request(request: Any) -> Any:
    """Custom credential headers (``x-gateway-key``, ``x-...-token``) too, not only the known names.
    The values are remembered first, so the guard can refuse a response that echoes one back (a
    401 body quoting a 32-hex Azure key or a Gemini ``?key=``)."""
    headers = {str(k): str(v) for k, v in request.headers.items()}
    _Guard.seen.update(collect_secrets(headers, str(request.uri)))
    # by the names the request really carries: vcr matches names case-sensitively, and a presigned
    # URL spells ``X-Amz-Signature`` / ``X-Amz-Credential``
    secret_params = sorted({str(k) for k, _ in request.query if is_secret_name(str(k))})
    request = _vcr("vcr.filters").replace_query_parameters(request, [(q, REDACTED) for q in secret_params])
    for name in list(request.headers):
        if is_secret_name(str(name)):
            request.headers[name] = REDACTED
    return request


class _Guard:
    """Persister that scans before writing and remembers (instead of raising) a refusal."""

    problems: dict[str, list[str]] = {}
    seen: set[str] = set()  # credential values the recorded requests carried

    @classmethod
    def load_cassette(cls, cassette_path: Any, serializer: Any) -> Any:
        persister: Any = _vcr("vcr.persisters.filesystem").FilesystemPersister
        return persister.load_cassette(cassette_path, serializer)

    @classmethod
    def save_cassette(cls, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        text: str = _vcr("vcr.serialize").serialize(cassette_dict, serializer)
        path = Path(cassette_path)
        tmp = path.with_suffix(path.suffix + ".check")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        try:
            problems = find_secrets(Cassette.load(tmp), text, cls.seen)
        finally:
            tmp.unlink(missing_ok=True)
        if problems:
            cls.problems[str(path)] = problems
            return
        path.write_text(text, encoding="utf-8")


@contextmanager
def use_cassette(
    path: str | Path, *, record: bool | None = None, match_on: tuple[str, ...] = MATCH_ON
) -> Generator[Any, None, None]:
    """``with use_cassette("cassettes/x.yaml"):`` around code that talks to a provider through httpx.

    Replays (never touching the network) unless ``record`` or ``LLMROUTE_RECORD=1``; then records
    anew. Raises ``CassetteSecretError`` after the block if the recording was refused.
    """
    record = recording_enabled() if record is None else record
    recorder: Any = _vcr("vcr").VCR(
        record_mode="all" if record else "none",
        before_record_request=_scrub_request,
        before_record_response=_scrub_response,
        match_on=list(match_on),
        decode_compressed_response=True,
        serializer="yaml",
    )
    recorder.register_persister(_Guard)
    key = str(Path(path))
    _Guard.problems.pop(key, None)
    _Guard.seen.clear()
    context: Any = recorder.use_cassette(key)
    with context as cassette:
        yield cassette
    problems = _Guard.problems.pop(key, None)
    if problems:
        raise CassetteSecretError(f"refused to write {key}: " + "; ".join(problems))
