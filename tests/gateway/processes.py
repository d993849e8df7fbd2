"""``llmroute serve`` as real processes for the tests that need them (shared limits through Redis,
``--workers``, graceful shutdown): started on a free port, stopped with SIGTERM, output kept."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GatewayProcess:
    def __init__(self, config: dict[str, Any], *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        handle, path = tempfile.mkstemp(suffix=".json")
        os.write(handle, json.dumps(config).encode())
        os.close(handle)
        self.config_path = Path(path)
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop)
        command = [
            sys.executable,
            "-m",
            "llmroute",
            "serve",
            "--config",
            path,
            "--port",
            str(self.port),
            *args,
        ]
        self.proc = subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self, seconds: float = 30) -> GatewayProcess:
        deadline = time.monotonic() + seconds
        while True:
            assert self.proc.poll() is None, f"gateway exited: {self.output()}"
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"gateway did not start: {self.output()}"
            time.sleep(0.05)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, seconds: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise
        finally:
            self.config_path.unlink(missing_ok=True)

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> GatewayProcess:
        return self.wait_ready()

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self.close()
