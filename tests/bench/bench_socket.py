"""llmroute over a real socket: CPU per chunk, time to first event, and many concurrent streams.

    .venv/bin/python tests/bench/bench_socket.py [bulk|paced|ttfe|concurrency|all] [--reps N]

The server (``_loopback``) runs in its own process on 127.0.0.1 and serves recorded provider
streams (``_workloads``: Chat, Anthropic, Gemini with its CRLF), so the client's CPU time
(``time.process_time``) is the client's alone: sockets, h11, the connection pool, SSE, decoding,
events. Every approach extracts the text of every delta; their (events, characters) must agree.

- ``bulk``: 20,000 text events sent as fast as the socket takes them; CPU per text event.
- ``paced``: one event per HTTP chunk, 2 ms apart (one read per event, like tokens); CPU per event.
- ``ttfe``: the recorded short stream on a warm keep-alive connection, again and again: time from
  the call to the first text event (wall), and client CPU per request.
- ``concurrency``: 200 and 1,000 token-paced streams at once (60 events 200 ms apart: 12 s each), each
  size in a fresh process: successes, wall, CPU, peak RSS growth, sockets left open afterwards.

Approaches: ``llmroute`` (``Client.stream``, one event at a time), ``floor`` (raw ``httpx`` plus a
minimal SSE split and a ``msgspec`` decode of just the text: what any client must at least do), and
the official SDKs (``openai``, ``anthropic``; ``pip install 'llmroute[bench]'``). Runs are
interleaved and their order rotated each repeat, medians are reported, and ratios to the floor come
first: the machine is shared and noisy, and ratios survive that.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import llmroute
from llmroute.providers import anthropic as anthropic_facade
from llmroute.providers import google as google_facade
from llmroute.providers import openai as openai_facade
from tests.bench._loopback import serve

Counts = tuple[int, int]  # (text events, characters)

# --- the floor: raw httpx, split on the separator, decode only the text -----------------------------


class _ChatDelta(msgspec.Struct):
    content: str | None = None


class _ChatChoice(msgspec.Struct):
    delta: _ChatDelta | None = None


class _ChatChunk(msgspec.Struct):
    choices: list[_ChatChoice] = []


class _AnthropicDelta(msgspec.Struct):
    text: str | None = None


class _AnthropicEvent(msgspec.Struct):
    type: str
    delta: _AnthropicDelta | None = None


class _GeminiPart(msgspec.Struct):
    text: str | None = None


class _GeminiContent(msgspec.Struct):
    parts: list[_GeminiPart] = []


class _GeminiCandidate(msgspec.Struct):
    content: _GeminiContent | None = None


class _GeminiChunk(msgspec.Struct):
    candidates: list[_GeminiCandidate] = []


_chat = msgspec.json.Decoder(_ChatChunk)
_anthropic = msgspec.json.Decoder(_AnthropicEvent)
_gemini = msgspec.json.Decoder(_GeminiChunk)


def _chat_text(data: bytes) -> str | None:
    if data == b"[DONE]":
        return None
    choices = _chat.decode(data).choices
    delta = choices[0].delta if choices else None
    return delta.content if delta is not None else None


def _anthropic_text(data: bytes) -> str | None:
    event = _anthropic.decode(data)
    return event.delta.text if event.type == "content_block_delta" and event.delta is not None else None


def _gemini_text(data: bytes) -> str | None:
    candidates = _gemini.decode(data).candidates
    content = candidates[0].content if candidates else None
    return "".join(p.text or "" for p in content.parts) if content is not None else None


_FLOOR_TEXT: dict[str, Callable[[bytes], str | None]] = {
    "chat": _chat_text,
    "anthropic": _anthropic_text,
    "gemini": _gemini_text,
}


class Floor:
    """What any client must do: read the socket, cut events, decode the text."""

    name = "floor"

    def __init__(self, base: str, workload: str) -> None:
        self.base = base
        self.text = _FLOOR_TEXT[workload]
        self.separator = b"\r\n\r\n" if workload == "gemini" else b"\n\n"
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(10.0, pool=None),
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
        )

    async def run(self, path: str, first: Callable[[], None] | None = None) -> Counts:
        sep = self.separator
        text = self.text
        events = chars = 0
        buf = b""
        async with self.http.stream("POST", self.base + path, content=b"{}") as response:
            async for chunk in response.aiter_bytes():
                buf += chunk
                cut = buf.rfind(sep)
                if cut < 0:
                    continue
                region, buf = buf[:cut], buf[cut + len(sep) :]
                for event in region.split(sep):
                    at = event.find(b"data: ")
                    t = text(event[at + 6 :])
                    if t:
                        if first is not None and not events:
                            first()
                        events += 1
                        chars += len(t)
        return events, chars

    async def aclose(self) -> None:
        await self.http.aclose()


class Ours:
    name = "llmroute"

    def __init__(self, base: str, workload: str, client: llmroute.Client | None = None) -> None:
        self.base = base
        self.workload = workload
        self.client = client or llmroute.Client()
        self.requests: dict[str, llmroute.LLMRequest] = {}

    def request(self, path: str) -> llmroute.LLMRequest:
        request = self.requests.get(path)
        if request is None:
            url = self.base + path
            if self.workload == "chat":
                model = openai_facade.configure(api_key="sk-bench", base_url=url + "/v1").chat("gpt-4o-mini")
            elif self.workload == "anthropic":
                model = anthropic_facade.configure(api_key="sk-ant-bench", base_url=url + "/v1").messages(
                    "claude-haiku-4-5"
                )
            else:
                model = google_facade.configure(api_key="bench", base_url=url + "/v1beta").gemini(
                    "gemini-3-pro-preview"
                )
            request = self.requests[path] = llmroute.request(model=model, prompt="hi")
        return request

    async def run(self, path: str, first: Callable[[], None] | None = None) -> Counts:
        events = chars = 0
        async with self.client.stream(self.request(path)) as stream:
            async for event in stream:
                if event.type == "text-delta":
                    if first is not None and not events:
                        first()
                    events += 1
                    chars += len(event.text)
        return events, chars

    async def aclose(self) -> None:
        await self.client.aclose()


class OpenAISDK:
    name = "openai SDK"

    def __init__(self, base: str, workload: str) -> None:
        import openai

        self.base = base
        self.clients: dict[str, Any] = {}
        self.make = lambda url: openai.AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0)

    async def run(self, path: str, first: Callable[[], None] | None = None) -> Counts:
        client = self.clients.get(path) or self.clients.setdefault(path, self.make(self.base + path + "/v1"))
        events = chars = 0
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                if first is not None and not events:
                    first()
                events += 1
                chars += len(chunk.choices[0].delta.content)
        return events, chars

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.close()


class AnthropicSDK:
    name = "anthropic SDK"

    def __init__(self, base: str, workload: str) -> None:
        import anthropic

        self.base = base
        self.clients: dict[str, Any] = {}
        self.make = lambda url: anthropic.AsyncAnthropic(api_key="sk-ant-bench", base_url=url, max_retries=0)

    async def run(self, path: str, first: Callable[[], None] | None = None) -> Counts:
        client = self.clients.get(path) or self.clients.setdefault(path, self.make(self.base + path))
        events = chars = 0
        stream = await client.messages.create(
            model="claude-haiku-4-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                if first is not None and not events:
                    first()
                events += 1
                chars += len(event.delta.text)
        return events, chars

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.close()


SDKS: dict[str, type[OpenAISDK] | type[AnthropicSDK]] = {"chat": OpenAISDK, "anthropic": AnthropicSDK}
WORKLOADS = ("chat", "anthropic", "gemini")


def approaches(base: str, workload: str) -> list[Any]:
    out: list[Any] = [Floor(base, workload), Ours(base, workload)]
    sdk = SDKS.get(workload)
    if sdk is not None:
        try:
            out.append(sdk(base, workload))
        except ImportError:
            print(f"({workload}: SDK not installed, pip install 'llmroute[bench]')")
    return out


# --- interleaved CPU per event ---------------------------------------------------------------------


async def _interleaved(runners: list[Any], path: str, reps: int, events: int) -> dict[str, list[float]]:
    """CPU seconds per text event, one run of each approach per repeat, the order rotated."""
    cpu: dict[str, list[float]] = {r.name: [] for r in runners}
    checks: dict[str, Counts] = {}
    for r in runners:  # warm-up: connections, imports, caches
        checks[r.name] = await r.run(path)
    assert len(set(checks.values())) == 1 and events == next(iter(checks.values()))[0], checks
    for rep in range(reps):
        k = rep % len(runners)
        for r in runners[k:] + runners[:k]:
            gc.collect()
            start = time.process_time()
            counts = await r.run(path)
            cpu[r.name].append((time.process_time() - start) / counts[0])
            assert counts == checks[r.name]
    return cpu


def _report(title: str, cpu: dict[str, list[float]]) -> None:
    floor = statistics.median(cpu["floor"])
    print(f"\n{title}")
    print(f"  {'approach':<16}{'x floor':>9}{'us/event':>11}{'min':>9}{'max':>9}")
    for name, values in cpu.items():
        med = statistics.median(values)
        print(
            f"  {name:<16}{med / floor:>8.2f}x{med * 1e6:>11.2f}{min(values) * 1e6:>9.2f}{max(values) * 1e6:>9.2f}"
        )


async def bench_cpu(base: str, mode: str, reps: int, workloads: tuple[str, ...] = WORKLOADS) -> None:
    n, interval = (20_000, 0) if mode == "bulk" else (500, 2)
    for workload in workloads:
        runners = approaches(base, workload)
        try:
            cpu = await _interleaved(runners, f"/{workload}/{mode}/{n}/{interval}", reps, n)
        finally:
            for r in runners:
                await r.aclose()
        what = (
            "bulk, 16 KiB HTTP chunks"
            if mode == "bulk"
            else f"paced, one event per read, {interval} ms apart"
        )
        _report(f"{workload}: client CPU per text event ({n:,} events, {what}; median of {reps})", cpu)


# --- time to first event on a warm connection ------------------------------------------------------


async def bench_ttfe(base: str, reps: int) -> None:
    rounds, per_round = reps * 4, 25
    for workload in ("chat", "anthropic"):
        runners = approaches(base, workload)
        n = 2 if workload == "chat" else 1  # the recorded stream as it is
        path = f"/{workload}/bulk/{n}/0"
        ttfe: dict[str, list[float]] = {r.name: [] for r in runners}
        cpu: dict[str, list[float]] = {r.name: [] for r in runners}
        try:
            for r in runners:
                await r.run(path)
            for rnd in range(rounds):
                k = rnd % len(runners)
                for r in runners[k:] + runners[:k]:
                    gc.collect()
                    start_cpu = time.process_time()
                    for _ in range(per_round):
                        start = time.perf_counter()
                        seen: list[float] = []
                        await r.run(path, lambda seen=seen: seen.append(time.perf_counter()))
                        ttfe[r.name].append(seen[0] - start)
                    cpu[r.name].append((time.process_time() - start_cpu) / per_round)
        finally:
            for r in runners:
                await r.aclose()
        floor_t, floor_c = statistics.median(ttfe["floor"]), statistics.median(cpu["floor"])
        print(
            f"\n{workload}: warm keep-alive connection, recorded short stream ({rounds * per_round} calls each)"
        )
        print(f"  {'approach':<16}{'TTFE x':>8}{'median us':>11}{'p90 us':>9}{'CPU x':>8}{'CPU us/req':>12}")
        for name in ttfe:
            t, c = statistics.median(ttfe[name]), statistics.median(cpu[name])
            p90 = statistics.quantiles(ttfe[name], n=10)[-1]
            print(
                f"  {name:<16}{t / floor_t:>7.2f}x{t * 1e6:>11.0f}{p90 * 1e6:>9.0f}{c / floor_c:>7.2f}x{c * 1e6:>12.0f}"
            )


# --- many concurrent streams, each size in a fresh process -----------------------------------------


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed between listdir and readlink
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return n


async def _server_open(base: str) -> int:
    async with httpx.AsyncClient() as http:
        return (await http.get(base + "/stats")).json()["open"]


async def concurrent_child(base: str, approach: str, streams: int, events: int, interval_ms: int) -> None:
    path = f"/chat/paced/{events}/{interval_ms}"
    make: dict[str, Callable[[], Any]] = {
        "llmroute": lambda: Ours(base, "chat"),
        "floor": lambda: Floor(base, "chat"),
        "openai SDK": lambda: OpenAISDK(base, "chat"),
    }
    runner = make[approach]()
    if isinstance(runner, Ours):
        runner.request(path)
    sockets0 = _sockets()
    gc.collect()
    rss0 = _rss_kb()
    errors: dict[str, int] = {}
    ok = 0

    async def one() -> None:
        nonlocal ok
        try:
            counts = await runner.run(path)
            assert counts[0] == events, counts
            ok += 1
        except Exception as exc:
            key = f"{type(exc).__name__}: {str(exc)[:90]}"
            errors[key] = errors.get(key, 0) + 1

    peak = rss0

    async def sample() -> None:  # ru_maxrss would report the import-time peak, not the streams'
        nonlocal peak
        while True:
            peak = max(peak, _rss_kb())
            await anyio.sleep(0.05)

    start, start_cpu = time.perf_counter(), time.process_time()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        async with anyio.create_task_group() as running:
            for _ in range(streams):
                running.start_soon(one)
        tg.cancel_scope.cancel()
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    await runner.aclose()
    await anyio.sleep(0.2)
    result = {
        "ok": ok,
        "errors": errors,
        "wall": wall,
        "cpu": cpu,
        "rss_growth_kb": peak - rss0,
        "sockets_left": _sockets() - sockets0,
        "server_open": await _server_open(base),
    }
    print(json.dumps(result))


def bench_concurrency(base: str, sizes: tuple[int, ...], events: int, interval_ms: int) -> None:
    names = ["floor", "llmroute", "openai SDK"]
    print(
        f"\nconcurrent token-paced Chat streams ({events} events {interval_ms} ms apart, {events * interval_ms / 1000:g} s each)"
    )
    print(
        f"  {'approach':<12}{'streams':>8}{'ok':>6}{'wall s':>8}{'CPU s':>7}{'CPU x':>7}{'KB/stream':>10}{'left open':>10}  errors"
    )
    for size in sizes:
        rows: dict[str, dict[str, Any]] = {}
        for name in names:
            proc = subprocess.run(
                [sys.executable, __file__, "_child", base, name, str(size), str(events), str(interval_ms)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode:
                print(f"  {name}: child failed: {proc.stderr[-500:]}")
                continue
            rows[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        floor_cpu = rows["floor"]["cpu"] if "floor" in rows else float("nan")
        for name, r in rows.items():
            print(
                f"  {name:<12}{size:>8}{r['ok']:>6}{r['wall']:>8.1f}{r['cpu']:>7.1f}{r['cpu'] / floor_cpu:>6.2f}x"
                f"{r['rss_growth_kb'] / size:>10.1f}{r['sockets_left']:>5}/{r['server_open']:<4}  {r['errors'] or ''}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "what", choices=["bulk", "paced", "ttfe", "concurrency", "all"], nargs="?", default="all"
    )
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--sizes", default="200,1000", help="concurrent stream counts")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help="bulk/paced workloads (chat,anthropic,gemini)"
    )
    parser.add_argument("--events", type=int, default=60, help="events per concurrent stream")
    parser.add_argument("--interval", type=int, default=200, help="ms between events in a concurrent stream")
    args = parser.parse_args()
    print(
        f"python {sys.version.split()[0]}, httpx {httpx.__version__}, msgspec {msgspec.__version__}, {os.cpu_count()} CPUs"
    )
    with serve() as base:
        for what in ("bulk", "paced", "ttfe", "concurrency"):
            if args.what not in (what, "all"):
                continue
            if what == "concurrency":
                sizes = tuple(int(s) for s in args.sizes.split(","))
                bench_concurrency(base, sizes, args.events, args.interval)
            elif what == "ttfe":
                anyio.run(bench_ttfe, base, args.reps)
            else:
                anyio.run(bench_cpu, base, what, args.reps, tuple(args.workloads.split(",")))


def _run_child(argv: list[str]) -> None:
    base, approach, streams, events, interval = argv
    anyio.run(concurrent_child, base, approach, int(streams), int(events), int(interval))


if __name__ == "__main__":
    if sys.argv[1:2] == ["_child"]:
        _run_child(sys.argv[2:])
    else:
        main()
