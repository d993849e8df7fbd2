from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from ..reliability.server import FaultServer


@pytest.fixture
def servers() -> Iterator[Callable[[], FaultServer]]:
    """Start as many fake upstreams as a test needs; all are stopped after it."""
    started: list[FaultServer] = []

    def start() -> FaultServer:
        server = FaultServer().start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()
