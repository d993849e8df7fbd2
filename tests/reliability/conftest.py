from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import FaultServer


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def server() -> Iterator[FaultServer]:
    srv = FaultServer().start()
    try:
        yield srv
    finally:
        srv.stop()
