"""Grounded-search rendering is linear: 1,000 citations on a 100 KB answer, then 10x both.

    .venv/bin/python tests/bench/bench_websearch.py

Renders the tool result (``[n]`` markers + ``Sources:``) and the Markdown report of a synthetic
non-ASCII answer; prints the median time per size and the ratio of the large to the small case
(about 10 when linear; a quadratic splice would show about 100).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from llmroute.websearch import GroundedAnswer
from llmroute.websearch.result import render, report_markdown

SENTENCE = "Der Eiffelturm ist 330 m hoch, 東京タワーは333mです 🗼. "


def answer(size: int, n_citations: int, n_sources: int = 50) -> GroundedAnswer:
    text = SENTENCE * (size // len(SENTENCE.encode()))  # about ``size`` UTF-8 bytes
    step = max(1, len(text) // n_citations)
    cites = [
        (i * step, min(len(text), (i + 1) * step), [i % n_sources, (i * 7) % n_sources])
        for i in range(n_citations)
    ]
    sources = [(f"https://site{i}.test/page", f"Site {i}") for i in range(n_sources)]
    return GroundedAnswer.from_parts(text=text, sources=sources, citations=cites, provider="google")


def timed(a: GroundedAnswer, runs: int = 15) -> float:
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        render(a, "q")
        report_markdown(a)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    small = answer(100_000, 1_000)
    large = answer(1_000_000, 10_000)
    t_small, t_large = timed(small), timed(large)
    print(f"100 KB / 1,000 citations:   {t_small * 1e3:8.2f} ms")
    print(f"1 MB / 10,000 citations:    {t_large * 1e3:8.2f} ms")
    print(f"ratio (10x input):          {t_large / t_small:8.1f}")


if __name__ == "__main__":
    main()
