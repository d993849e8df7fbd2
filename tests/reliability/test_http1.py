"""The HTTP/1.1 transport (``route/http1.py``: every Client's pool on asyncio, and the gateway's) against a real server on
127.0.0.1: keep-alive reuse, bodies as they arrive (content-length, chunked, until close), the
read, connect and pool deadlines, an upstream that closes or resets mid-body, and the bound on
exchanges at once; and that ``upstream_client`` picks it (and keeps no cookies)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from llmroute.route.http1 import Http1Transport
from llmroute.route.http_pool import ShardedTransport
from llmroute.server.pool import upstream_client

from ..reliability.server import Close, FaultServer, Reply, Reset, Sleep, Stall

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # asyncio protocols: on trio the client uses the sharded pool


JSON = {"content-type": "application/json"}


def transport(**kw: int | float) -> Http1Transport:
    return Http1Transport(ShardedTransport(), **kw)  # type: ignore[arg-type]


async def test_keep_alive_reuse_and_both_body_framings(server: FaultServer) -> None:
    server.add(
        Reply(headers=JSON, parts=[b'{"a":', b"1}"], chunked=False),
        Reply(headers={"content-type": "text/event-stream"}, parts=[b"data: 1\n\n", b"data: 2\n\n"]),
        Reply(status=404, headers=JSON, parts=[b"{}"], chunked=False),
    )
    async with httpx.AsyncClient(transport=transport()) as client:
        whole = await client.post(server.base_url + "/x?q=1", json={"hello": "wörld"})
        streamed = await client.post(server.base_url + "/y", content=b"abc")
        missing = await client.get(server.base_url + "/z")
    assert (whole.status_code, whole.json()) == (200, {"a": 1})
    assert whole.headers["content-type"] == "application/json" and whole.http_version == "HTTP/1.1"
    assert streamed.text == "data: 1\n\ndata: 2\n\n"
    assert (missing.status_code, missing.reason_phrase) == (404, "Status")  # the fake server's phrase
    assert server.connections == 1  # one connection for all three
    sent = server.received
    assert [(r.method, r.path) for r in sent] == [("POST", "/v1/x?q=1"), ("POST", "/v1/y"), ("GET", "/v1/z")]
    assert sent[0].body == '{"hello":"wörld"}'.encode() and sent[1].body == b"abc"
    assert sent[0].headers["content-length"] == str(len(sent[0].body))


async def test_chunks_are_yielded_as_they_arrive(server: FaultServer) -> None:
    server.add(Reply(parts=[b"data: 1\n\n", Sleep(0.3), b"data: 2\n\n"]))
    async with (
        httpx.AsyncClient(transport=transport()) as client,
        client.stream("POST", server.base_url + "/s", content=b"{}") as response,
    ):
        start = time.monotonic()
        times: list[tuple[bytes, float]] = []
        async for chunk in response.aiter_raw():
            times.append((chunk, time.monotonic() - start))
    assert [c for c, _ in times] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert times[0][1] < 0.2 <= times[1][1]  # the first before the pause, not buffered behind it


async def test_a_body_delimited_by_the_connection_closing() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, httpx.AsyncClient(transport=transport()) as client:
        response = await client.get(f"http://127.0.0.1:{port}/")
    assert response.text == "until the end"


async def test_read_deadline_before_the_head_and_between_chunks(server: FaultServer) -> None:
    server.add(Reply(before=[Stall()]), Reply(parts=[b"data: 1\n\n", Stall()]))
    timeout = httpx.Timeout(5, read=0.2)
    async with httpx.AsyncClient(transport=transport(), timeout=timeout) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(server.base_url + "/a", content=b"{}")
        async with client.stream("POST", server.base_url + "/b", content=b"{}") as response:
            chunks = response.aiter_raw()
            assert await chunks.__anext__() == b"data: 1\n\n"
            with pytest.raises(httpx.ReadTimeout):
                await chunks.__anext__()
    assert server.connections == 2  # the timed-out connection was closed, not reused


async def test_upstream_closing_or_resetting_mid_body(server: FaultServer) -> None:
    server.add(
        Reply(parts=[b"data: 1\n\n", Close()]),
        Reply(parts=[b"data: 1\n\n", Reset()]),
        Reply(before=[Close()]),
        Reply(headers=JSON, parts=[b"{}"], chunked=False),
    )
    async with httpx.AsyncClient(transport=transport()) as client:
        for _ in range(2):
            async with client.stream("POST", server.base_url + "/a", content=b"{}") as response:
                with pytest.raises(httpx.RemoteProtocolError, match="before the whole body"):
                    await response.aread()
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.post(server.base_url + "/b", content=b"{}")
        assert (await client.post(server.base_url + "/c", content=b"{}")).json() == {}
    assert server.connections == 4


async def test_an_idle_connection_the_upstream_closed_is_not_reused() -> None:
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # keep-alive in the headers, yet closed: as an upstream's idle timeout does

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, httpx.AsyncClient(transport=transport()) as client:
        first = await client.get(f"http://127.0.0.1:{port}/")
        await asyncio.sleep(0.1)  # the close reaches the idle connection
        second = await client.get(f"http://127.0.0.1:{port}/")
    assert first.text == second.text == "ok" and len(connections) == 2


async def test_connect_failure_and_an_unread_body_closes_its_connection(server: FaultServer) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server.add(
        Reply(parts=[b"data: 1\n\n", Sleep(0.2), b"data: 2\n\n"]),
        Reply(headers=JSON, parts=[b"{}"], chunked=False),
    )
    pool = transport()
    async with httpx.AsyncClient(transport=pool) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")
        async with client.stream("POST", server.base_url + "/a", content=b"{}") as response:
            assert await response.aiter_raw().__anext__() == b"data: 1\n\n"
        # closed before its end: that connection is dropped, the next call opens another
        assert (await client.post(server.base_url + "/b", content=b"{}")).json() == {}
        assert pool._active == 0  # pyright: ignore[reportPrivateUsage]
    assert server.connections == 2


async def test_past_max_connections_requests_wait_then_time_out(server: FaultServer) -> None:
    server.add(*(Reply(headers=JSON, parts=[Sleep(0.3), b"{}"], chunked=False) for _ in range(3)))
    pool = transport(max_connections=2)
    async with httpx.AsyncClient(transport=pool, timeout=httpx.Timeout(5)) as client:
        started = time.monotonic()
        answers = await asyncio.gather(
            *(client.post(server.base_url + "/a", content=b"{}") for _ in range(3))
        )
        elapsed = time.monotonic() - started
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert elapsed >= 0.55  # the third waited for a free slot
        assert server.connections == 2
        server.add(*(Reply(headers=JSON, parts=[Sleep(0.5), b"{}"], chunked=False) for _ in range(2)))
        hold = [asyncio.ensure_future(client.post(server.base_url + "/b", content=b"{}")) for _ in range(2)]
        await asyncio.sleep(0.1)
        with pytest.raises(httpx.PoolTimeout):
            await client.post(server.base_url + "/c", content=b"{}", timeout=httpx.Timeout(5, pool=0.1))
        assert [(await h).status_code for h in hold] == [200, 200]
        assert pool._active == 0 and not pool._slots  # pyright: ignore[reportPrivateUsage]


async def test_upstream_client_uses_it_and_keeps_no_cookies(server: FaultServer) -> None:
    server.add(
        *(Reply(headers={**JSON, "set-cookie": "__cf_bm=abc; Path=/"}, parts=[b"{}"]) for _ in range(2))
    )
    client = upstream_client()
    assert client is not None
    async with client:
        assert isinstance(client._transport, Http1Transport)  # pyright: ignore[reportPrivateUsage]
        await client.post(server.base_url + "/a", content=b"{}")
        await client.post(server.base_url + "/a", content=b"{}")
        assert not client.cookies
    assert "cookie" not in server.received[1].headers


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` and its key (openssl)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
    ]
    command += ["-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(command, check=True, capture_output=True)
    return cert, key


async def test_https_with_a_verified_certificate_and_reuse(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecure")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_side)
    port = server.sockets[0].getsockname()[1]
    trusting = ssl.create_default_context(cafile=str(cert))
    async with server:
        async with httpx.AsyncClient(
            transport=Http1Transport(ShardedTransport(), ssl_context=trusting)
        ) as client:
            answers = [await client.get(f"https://localhost:{port}/") for _ in range(2)]
        assert [a.text for a in answers] == ["secure", "secure"] and len(connections) == 1
        async with httpx.AsyncClient(transport=transport()) as client:  # the system's CAs: not trusted
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(f"https://localhost:{port}/")


async def test_a_patched_httpx_transport_sees_the_requests(server: FaultServer) -> None:
    # vcrpy, pytest-recording and respx patch httpx's (or httpcore's) transport; while they do,
    # requests go through the fallback pool, which calls the patched method
    import functools

    seen: list[str] = []
    real = httpx.AsyncHTTPTransport.handle_async_request

    @functools.wraps(real)
    async def recording(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return await real(self, request)

    server.add(
        Reply(headers=JSON, parts=[b"{}"], chunked=False), Reply(headers=JSON, parts=[b"{}"], chunked=False)
    )
    async with httpx.AsyncClient(transport=transport()) as client:
        httpx.AsyncHTTPTransport.handle_async_request = recording  # type: ignore[method-assign]
        try:
            assert (await client.post(server.base_url + "/patched", content=b"{}")).status_code == 200
        finally:
            httpx.AsyncHTTPTransport.handle_async_request = real  # type: ignore[method-assign]
        assert (await client.post(server.base_url + "/direct", content=b"{}")).status_code == 200
    assert seen == [server.base_url + "/patched"]
