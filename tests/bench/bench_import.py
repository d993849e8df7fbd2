"""``import llmroute`` wall time: median of fresh processes, and which heavy modules it pulls in.

.venv/bin/python tests/bench/bench_import.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def timed(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    baseline = statistics.median(timed("pass") for _ in range(RUNS))
    ours = statistics.median(timed("import llmroute") for _ in range(RUNS))
    print(f"python startup: {baseline * 1e3:.0f} ms")
    print(f"import llmroute: {(ours - baseline) * 1e3:.0f} ms over startup (median of {RUNS})")
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, llmroute; print(sorted(m for m in ('botocore','websockets','yaml','vcr','openai') if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(f"heavy modules imported: {heavy}")


if __name__ == "__main__":
    main()
