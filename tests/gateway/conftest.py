from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..reliability.server import FaultServer


@pytest.fixture
def upstream() -> Iterator[FaultServer]:
    """A scripted OpenAI-compatible upstream (and GLM) on 127.0.0.1."""
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()
