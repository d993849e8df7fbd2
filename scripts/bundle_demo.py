"""Regenerate the demo's bundled recordings (``src/llmroute/cli/demo/recordings/*.json``) from the YAML
cassettes under ``cassettes/`` named by ``llmroute.cli.demo.SCENES`` (whole cassettes) and
``llmroute.websearch.cli.DEMO_SCENES`` (the grounded search: the first interaction only, which is
all it replays).

    python scripts/bundle_demo.py           # write
    python scripts/bundle_demo.py --check   # exit 1 if a bundled file is stale (tests run this)

Needs PyYAML (the ``test`` extra); the demo itself reads the JSON form with msgspec only. Each file
keeps its provenance (source cassette and its upstream notice) in ``metadata``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from llmroute.cli.demo import SCENES
from llmroute.testing.cassette import Cassette
from llmroute.websearch.cli import DEMO_SCENES

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "llmroute" / "cli" / "demo" / "recordings"
# Upstream copyright of each cassette folder (full texts: cassettes/<folder>/LICENSE, NOTICE.md here).
NOTICES = {
    "opencode": "MIT, Copyright (c) 2025 opencode (anomalyco/opencode, formerly sst/opencode)",
    "pydantic-ai": "MIT, Copyright (c) Pydantic Services Inc. 2024 to present (pydantic/pydantic-ai)",
}


def _bundle(source: str, first: int | None = None) -> bytes:
    """The JSON form of cassette ``source`` (its first ``first`` interactions, or all)."""
    cassette = Cassette.load(ROOT / "cassettes" / source)
    kept = cassette.interactions[:first]
    folder = source.split("/", 1)[0]
    metadata = {
        "source": f"cassettes/{source}",
        **({"interactions": f"the first {len(kept)} of {len(cassette.interactions)}"} if first else {}),
        "licence": NOTICES[folder],
        **({"upstream": cassette.metadata} if cassette.metadata else {}),
    }
    return Cassette(kept, metadata).to_json() + b"\n"


def bundled() -> dict[Path, bytes]:
    out = {TARGET / f"{scene.recording}.json": _bundle(scene.source) for scene in SCENES}
    out.update({TARGET / f"{scene.recording}.json": _bundle(scene.source, 1) for scene in DEMO_SCENES})
    return out


def main(argv: list[str]) -> int:
    files = bundled()
    if "--check" in argv:
        stale = [p.name for p, data in files.items() if not p.exists() or p.read_bytes() != data]
        if stale:
            print(f"stale demo recordings: {', '.join(stale)}; run scripts/bundle_demo.py", file=sys.stderr)
            return 1
        return 0
    TARGET.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        path.write_bytes(data)
        print(f"wrote {path.relative_to(ROOT)} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
