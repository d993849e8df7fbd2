"""Packaging metadata: one source for the version, the licence shipped, lint/type tools in ``dev``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import llmroute

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_has_one_source() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "src/llmroute/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]\d+|rc\d+)?", llmroute.__version__)
    assert f"llmroute/{llmroute.__version__}" in _user_agent()


def _user_agent() -> str:
    from llmroute.route import compiler

    return compiler._USER_AGENT  # pyright: ignore[reportPrivateUsage]


def test_metadata_users_and_indexes_read() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert "Typing :: Typed" in project["classifiers"] and project["keywords"]
    assert (ROOT / "src" / "llmroute" / "py.typed").exists()
    assert (ROOT / "CHANGELOG.md").exists()
    for folder in ("opencode", "pydantic-ai", "vercel-ai"):
        assert (
            "MIT" in (ROOT / "cassettes" / folder / "LICENSE").read_text(encoding="utf-8")
            or folder == "vercel-ai"
        )


def test_dev_tools_are_not_test_dependencies() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    test = " ".join(extras["test"])
    assert "pyright" not in test and "ruff" not in test
    dev = " ".join(extras["dev"])
    assert "pyright" in dev and "ruff" in dev and "llmroute[test]" in dev
