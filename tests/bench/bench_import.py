"""``import llmroute`` wall time: median of fresh processes, and which heavy modules it pulls in.

.venv/bin/python tests/bench/bench_import.py

Measured as users run it, with bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped for the
child processes and one warm-up run writes the caches; without them every import compiles its
source, which here costs more than the imports themselves). ``import msgspec`` is timed alongside,
interleaved: it is most of the cost, and its share tells what llmroute's own modules add.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

RUNS = 9
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
    return time.perf_counter() - start


def main() -> None:
    codes = ("pass", "import msgspec", "import llmroute")
    timed("import llmroute")  # writes the bytecode caches
    runs: dict[str, list[float]] = {code: [] for code in codes}
    for _ in range(RUNS):
        for code in codes:
            runs[code].append(timed(code))
    baseline, msgspec_, ours = (statistics.median(runs[code]) for code in codes)
    print(f"python startup: {baseline * 1e3:.0f} ms")
    print(f"import msgspec: {(msgspec_ - baseline) * 1e3:.0f} ms over startup")
    print(
        f"import llmroute: {(ours - baseline) * 1e3:.0f} ms over startup "
        f"({(ours - msgspec_) * 1e3:.0f} ms over msgspec; median of {RUNS}, interleaved)"
    )
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, llmroute; print(sorted(m for m in ('httpx','anyio','botocore','websockets','yaml','vcr','openai') if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"heavy modules imported: {heavy}")


if __name__ == "__main__":
    main()
