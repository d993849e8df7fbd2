"""Convert the Vercel AI SDK provider fixtures into vcrpy cassettes under ``cassettes/vercel-ai/``.

    python scripts/convert_vercel_fixtures.py [../shared/conformance/vercel-ai]

The fixtures (vercel/ai, Apache-2.0) hold response bodies only. Each becomes a cassette whose
response is what the provider put on the wire, rebuilt byte-faithfully from the fixture:

- ``*.chunks.txt`` (one JSON chunk per line; each line's bytes are kept as they are):
  OpenAI Chat and compatible servers -> ``data: <line>`` SSE events ending in ``data: [DONE]``;
  Anthropic and Responses -> ``event: <type>`` + ``data: <line>`` SSE events; Gemini -> ``data:``
  events separated by ``\\r\\n\\r\\n`` (as Google sends them); Bedrock -> one AWS event-stream frame
  per ``{"<eventType>": payload}`` line, the payload's bytes kept (``:event-type``,
  ``:content-type``, ``:message-type`` headers, valid CRCs; Bedrock's ``p`` padding field is not
  invented).
  A file holding several responses back to back (a new response opening after the previous one's
  terminal event) becomes one interaction per response.
- ``*.json`` -> one JSON response body (HTTP 200, or the error status the body states).
- ``*.sse`` -> the raw SSE text, verbatim.
- WebSocket sessions (realtime speech translation) have no HTTP shape: copied verbatim.

The requests are synthetic (the fixtures carry none): method and URL are where llmroute sends the
request for that provider (so replay checks the route), the body is a placeholder, and the status
and response headers are chosen as documented here; ``llmroute_metadata`` says so in every file,
with the provenance (repository, commit, path, sha256) and the licence. Deterministic: running it
twice writes the same bytes; ``tests/conformance/test_vercel_fixtures.py`` checks the committed
cassettes are current whenever the source folder is present.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from llmroute.framing.eventstream import encode_message
from llmroute.testing.cassette import Cassette, Interaction, RecordedRequest, RecordedResponse

REPOSITORY = "vercel/ai"
COMMIT = "ed857f50f112e23930b0c2dd8d532cc8bebbc911"
LICENCE = "Apache-2.0 (Copyright 2023 Vercel, Inc.; see cassettes/vercel-ai/LICENSE)"
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "cassettes/vercel-ai"
KEEP = frozenset({"LICENSE"})  # hand-maintained files in the output folder

SYNTHETIC = (
    "request synthetic: the fixture holds only a response; method and URL are where llmroute sends "
    "this request, the body is a placeholder; response status and headers chosen by the converter"
)


class Family(NamedTuple):
    """Where one provider's requests go and how its responses are framed on the wire."""

    wire: str  # chat | typed | gemini | bedrock | data
    stream_url: str  # ``{model}`` is replaced
    json_url: str
    protocol: str | None  # the llmroute protocol that speaks it; None: not supported
    default_model: str = ""


_GEMINI = "https://generativelanguage.googleapis.com/v1beta/models/{model}"
_VERTEX = "https://aiplatform.googleapis.com/v1/projects/vercel-fixtures/locations/global/publishers/google/models/{model}"
_BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}"
_AZURE = "https://vercel-fixtures.openai.azure.com/openai/deployments/{model}/chat/completions?api-version=2024-10-21"


def _same(wire: str, url: str, protocol: str | None) -> Family:
    """A family whose streamed and non-streamed requests share one URL (``stream`` in the body)."""
    return Family(wire, url, url, protocol)


FAMILIES: dict[str, Family] = {
    "anthropic": _same("typed", "https://api.anthropic.com/v1/messages", "anthropic-messages"),
    "bedrock": Family(
        "bedrock",
        _BEDROCK + "/converse-stream",
        _BEDROCK + "/converse",
        "bedrock-converse",
        "anthropic.claude-3-haiku-20240307-v1:0",
    ),
    "gemini": Family(
        "gemini", _GEMINI + ":streamGenerateContent?alt=sse", _GEMINI + ":generateContent", "gemini"
    ),
    "vertex": Family(
        "gemini", _VERTEX + ":streamGenerateContent?alt=sse", _VERTEX + ":generateContent", "gemini"
    ),
    "openai-chat": _same("chat", "https://api.openai.com/v1/chat/completions", "openai-chat"),
    "azure-chat": Family("chat", _AZURE, _AZURE, "openai-chat", "model-router"),
    "groq": _same("chat", "https://api.groq.com/openai/v1/chat/completions", "openai-chat"),
    "deepseek": _same("chat", "https://api.deepseek.com/v1/chat/completions", "openai-chat"),
    "xai-chat": _same("chat", "https://api.x.ai/v1/chat/completions", "openai-chat"),
    # the openai-compatible package's recordings: xAI's server, and Anthropic's OpenAI-compatible endpoint
    "compatible-xai": _same("chat", "https://api.x.ai/v1/chat/completions", "openai-chat"),
    "compatible-anthropic": _same("chat", "https://api.anthropic.com/v1/chat/completions", "openai-chat"),
    "openai-responses": _same("typed", "https://api.openai.com/v1/responses", "openai-responses"),
    "copilot-responses": _same("typed", "https://api.githubcopilot.com/responses", "openai-responses"),
    "xai-responses": _same("typed", "https://api.x.ai/v1/responses", "openai-responses"),
    # not supported (see UNSUPPORTED for why): kept so the corpus is complete
    "openai-completions": _same("chat", "https://api.openai.com/v1/completions", None),
    "openai-embeddings": _same("data", "https://api.openai.com/v1/embeddings", None),
    "openai-images": _same("data", "https://api.openai.com/v1/images/generations", None),
    "openai-image-edits": _same("data", "https://api.openai.com/v1/images/edits", None),
    "openai-transcription": _same("data", "https://api.openai.com/v1/audio/transcriptions", None),
    "openai-skills": _same("data", "https://api.openai.com/v1/skills", None),
    "anthropic-skills": _same("data", "https://api.anthropic.com/v1/skills", None),
    "groq-transcription": _same("data", "https://api.groq.com/openai/v1/audio/transcriptions", None),
    "bedrock-rerank": _same("data", "https://bedrock-agent-runtime.us-east-1.amazonaws.com/rerank", None),
    "gemini-interactions": Family(
        "data",
        "https://generativelanguage.googleapis.com/v1beta/interactions?alt=sse",
        "https://generativelanguage.googleapis.com/v1beta/interactions",
        None,
    ),
    "realtime": _same("raw", "", None),
}

# Path prefix (below the source folder) -> family; the first match wins.
RULES: tuple[tuple[str, str], ...] = (
    ("amazon-bedrock/src/reranking/", "bedrock-rerank"),
    ("amazon-bedrock/", "bedrock"),
    ("anthropic/src/skills/", "anthropic-skills"),
    ("anthropic/", "anthropic"),
    ("deepseek/", "deepseek"),
    ("google/src/interactions/", "gemini-interactions"),
    ("google/src/speech-translation/", "realtime"),
    ("google/src/__fixtures__/google-vertex-", "vertex"),
    ("google/", "gemini"),
    ("groq/src/__fixtures__/groq-transcription", "groq-transcription"),
    ("groq/", "groq"),
    ("openai-compatible/src/chat/__fixtures__/xai-", "compatible-xai"),
    ("openai-compatible/src/chat/__fixtures__/anthropic-", "compatible-anthropic"),
    ("openai/src/chat/__fixtures__/azure-", "azure-chat"),
    ("openai/src/chat/", "openai-chat"),
    ("openai/src/completion/", "openai-completions"),
    ("openai/src/embedding/", "openai-embeddings"),
    ("openai/src/image/__fixtures__/openai-image-edit", "openai-image-edits"),
    ("openai/src/image/", "openai-images"),
    ("openai/src/transcription/", "openai-transcription"),
    ("openai/src/skills/", "openai-skills"),
    ("openai/src/speech-translation/", "realtime"),
    ("openai/src/responses/__fixtures__/github-copilot-", "copilot-responses"),
    ("openai/src/responses/", "openai-responses"),
    ("xai/src/responses/", "xai-responses"),
    ("xai/", "xai-chat"),
)

UNSUPPORTED: dict[str, str] = {
    "openai-completions": "legacy Completions API (/v1/completions): superseded by Chat and Responses",
    "openai-embeddings": "embeddings, not a generation stream: replayed by client.embed's tests "
    "(tests/conformance/test_embeddings.py)",
    "openai-images": "image generation API: not a generation stream (media output is separate work)",
    "openai-image-edits": "image edit API: not a generation stream (media output is separate work)",
    "openai-transcription": "audio transcription API: not a generation stream",
    "openai-skills": "Skills management API (uploads), not generation",
    "anthropic-skills": "Skills management API (uploads), not generation",
    "groq-transcription": "audio transcription API: not a generation stream",
    "bedrock-rerank": "Bedrock Rerank API: not a generation API",
    "gemini-interactions": "Gemini Interactions API: a different protocol from generateContent, not implemented",
    "realtime": "realtime audio over WebSocket (Live API / Realtime translation): no HTTP exchange",
}

# Per wire: the event that opens a response and the ones that end it (several back to back split).
_OPENS = {"anthropic": ("message_start",), "responses": ("response.created",), "bedrock": ("messageStart",)}
_ENDS = {
    "anthropic": ("message_stop",),
    "responses": ("response.completed", "response.incomplete", "response.failed"),
    "bedrock": ("messageStop",),
}
_TYPE = re.compile(rb'"type"\s*:\s*"([^"]+)"')  # also finds the type of a line that is not valid JSON


def default_source() -> Path | None:
    """``shared/conformance/vercel-ai`` beside the repository or one of its parents (worktrees)."""
    for parent in ROOT.parents:
        candidate = parent / "shared/conformance/vercel-ai"
        if candidate.is_dir():
            return candidate
    return None


def family_of(rel: str) -> str:
    for prefix, family in RULES:
        if rel.startswith(prefix):
            return family
    raise SystemExit(f"no family for {rel}: add a rule to RULES")


def _kind(line: bytes, family: str) -> str | None:
    """The event name a line carries: ``type`` (Anthropic, Responses) or the Bedrock wrapper key."""
    if family == "bedrock":
        try:
            return next(iter(json.loads(line)))
        except ValueError:
            return None
    match = _TYPE.search(line)
    return match.group(1).decode() if match else None


def split_responses(lines: list[bytes], family: str) -> list[list[bytes]]:
    """Several responses recorded back to back: a new one starts at an opening event that follows a
    terminal event (a second ``message_start`` inside an open message is not one: it is the
    protocol violation some fixtures test, so it stays in the same response)."""
    wire = {"anthropic": "anthropic", "bedrock": "bedrock"}.get(family)
    if wire is None and FAMILIES[family].wire == "typed":
        wire = "responses"
    if wire is None:
        return [lines]
    out: list[list[bytes]] = [[]]
    ended = False
    for line in lines:
        kind = _kind(line, family)
        if ended and kind in _OPENS[wire]:
            out.append([])
            ended = False
        out[-1].append(line)
        ended = ended or kind in _ENDS[wire]
    return out


def _sse(lines: list[bytes], family: str) -> bytes:
    wire = FAMILIES[family].wire
    if wire == "gemini":
        return b"".join(b"data: " + line + b"\r\n\r\n" for line in lines)
    if wire == "typed":
        return b"".join(
            b"event: %s\ndata: %s\n\n" % ((_kind(line, family) or "").encode(), line) for line in lines
        )
    body = b"".join(b"data: " + line + b"\n\n" for line in lines)
    return body + b"data: [DONE]\n\n" if wire == "chat" else body


def _eventstream(lines: list[bytes]) -> bytes:
    """One frame per ``{"<eventType>": payload}`` line; the payload's bytes are cut out of the line
    as they are (checked to decode to the same value)."""
    frames: list[bytes] = []
    for line in lines:
        ((event_type, payload),) = json.loads(line).items()
        head = b'{"' + event_type.encode() + b'":'
        raw = line.strip()[len(head) : -1]
        if not line.strip().startswith(head) or json.loads(raw) != payload:
            raise SystemExit(f"unexpected Bedrock line shape: {line[:80]!r}")
        headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
        frames.append(encode_message(headers, raw))
    return b"".join(frames)


def _error_status(body: Any) -> int:
    """The HTTP status an error body implies (the fixtures do not record it)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return 200
    if isinstance(error.get("code"), int):
        return error["code"]  # Google states it
    return 429 if "quota" in str(error.get("type")) else 400  # OpenAI: insufficient_quota is a 429


def _model(lines: list[Any], family: str) -> str:
    """The model the response names (the URL of Gemini and Bedrock requests carries it)."""
    default = FAMILIES[family].default_model
    if default:
        return default
    for value in lines:
        if not isinstance(value, dict):
            continue
        for node in (value, value.get("message"), value.get("response")):
            if isinstance(node, dict):
                model = node.get("modelVersion") or node.get("model")
                if isinstance(model, str) and model:
                    return model
    return "vercel-fixture-model"


def _loads(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _request(url: str, model: str, stream: bool) -> RecordedRequest:
    body = json.dumps({"model": model, "stream": stream, "synthetic": True}, separators=(",", ":"))
    return RecordedRequest(
        "POST", url.replace("{model}", model), {"content-type": ["application/json"]}, body.encode()
    )


def convert(path: Path, rel: str) -> tuple[Cassette | None, dict[str, Any]]:
    """One fixture as a cassette (None: copied verbatim) and its provenance record."""
    data = path.read_bytes()
    family = family_of(rel)
    spec = FAMILIES[family]
    meta: dict[str, Any] = {
        "source": {
            "repository": REPOSITORY,
            "commit": COMMIT,
            "path": "packages/" + rel,
            "sha256": hashlib.sha256(data).hexdigest(),
            "licence": LICENCE,
        },
        "family": family,
        "protocol": spec.protocol,
    }
    if spec.protocol is None:
        meta["not_supported"] = UNSUPPORTED[family]
    if spec.wire == "raw":
        meta["changes"] = "none: copied verbatim"
        return None, meta
    if rel.endswith(".sse"):
        meta["changes"] = "none to the body: the raw SSE text is the response body"
        lines = [_loads(line[6:]) for line in data.splitlines() if line.startswith(b"data: {")]
        model = _model(lines, family)
        meta["model"] = model
        response = RecordedResponse(200, {"content-type": ["text/event-stream"]}, data)
        interactions = [Interaction(_request(spec.stream_url, model, True), response)]
        meta |= {"streamed": True, "interactions": 1, "synthetic": SYNTHETIC}
        return Cassette(interactions, meta), meta
    if rel.endswith(".json"):
        body = json.loads(data)
        model = _model([body], family)
        status = _error_status(body)
        meta |= {"model": model, "streamed": False, "interactions": 1, "synthetic": SYNTHETIC}
        meta["changes"] = "none to the body: the JSON file is the response body" + (
            f"; HTTP status {status} from the error it holds" if status != 200 else ""
        )
        response = RecordedResponse(status, {"content-type": ["application/json"]}, data)
        return Cassette([Interaction(_request(spec.json_url, model, False), response)], meta), meta
    lines = [line for line in data.splitlines() if line.strip()]
    model = _model([_loads(line) for line in lines], family)
    responses = split_responses(lines, family)
    if spec.wire == "bedrock":
        framing = "each line's payload (bytes kept) as one AWS event-stream frame (valid CRCs)"
        bodies = [_eventstream(chunk) for chunk in responses]
        content_type = "application/vnd.amazon.eventstream"
    else:
        framing = {
            "chat": "each line as an SSE `data:` event, then `data: [DONE]`",
            "typed": "each line as an SSE `event: <type>` + `data:` event",
            "gemini": "each line as an SSE `data:` event, events separated by CRLF CRLF",
            "data": "each line as an SSE `data:` event",
        }[spec.wire]
        bodies = [_sse(chunk, family) for chunk in responses]
        content_type = "text/event-stream"
    meta["changes"] = f"one JSON chunk per line (bytes kept) framed as the wire sends it: {framing}" + (
        f"; {len(responses)} responses recorded back to back split into {len(responses)} interactions"
        if len(responses) > 1
        else ""
    )
    meta |= {"model": model, "streamed": True, "interactions": len(responses), "synthetic": SYNTHETIC}
    interactions = [
        Interaction(
            _request(spec.stream_url, model, True),
            RecordedResponse(200, {"content-type": [content_type]}, body),
        )
        for body in bodies
    ]
    return Cassette(interactions, meta), meta


def target_name(rel: str) -> str:
    """``anthropic/src/__fixtures__/x.chunks.txt`` -> ``anthropic/x.chunks.yaml``: ``src/`` and
    ``__fixtures__/`` dropped, ``.txt`` dropped, ``.yaml`` added (copies keep their name)."""
    parts = [p for p in rel.split("/") if p not in ("src", "__fixtures__")]
    name = parts[-1].removesuffix(".txt")
    parts[-1] = name if family_of(rel) == "realtime" else name + ".yaml"
    return "/".join(parts)


def fixtures(source: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source).as_posix()
        if path.is_file() and "/__fixtures__/" in rel:
            yield path, rel


def _readme(rows: list[tuple[str, dict[str, Any]]]) -> str:
    supported = [(t, m) for t, m in rows if m["protocol"]]
    lines = [
        "# Vercel AI SDK fixtures as llmroute cassettes",
        "",
        "Generated by `scripts/convert_vercel_fixtures.py`; do not edit (the test suite checks it is current).",
        f"Source: `{REPOSITORY}` at `{COMMIT}`, `packages/<package>/**/__fixtures__/**`. Licence:",
        "Apache-2.0, Copyright 2023 Vercel, Inc. (`LICENSE` here: the upstream notice and the licence text).",
        "The fixtures hold response bodies only; every cassette's `llmroute_metadata` gives its source path,",
        "sha256 and what the conversion changed (framing only: each chunk's bytes are kept), and marks the",
        "request (method, URL, placeholder body), status and headers as synthetic.",
        "",
        f"{len(rows)} fixtures: {len(supported)} of a protocol llmroute speaks, {len(rows) - len(supported)} not supported.",
        "",
        "| cassette | source (`packages/…`) | family | protocol | streamed | interactions |",
        "|---|---|---|---|---|---|",
    ]
    for target, meta in rows:
        protocol = meta["protocol"] or "not supported"
        streamed = "-" if "streamed" not in meta else "yes" if meta["streamed"] else "no"
        lines.append(
            f"| `{target}` | `{meta['source']['path'].removeprefix('packages/')}` | {meta['family']} | "
            f"{protocol} | {streamed} | {meta.get('interactions', '-')} |"
        )
    lines += ["", "## Not supported", "", "| family | reason |", "|---|---|"]
    for family in sorted({m["family"] for _, m in rows if not m["protocol"]}):
        lines.append(f"| {family} | {UNSUPPORTED[family]} |")
    return "\n".join(lines) + "\n"


def main(source: Path, out: Path = OUT) -> int:
    """Write every cassette, the README and verbatim copies under ``out``; drop stale files."""
    rows: list[tuple[str, dict[str, Any]]] = []
    written: set[str] = set()
    for path, rel in fixtures(source):
        target = target_name(rel)
        cassette, meta = convert(path, rel)
        destination = out / target
        if cassette is None:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
        else:
            cassette.save(destination)
        rows.append((target, meta))
        written.add(target)
    (out / "README.md").write_text(_readme(rows), encoding="utf-8")
    written.add("README.md")
    for stale in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = stale.relative_to(out).as_posix()
        if rel not in written and rel not in KEEP:
            stale.unlink()
    return len(rows)


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else default_source()
    if source is None or not source.is_dir():
        raise SystemExit("usage: convert_vercel_fixtures.py [path/to/shared/conformance/vercel-ai]")
    print(f"wrote {main(source)} fixtures under {OUT}")
