from __future__ import annotations

from pathlib import Path

import pytest

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cassette_path(*parts: str) -> Path:
    return CASSETTES.joinpath(*parts)
