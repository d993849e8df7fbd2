"""Convert the shared conformance recordings into vcrpy YAML cassettes under ``cassettes/``.

Run once by a maintainer (``python scripts/import_conformance.py ../shared/conformance``); the
output is committed so the test suite needs nothing outside the repository. Bodies are kept
byte-for-byte: SSE text verbatim, AWS event-stream as ``!!binary``. Request JSON bodies that the
recorder stored decoded (pydantic-ai ``parsed_body``) are re-encoded compactly.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from llmroute.testing.cassette import Cassette, Interaction, RecordedRequest, RecordedResponse


def _headers(raw: dict[str, Any] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in (raw or {}).items():
        out[k.lower()] = [str(x) for x in v] if isinstance(v, list) else [str(v)]
    return out


def from_opencode(path: Path) -> Cassette:
    data = json.loads(path.read_text(encoding="utf-8"))
    interactions = []
    for item in data["interactions"]:
        req, resp = item["request"], item["response"]
        body = resp.get("body", "")
        raw = base64.b64decode(body) if resp.get("bodyEncoding") == "base64" else body.encode("utf-8")
        interactions.append(
            Interaction(
                RecordedRequest(
                    req["method"], req["url"], _headers(req.get("headers")), req.get("body", "").encode()
                ),
                RecordedResponse(resp["status"], _headers(resp.get("headers")), raw),
            )
        )
    return Cassette(interactions, metadata=data.get("metadata") or {})


def _body_bytes(node: dict[str, Any], raw_key: str = "body") -> bytes:
    if "parsed_body" in node:
        return json.dumps(node["parsed_body"], ensure_ascii=False, separators=(",", ":")).encode()
    body = node.get(raw_key)
    if isinstance(body, dict):
        body = body.get("string", "")
    if body is None:
        return b""
    return body if isinstance(body, bytes) else str(body).encode("utf-8")


def from_pydantic_ai(path: Path) -> Cassette:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    interactions = []
    for item in data["interactions"]:
        req, resp = item["request"], item["response"]
        status = resp.get("status", {})
        interactions.append(
            Interaction(
                RecordedRequest(req["method"], req["uri"], _headers(req.get("headers")), _body_bytes(req)),
                RecordedResponse(
                    status.get("code", 200) if isinstance(status, dict) else int(status),
                    _headers(resp.get("headers")),
                    _body_bytes(resp),
                ),
            )
        )
    return Cassette(interactions, metadata={})


def main(root: Path, out: Path) -> None:
    count = 0
    for path in sorted((root / "opencode").rglob("recordings/*/*.json")):
        rel = path.relative_to(root / "opencode/packages/llm/test/fixtures/recordings")
        cassette = from_opencode(path)
        cassette.save(out / "opencode" / rel.with_suffix(".yaml"))
        count += 1
    for path in sorted((root / "opencode").rglob("openai-chat/*.sse")):
        target = out / "opencode" / "openai-chat-fixtures" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
        count += 1
    for path in sorted((root / "pydantic-ai").rglob("*.yaml")):
        rel = path.relative_to(root / "pydantic-ai/tests/models/cassettes")
        from_pydantic_ai(path).save(out / "pydantic-ai" / rel)
        count += 1
    print(f"wrote {count} cassettes under {out}")


if __name__ == "__main__":
    main(
        Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/conformance"),
        Path(__file__).resolve().parents[1] / "cassettes",
    )
