"""``import llmroute`` time: medians over fresh processes, and which heavy modules it pulls in.

.venv/bin/python tests/bench/bench_import.py [--runs N]

Measured as users run it, with bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped for the
child processes and one warm-up run writes the caches; without them every import compiles its
source, which here costs more than the imports themselves). ``import msgspec`` is timed alongside,
interleaved: it is most of the cost, and its share tells what llmroute's own modules add. Each
figure is over interpreter start-up (``python -c pass``), as wall time and as the child's CPU time
(user + system), which a loaded machine disturbs less.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(code: str) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -c code`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    runs_n = parser.parse_args().runs
    codes = ("pass", "import msgspec", "import llmroute")
    timed("import llmroute")  # writes the bytecode caches
    wall: dict[str, list[float]] = {code: [] for code in codes}
    cpu: dict[str, list[float]] = {code: [] for code in codes}
    for i in range(runs_n):
        k = i % len(codes)
        for code in codes[k:] + codes[:k]:  # interleaved, the order rotated
            w, c = timed(code)
            wall[code].append(w)
            cpu[code].append(c)
    print(f"median of {runs_n} fresh processes each, interleaved")
    for what, runs in (("wall", wall), ("CPU", cpu)):
        baseline, msgspec_, ours = (statistics.median(runs[code]) for code in codes)
        print(
            f"{what:>4}: python start-up {baseline * 1e3:.0f} ms; import msgspec {(msgspec_ - baseline) * 1e3:.0f} ms "
            f"over start-up; import llmroute {(ours - baseline) * 1e3:.0f} ms over start-up "
            f"({(ours - msgspec_) * 1e3:.0f} ms over msgspec)"
        )
    heavy = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, llmroute; print(sorted(m for m in ('httpx','anyio','botocore','websockets','yaml','vcr','openai','pathlib','mimetypes') if m in sys.modules))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=ENV,
    ).stdout.strip()
    print(f"heavy modules imported: {heavy}")


if __name__ == "__main__":
    main()
