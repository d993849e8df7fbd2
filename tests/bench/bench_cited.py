"""Cited-search building blocks: throughput and linearity (a benchmark, not a test).

- ``render_cited`` + ``check_citations``: 1,000 citations on a 100 KB answer, and 4x both (a linear
  renderer takes about 4x as long).
- ``sanitize``: 10 MB of clean text (the fast path), 10 MB laced with escape sequences, and the same
  through ``StreamSanitizer`` in 16 KiB chunks and in 1-character chunks (1 MB).
- Hostile Markdown (unclosed comments, 20k ``[Source](`` openers, 30k list lines, ...): checking and
  rendering stay near-linear (bounded match attempts), each at 1x and 4x size.
- ``classify_intent``: messages per second.

    .venv/bin/python tests/bench/bench_cited.py
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from llmroute.terminal import sanitize
from llmroute.websearch import GroundedAnswer, StreamSanitizer, check_citations, classify_intent, render_cited

REPEATS = 5


def timed(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    fn()
    times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def answer(size: int, citations: int, seed: int = 7) -> GroundedAnswer:
    rng = random.Random(seed)
    words = ["Der", "Eiffelturm", "ist", "330 m", "hoch.", "東京タワー", "🗼", "`code`", "naïve", "café."]
    parts: list[str] = []
    length = 0
    while length < size:
        w = rng.choice(words)
        parts.append(w)
        length += len(w) + 1
    text = " ".join(parts)
    sources = [(f"https://source{n}.test/page/{n}", f"Source {n}") for n in range(50)]
    ends = sorted(rng.randrange(1, len(text)) for _ in range(citations))
    spans = [(max(0, e - 40), e, [rng.randrange(50), rng.randrange(50)]) for e in ends]
    return GroundedAnswer.from_parts(text=text, sources=sources, citations=spans)


def main() -> None:
    print("render_cited + check_citations")
    base = None
    for scale in (1, 4):
        a = answer(100_000 * scale, 1_000 * scale)
        out = render_cited(a)
        t_render = timed(lambda a=a: render_cited(a))
        t_check = timed(lambda out=out: check_citations(out))
        base = base or (t_render, t_check)
        print(
            f"  {len(a.text) // 1000:>4} KB, {len(a.citations):>5} citations: render {t_render * 1e3:7.1f} ms"
            f" ({t_render / base[0]:.2f}x), check {t_check * 1e3:7.1f} ms ({t_check / base[1]:.2f}x)"
        )

    print("sanitize")
    clean = ("plain text with ünïcödé 東京 🗼 and more words\n" * 250_000)[:10_000_000]
    dirty = (
        "text \x1b[31mred\x1b[0m \x1b]8;;https://x.test\x07link\x1b]8;;\x07 \u202eabc\u202c\x00 " * 200_000
    )[:10_000_000]
    for name, text in (("clean 10 MB", clean), ("escapes 10 MB", dirty)):
        t = timed(lambda text=text: sanitize(text), 3)
        print(f"  {name:<14} {t * 1e3:8.1f} ms  {len(text) / t / 1e6:7.1f} MB/s")
    for name, size in (("16 KiB chunks", 16 * 1024), ("1-char chunks", 1)):
        text = dirty if size > 1 else dirty[:1_000_000]

        def run(text: str = text, size: int = size) -> None:
            s = StreamSanitizer()
            for i in range(0, len(text), size):
                s.feed(text[i : i + size])
            s.close()

        t = timed(run, 3)
        print(f"  stream {name:<14} {t * 1e3:8.1f} ms  {len(text) / t / 1e6:7.1f} MB/s")

    print("hostile Markdown (check / render, 1x then 4x)")
    hostile = {
        "unclosed comments": "<!--",
        "[Source]( openers": "[Source](",
        "open titles": '[a](b "',
        "backtick runs": "`a``b",
        "list lines": "- x\n",
        "type-7 html lines": "<a>\n",
    }
    for name, unit in hostile.items():
        row = []
        for scale in (1, 4):
            text = unit * (100_000 * scale // len(unit))
            grounded = GroundedAnswer.from_parts(
                text=text, sources=[("https://a.test/", "A")], citations=[(0, len(text) // 2, [0])]
            )
            row.append(timed(lambda text=text: check_citations(text), 1))
            row.append(timed(lambda g=grounded: render_cited(g), 1))
        print(
            f"  {name:<18} {row[0] * 1e3:7.1f} / {row[1] * 1e3:7.1f} ms -> "
            f"{row[2] * 1e3:7.1f} / {row[3] * 1e3:7.1f} ms ({row[2] / row[0]:.1f}x / {row[3] / row[1]:.1f}x)"
        )

    msgs = [
        "帮我搜索一下最新的AI新闻",
        "find the bug in this function",
        "What's the weather in Tokyo today?",
    ] * 10_000
    t = timed(lambda: [classify_intent(m) for m in msgs], 3)
    print(f"classify_intent  {len(msgs) / t / 1e3:8.1f} k messages/s")


if __name__ == "__main__":
    main()
