from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cassette_path(*parts: str) -> Path:
    return CASSETTES.joinpath(*parts)


@pytest.fixture(scope="session")
def redis_url_session() -> Iterator[str]:
    """One real redis-server for the session (tests/redis_server.py); use `redis_url` for a clean db."""
    from tests.redis_server import redis_server

    with redis_server() as url:
        yield url


@pytest.fixture
def redis_url(redis_url_session: str) -> Iterator[str]:
    """The session's redis-server, flushed before each test."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(redis_url_session)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=2) as c:
        c.sendall(b"FLUSHALL\r\n")
        c.recv(16)
    yield redis_url_session
