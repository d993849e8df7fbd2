"""A real `redis-server` on 127.0.0.1 for the tests that share state through Redis.

The tests start it on a free port with no persistence and stop it themselves; nothing stands in
for it. `.ci/run` installs the Debian package when it is missing. Where the binary is absent on a
developer's machine the fixture fails with the install command (it does not skip: a skipped Redis
test would read as a pass).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

INSTALL_HINT = "redis-server not found: apt-get install -y redis-server (the tests start their own)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(port: int | None = None) -> Iterator[str]:
    """Start a throwaway redis-server (on ``port``, else a free one); yield its
    ``redis://127.0.0.1:PORT/0`` URL; stop it."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError(INSTALL_HINT)
    port = port or _free_port()
    with tempfile.TemporaryDirectory(prefix="llmroute-redis-") as workdir:
        proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                workdir,
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as c:
                        c.sendall(b"PING\r\n")
                        if c.recv(16).startswith(b"+PONG"):
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on 127.0.0.1:{port}")
                time.sleep(0.02)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
