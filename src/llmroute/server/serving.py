"""Running the app under uvicorn as ``llmroute serve`` does: a header-read deadline against
slow-loris clients, graceful shutdown, and ``--workers N`` processes sharing one listening socket.

Workers are separate processes (uvicorn's supervisor spawns them); each loads the config itself
(``LLMROUTE_GATEWAY_CONFIG``) and shares limits through Redis (``redisUrl``; without it each
worker counts alone) and metrics through ``PROMETHEUS_MULTIPROC_DIR``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from typing import Any

from starlette.applications import Starlette

from .app import create_app
from .config import load

__all__ = [
    "CONFIG_ENV",
    "HEADER_TIMEOUT_ENV",
    "OTEL_ENV",
    "app_from_env",
    "http_protocol",
    "tune_gc",
    "tune_logging",
]

CONFIG_ENV = "LLMROUTE_GATEWAY_CONFIG"
HEADER_TIMEOUT_ENV = "LLMROUTE_HEADER_TIMEOUT"
OTEL_ENV = "LLMROUTE_GATEWAY_OTEL"  # llmroute serve --otel, for the worker processes


def http_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) with a deadline on reading a
    request's headers: a connection that has not sent a whole request head within
    ``header_timeout`` seconds of connecting (or of starting its next request) is closed."""
    base: Any
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # httptools missing: the pure-Python parser
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class Guarded(base):  # pyright: ignore[reportUntypedBaseClass]
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)  # pyright: ignore[reportUnknownMemberType]
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)  # pyright: ignore[reportUnknownMemberType]
            if self._head_timer is None and self._waiting_for_head():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)  # pyright: ignore[reportUnknownMemberType]

        def _waiting_for_head(self) -> bool:
            cycle = self.cycle
            return cycle is None or bool(cycle.response_complete)

        def _arm(self) -> None:
            self._head_timer = self.loop.call_later(header_timeout, self._expired)

        def _expired(self) -> None:
            self._head_timer = None
            if self._waiting_for_head() and not self.transport.is_closing():
                self.transport.close()

    Guarded.__name__ = f"HeaderTimeout{base.__name__}"
    return Guarded


def tune_gc() -> None:
    """For a process that only serves the gateway: everything loaded so far is permanent (never
    scanned again), and young-object collections run every 20,000 allocations instead of 700. A
    collection's cost is the in-flight objects it finds, which grow with concurrency: at 64
    concurrent requests the default thresholds spent about 0.3 ms per request collecting, these
    about 0.1 ms."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


def tune_logging() -> None:
    """For a process that only serves the gateway, whose log formats use none of them: log records
    skip the caller's file and line (a walk up the stack per record), the thread, the process and
    its name (the logging HOWTO's "Optimization"). A few microseconds per access-log line."""
    logging._srcfile = None  # pyright: ignore[reportPrivateUsage]
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def app_from_env() -> Starlette:
    """The app of one worker process: the config file named by ``LLMROUTE_GATEWAY_CONFIG``."""
    gateway = load(os.environ[CONFIG_ENV])
    if os.environ.get(OTEL_ENV) == "1":
        gateway.otel = True
    app = create_app(gateway)
    tune_gc()
    tune_logging()
    return app


def __getattr__(name: str) -> Any:
    # ``HeaderTimeoutProtocol``: the guarded protocol by import path, for worker processes (a class
    # made in a function cannot be handed to a spawned process)
    if name == "HeaderTimeoutProtocol":
        return http_protocol(float(os.environ.get(HEADER_TIMEOUT_ENV, "10")))
    raise AttributeError(f"module 'llmroute.server.serving' has no attribute {name!r}")
