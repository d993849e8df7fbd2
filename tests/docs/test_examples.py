"""The README's Python examples and ``examples/`` type-check under pyright strict (0 errors), and
the offline example runs. Needs pyright (the ``dev`` extra); skipped without it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def readme_examples() -> list[str]:
    """Python blocks that are programs (they import llmroute), not shapes shown as Python."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block for block in _BLOCK.findall(text) if "import llmroute" in block]


def test_readme_has_the_examples_users_look_for() -> None:
    blocks = "\n".join(readme_examples())
    for needle in ("SyncClient()", "generate_object(", "tools=[get_weather]", "pydantic.BaseModel"):
        assert needle in blocks


@pytest.mark.timeout(300)
def test_examples_type_check_strict(tmp_path: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent)) or shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed (pip install -e '.[dev]')")
    for i, block in enumerate(readme_examples()):
        (tmp_path / f"readme_{i}.py").write_text(block, encoding="utf-8")
    for example in sorted((ROOT / "examples").glob("*.py")):
        shutil.copy(example, tmp_path / example.name)
    config = {"include": ["."], "strict": ["."], "pythonVersion": "3.11", "reportMissingModuleSource": "none"}
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    result = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
    )
    report = json.loads(result.stdout)
    errors = [
        f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert errors == [], "\n".join(errors)
    assert report["summary"]["filesAnalyzed"] >= 3 + 5


def test_offline_example_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "offline_replay.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "searched: [{'query': 'top world news today'}" in out
    assert "](https://" in out


def test_guide_covers_what_users_need() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    for heading in (
        "## Streaming",
        "## Conversations",
        "## Tools and the loop",
        "## Structured output",
        "## Multimodal input",
        "## Hosted tools and citations",
        "## Providers",
        "## Environment variables",
        "## Errors and retries",
        "## Deadlines",
        "## The sync client",
        "## Recording cassettes",
    ):
        assert heading in guide
    for provider in ("Azure", "Vertex", "Bedrock", "Code Assist"):
        assert provider in guide


def test_every_extra_the_docs_and_messages_name_exists() -> None:
    import tomllib

    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ]
    )
    named: set[str] = set()
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for doc in [*docs, *sorted((ROOT / "src").rglob("*.py"))]:  # messages say "pip install 'llmroute[x]'"
        for group in re.findall(r"llmroute\[([a-z,]+)\]", doc.read_text(encoding="utf-8")):
            named.update(group.split(","))
    assert named and named <= extras, f"extras the docs name but pyproject lacks: {named - extras}"
