"""``pip install llmroute && llmroute demo`` from a built wheel in a fresh virtual environment with
only the core dependencies (no PyYAML), run from a directory outside the checkout.

Slow-ish (~30 s: a wheel build and a dependency install); marked ``wheel`` so it can be selected
(``-m wheel``) or skipped (``-m "not wheel"``), and run by default so CI exercises it."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import llmroute
from llmroute.websearch.cli import DEMO_SCENES

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.wheel, pytest.mark.timeout(600)]


def _ok(args: list[str], cwd: Path) -> str:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, f"{args}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return result.stdout


def test_wheel_demo_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _ok([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(dist)], tmp_path)
    (wheel,) = dist.glob("llmroute-*.whl")
    assert wheel.name.startswith(f"llmroute-{llmroute.__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "LICENSE not shipped"
    assert "llmroute/demo/recordings/NOTICE.md" in names
    for scene in DEMO_SCENES:  # the grounded search's recordings ship too, not only the YAML in the checkout
        assert f"llmroute/demo/recordings/{scene.recording}.json" in names
    assert "llmroute/py.typed" in names

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)  # pip runs from outside: faster than ensurepip
    python = env_dir / "bin" / "python"
    _ok([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)], tmp_path)

    # Only the core dependencies: the demo must not need PyYAML (the test extra).
    probe = "import importlib.util as u; print(u.find_spec('yaml') is None, u.find_spec('vcr') is None)"
    assert _ok([str(python), "-c", probe], tmp_path).split() == ["True", "True"]
    assert _ok([str(env_dir / "bin" / "llmroute"), "--version"], tmp_path).strip() == (
        f"llmroute {llmroute.__version__}"
    )
    out = _ok([str(env_dir / "bin" / "llmroute"), "demo", "--pace", "0"], tmp_path)
    assert "The weather in Paris is sunny" in out
    assert "hosted tool call web_search" in out and "[cite]" in out
    assert out.count("  finish: ") == 7
    # The grounded search after the scenes: each provider's tool result with [n] markers and Sources.
    for scene in DEMO_SCENES:
        assert f"== Grounded search ({scene.title}, {scene.model})" in out
    assert out.count("\n\nSources:\n[1] ") == len(DEMO_SCENES)
    assert "temperatures hovering around 69°F.[1]" in out
