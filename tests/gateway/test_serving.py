"""``llmroute serve`` as operators run it: slow-loris connections closed by the header and body
deadlines, ``--workers 2`` sharing one socket (limits through Redis, metrics summed), and a
graceful shutdown that lets an open stream finish, within a bound."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from llmroute.server import create_app, load
from llmroute.server.serving import http_protocol

from ..reliability.server import DONE, FaultServer, Reply, Sleep, Stall, chat_chunk
from .processes import GatewayProcess
from .test_gateway import UPSTREAM_KEY, Served, answer

KEY = "gw-serve-key-0123456789"


def serve_config(upstream: FaultServer, **extra: Any) -> dict[str, Any]:
    return {
        "keys": [KEY],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key": UPSTREAM_KEY,
                "model": "m",
            }
        },
        **extra,
    }


class Guarded(Served):
    """The in-process server with ``llmroute serve``'s HTTP protocol (header deadline)."""

    def __init__(self, config: dict[str, Any]) -> None:
        gateway = load(config)
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(gateway),
                host="127.0.0.1",
                port=0,
                log_level="error",
                http=http_protocol(gateway.header_timeout),
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])


def closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(4096) == b"" or True  # a 4xx answer then close also counts as closed
    except TimeoutError:
        return False


def test_slow_headers_and_slow_bodies_are_cut_off(upstream: FaultServer) -> None:
    with Guarded(serve_config(upstream, headerTimeout=0.5, bodyTimeout=0.5)) as served:
        with socket.create_connection(("127.0.0.1", served.port)) as slow_head:
            slow_head.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")  # never finishes
            started = time.monotonic()
            assert closed_within(slow_head, 5) and slow_head.recv(1) == b""
            assert time.monotonic() - started < 3
        with socket.create_connection(("127.0.0.1", served.port)) as slow_body:
            slow_body.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer "
                + KEY.encode()
                + b'\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"model":'
            )
            slow_body.settimeout(5)
            answer_head = slow_body.recv(4096)
        healthy = httpx.get(served.base_url.removesuffix("/v1") + "/health", timeout=5)
    assert answer_head.startswith(b"HTTP/1.1 408") and b"body_timeout" in answer_head
    assert healthy.status_code == 200  # a normal request on a fresh connection is unaffected
    assert upstream.received == []


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def test_two_workers_share_the_socket_limits_and_metrics(upstream: FaultServer, redis_url: str) -> None:
    upstream.add(*(answer("ok") for _ in range(3)))
    config = serve_config(upstream, redisUrl=redis_url)
    config["keys"] = [{"id": "team", "key": KEY, "rpm": 3}]
    with GatewayProcess(config, "--workers", "2") as gateway:
        deadline = time.monotonic() + 30
        while len([c for c in _children(gateway.proc.pid) if _is_worker(c)]) < 2:
            assert time.monotonic() < deadline, gateway.output()
            time.sleep(0.1)
        statuses = []
        for _ in range(4):
            with httpx.Client() as fresh:  # a new connection each: the kernel spreads them over workers
                statuses.append(
                    fresh.post(
                        gateway.base_url + "/chat/completions",
                        headers={"authorization": f"Bearer {KEY}"},
                        json={"model": "main", "messages": [{"role": "user", "content": "x"}]},
                        timeout=10,
                    ).status_code
                )
        text = httpx.get(f"http://127.0.0.1:{gateway.port}/metrics", timeout=5).text
        started = gateway.output()
    assert "; uvloop, httptools)" in started  # the [server] extra's loop and parser, in use
    assert sorted(statuses) == [200, 200, 200, 429]
    total = sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "llmroute_gateway_requests_total" and s.labels.get("route") == "/v1/chat/completions"
    )
    assert total == 4  # summed over both workers, whichever one answered the scrape


def _is_worker(pid: int) -> bool:
    try:
        return b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _stream_in_thread(url: str, into: list[bytes]) -> threading.Thread:
    def run() -> None:
        try:
            with httpx.stream(
                "POST",
                url + "/chat/completions",
                headers={"authorization": f"Bearer {KEY}"},
                json={"model": "main", "stream": True, "messages": [{"role": "user", "content": "x"}]},
                timeout=30,
            ) as response:
                for chunk in response.iter_bytes():
                    into.append(chunk)  # noqa: PERF402  (the main thread watches it fill)
        except httpx.HTTPError as exc:
            into.append(f"ERROR {type(exc).__name__}".encode())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _wait_for_bytes(into: list[bytes]) -> None:
    deadline = time.monotonic() + 15
    while not into:
        assert time.monotonic() < deadline, "no first chunk"
        time.sleep(0.02)


def test_graceful_shutdown_lets_an_open_stream_finish(upstream: FaultServer) -> None:
    upstream.add(
        Reply(parts=[chat_chunk("Hel"), Sleep(1.5), chat_chunk("lo"), chat_chunk(finish="stop"), DONE])
    )
    gateway = GatewayProcess(serve_config(upstream)).wait_ready()
    try:
        received: list[bytes] = []
        reader = _stream_in_thread(gateway.base_url, received)
        _wait_for_bytes(received)
        gateway.proc.send_signal(signal.SIGTERM)
        reader.join(15)
        code = gateway.proc.wait(15)
    finally:
        gateway.stop()
        gateway.close()
    body = b"".join(received)
    assert b'"lo"' in body and body.endswith(b"data: [DONE]\n\n"), body
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down cleanly


def test_graceful_shutdown_is_bounded(upstream: FaultServer) -> None:
    upstream.add(Reply(parts=[chat_chunk("Hel"), Stall()]))
    gateway = GatewayProcess(serve_config(upstream), "--graceful-timeout", "1").wait_ready()
    try:
        received: list[bytes] = []
        reader = _stream_in_thread(gateway.base_url, received)
        _wait_for_bytes(received)
        started = time.monotonic()
        gateway.proc.send_signal(signal.SIGTERM)
        gateway.proc.wait(15)
        took = time.monotonic() - started
        reader.join(10)
    finally:
        gateway.stop()
        gateway.close()
    assert took < 6, f"shutdown took {took:.1f} s with a 1 s bound"
    assert not b"".join(received).endswith(b"data: [DONE]\n\n")
