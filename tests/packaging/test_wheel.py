"""``pip install llmroute && llmroute demo`` from a built wheel in a fresh virtual environment with
only the core dependencies (no PyYAML), run from a directory outside the checkout; and what the
sdist and the wheel hold (no CI machinery or credential files; licence notes with the recordings).

Slow-ish (~30 s: builds and a dependency install); marked ``wheel`` so it can be selected
(``-m wheel``) or skipped (``-m "not wheel"``), and run by default so CI exercises it."""

from __future__ import annotations

import subprocess
import sys
import tarfile
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


# Never shipped: a developer's credentials or local config, CI machinery, caches.
_FORBIDDEN = (
    ".env",
    ".pem",
    "auth.json",
    "opencode.json",
    "opencode.jsonc",
    "__pycache__",
    ".pyc",
    ".ci/",
    ".venv",
)


def _wheel(source: Path, dist: Path) -> Path:
    _ok([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(dist)], dist.parent)
    (wheel,) = dist.glob("llmroute-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wheel(ROOT, tmp_path_factory.mktemp("wheel") / "dist")


def test_wheel_holds_the_package_only(wheel: Path) -> None:
    info = f"llmroute-{llmroute.__version__}.dist-info/"
    names = zipfile.ZipFile(wheel).namelist()
    assert all(n.startswith(("llmroute/", info)) for n in names), "only the package and its metadata"
    assert not [n for n in names if any(bad in n for bad in _FORBIDDEN)]
    metadata = zipfile.ZipFile(wheel).read(f"{info}METADATA").decode()
    for label in ("Homepage", "Documentation", "Source", "Changelog"):
        assert f"Project-URL: {label}, https://github.com/llmroute/llmroute" in metadata


def test_sdist_holds_the_source_tests_and_recording_licences(tmp_path: Path, wheel: Path) -> None:
    pytest.importorskip("build", reason="the test extra installs build: pip install -e '.[test]'")
    dist = tmp_path / "sdist"
    _ok([sys.executable, "-m", "build", "--sdist", "-o", str(dist), str(ROOT)], tmp_path)
    (sdist,) = dist.glob(f"llmroute-{llmroute.__version__}.tar.gz")
    top = f"llmroute-{llmroute.__version__}/"
    with tarfile.open(sdist) as tar:
        names = {n.removeprefix(top) for n in tar.getnames()}
    assert not [n for n in names if any(bad in n for bad in _FORBIDDEN)]
    for required in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "cassettes/README.md"):
        assert required in names
    for folder in ("opencode", "pydantic-ai", "vercel-ai"):  # every recording ships with its licence
        assert f"cassettes/{folder}/LICENSE" in names
    assert "src/llmroute/cli/demo/recordings/NOTICE.md" in names and "tests/conftest.py" in names
    # The sdist is complete: the wheel built from it holds what the one built from the checkout does.
    from_sdist = _wheel(sdist, tmp_path / "wheel")
    assert sorted(zipfile.ZipFile(from_sdist).namelist()) == sorted(zipfile.ZipFile(wheel).namelist())


def test_wheel_demo_in_a_fresh_venv(tmp_path: Path, wheel: Path) -> None:
    assert wheel.name.startswith(f"llmroute-{llmroute.__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "LICENSE not shipped"
    assert "llmroute/cli/demo/recordings/NOTICE.md" in names
    for scene in DEMO_SCENES:  # the grounded search's recordings ship too, not only the YAML in the checkout
        assert f"llmroute/cli/demo/recordings/{scene.recording}.json" in names
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

    # `llmroute models` from the wheel: without the [catalog] extra it says what to install; with it,
    # the data inside the extra's wheels answers offline (no network in the command).
    result = subprocess.run(
        [str(env_dir / "bin" / "llmroute"), "models"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "llmroute[catalog]" in result.stderr
    _ok(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", f"{wheel}[catalog]"], tmp_path
    )
    out = _ok(
        [str(env_dir / "bin" / "llmroute"), "models", "claude-sonnet-4-5", "--provider", "anthropic"],
        tmp_path,
    )
    assert "claude-sonnet-4-5-20250929  200,000   64,000" in out
