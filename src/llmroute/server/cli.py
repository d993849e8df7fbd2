"""``llmroute serve --config gateway.json --host 127.0.0.1 --port 8080``."""

from __future__ import annotations

import argparse
import copy
import importlib.util
import math
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the OpenAI-compatible gateway (needs llmroute[server])",
        description="Serve /v1/chat/completions, /v1/responses and /v1/models for OpenAI clients, "
        "routing to the models the config names (with server-side web search when it configures one). "
        "Needs pip install 'llmroute[server]'.",
    )
    serve.add_argument(
        "--config", required=True, metavar="FILE", help="gateway JSON config file (keys, models, webSearch)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    serve.add_argument("--port", type=_port, default=8080, help="port to listen on (default %(default)s)")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default %(default)s)",
    )
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="worker processes sharing the socket (default %(default)s; share limits with redisUrl)",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM/SIGINT, how long open requests and streams may take to finish (default %(default)s)",
    )
    serve.add_argument(
        "--otel",
        action="store_true",
        help="OpenTelemetry traces and metrics (as config telemetry.otel; needs llmroute[otel]; "
        "exported per the OTEL_* environment)",
    )
    serve.set_defaults(run=_serve)


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= 512:
        raise argparse.ArgumentTypeError(f"must be 1 to 512: {text!r}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 to 65535: {text!r}")
    return value


def _bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (address in use, not this machine's, unknown host),
    checked before uvicorn starts so the user gets one line instead of its startup log."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"unknown host {host!r} ({exc.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..schema.errors import ConfigError
    from .config import load

    try:
        gateway = load(args.config)
    except ConfigError as exc:
        print(f"llmroute serve: {exc}", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from .app import create_app
    except ImportError as exc:
        print(
            f"llmroute serve: the server extra is missing ({exc.name}); pip install 'llmroute[server]'",
            file=sys.stderr,
        )
        return 2
    if args.otel:
        gateway.otel = True
    if gateway.otel:
        from . import otel

        try:
            otel.check()
        except ConfigError as exc:
            print(f"llmroute serve: {exc}", file=sys.stderr)
            return 2
    problem = _bind_problem(args.host, args.port)
    if problem:
        print(f"llmroute serve: {problem}", file=sys.stderr)
        return 2
    from .serving import CONFIG_ENV, HEADER_TIMEOUT_ENV, OTEL_ENV, http_protocol, tune_gc, tune_logging

    # uvloop and httptools (the [server] extra) when installed; the line says which are in use
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    protocol = http_protocol(gateway.header_timeout)
    parser = "httptools" if "HttpTools" in protocol.__name__ else "h11"
    public = ", ".join(gateway.public)
    out.write(f"llmroute gateway on http://{args.host}:{args.port}/v1 (models: {public}; {loop}, {parser})\n")
    out.flush()

    common: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "log_config": log_config(args.log_level),
        "access_log": False,  # the gateway writes its own JSON access log (llmroute.server.access)
        "timeout_graceful_shutdown": max(0, math.ceil(args.graceful_timeout)),
        "loop": loop,
    }
    if args.workers == 1:
        app = create_app(gateway)
        tune_gc()
        tune_logging()
        uvicorn.run(app, http=protocol, **common)
        return 0
    # workers: each process loads the config; metrics from all of them are summed on scrape
    os.environ[CONFIG_ENV] = str(Path(args.config).resolve())
    os.environ[HEADER_TIMEOUT_ENV] = repr(gateway.header_timeout)
    if args.otel:
        os.environ[OTEL_ENV] = "1"
    metrics_dir = None
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="llmroute-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        uvicorn.run(
            "llmroute.server.serving:app_from_env",
            factory=True,
            workers=args.workers,
            http="llmroute.server.serving:HeaderTimeoutProtocol",
            **common,
        )
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, plus the gateway's own lines on stderr as they are (one JSON object per
    access-log line and per upstream failure)."""
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["llmroute"] = {"format": "%(message)s"}
    config["handlers"]["llmroute"] = {
        "formatter": "llmroute",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["llmroute.server"] = {
        "handlers": ["llmroute"],
        "level": level.upper(),
        "propagate": False,
    }
    return config
