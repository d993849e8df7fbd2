"""Instructions per text event under ``valgrind --tool=callgrind``: load-independent, unlike CPU time.

    .venv/bin/python tests/bench/bench_callgrind.py [--workloads chat,anthropic,gemini] [--mode bulk]

For each workload and mode, runs the recorded stream (``_workloads``) through ``Client.stream``
over ``httpx.MockTransport`` (no sockets: the count is llmroute + httpx + msgspec, not the kernel)
twice under callgrind, with ``--small`` and ``--large`` text events, and reports
``(I_large - I_small) / (large - small)``: the instructions one more text event costs, start-up and
the request cancel out. ``floor`` does the same with raw ``httpx`` + a minimal SSE split + a
``msgspec`` decode of just the text; ``batches`` is llmroute read through
``EventStream.batches()``. Modes: ``bulk`` (16 KiB reads), ``paced`` (one event per read).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``tests.bench`` importable

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ("chat", "anthropic", "gemini")
READ = 16 * 1024


def _reads(events: list[bytes], mode: str) -> list[bytes]:
    if mode == "paced":
        return events
    body = b"".join(events)
    return [body[i : i + READ] for i in range(0, len(body), READ)]


def _model(workload: str, base: str) -> Any:
    from llmroute.providers import anthropic, google, openai

    if workload == "chat":
        return openai.configure(api_key="sk-bench", base_url=base + "/v1").chat("gpt-4o-mini")
    if workload == "anthropic":
        return anthropic.configure(api_key="sk-ant-bench", base_url=base + "/v1").messages("claude-haiku-4-5")
    return google.configure(api_key="bench", base_url=base + "/v1beta").gemini("gemini-3-pro-preview")


def child(workload: str, mode: str, approach: str, n: int) -> None:
    import anyio
    import httpx

    import llmroute
    from tests.bench._workloads import workloads
    from tests.bench.bench_socket import _anthropic_text, _chat_text, _gemini_text  # the same floor

    reads = _reads(workloads()[workload].events(n), mode)

    async def body() -> AsyncIterator[bytes]:
        for read in reads:
            yield read

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    text = {"chat": _chat_text, "anthropic": _anthropic_text, "gemini": _gemini_text}[workload]
    sep = b"\r\n\r\n" if workload == "gemini" else b"\n\n"

    async def ours() -> int:
        client = llmroute.Client(http)
        request = llmroute.request(model=_model(workload, "http://bench.test"), prompt="hi")
        count = 0
        async with client.stream(request) as stream:
            async for event in stream:
                if event.type == "text-delta":
                    count += 1
        return count

    async def batches() -> int:  # ``EventStream.batches()``: no per-event resume of the stream
        client = llmroute.Client(http)
        request = llmroute.request(model=_model(workload, "http://bench.test"), prompt="hi")
        count = 0
        async with client.stream(request) as stream:
            async for batch in stream.batches():
                for event in batch:
                    if event.type == "text-delta":
                        count += 1
        return count

    async def floor() -> int:
        count = 0
        buf = b""
        async with http.stream("POST", "http://bench.test/") as response:
            async for chunk in response.aiter_bytes():
                buf += chunk
                *events, buf = buf.split(sep)
                for event in events:
                    for line in event.splitlines():
                        if line.startswith(b"data:") and text(line[5:].strip()) is not None:
                            count += 1
        return count

    got = anyio.run({"llmroute": ours, "batches": batches, "floor": floor}[approach])
    assert got >= n, (workload, approach, got, n)


def _instructions(args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *args],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        summary = re.search(r"^summary:\s+(\d+)", Path(out).read_text(), re.M)
        assert summary is not None
        return int(summary.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--mode", default="bulk,paced")
    parser.add_argument("--approach", default="llmroute,floor")
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    parser.add_argument("--child", nargs=4, metavar=("WORKLOAD", "MODE", "APPROACH", "N"))
    args = parser.parse_args()
    if args.child:
        workload, mode, approach, n = args.child
        child(workload, mode, approach, int(n))
        return
    me = ["-m", "tests.bench.bench_callgrind", "--child"]
    for mode in args.mode.split(","):
        for workload in args.workloads.split(","):
            row = []
            for approach in args.approach.split(","):
                small = _instructions([*me, workload, mode, approach, str(args.small)])
                large = _instructions([*me, workload, mode, approach, str(args.large)])
                row.append(f"{approach} {(large - small) / (args.large - args.small):,.0f}")
            print(f"{mode:5} {workload:9} instructions per text event: " + ", ".join(row), flush=True)


if __name__ == "__main__":
    main()
