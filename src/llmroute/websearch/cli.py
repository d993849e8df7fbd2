"""``llmroute search "query" [--provider ...]... [--format json|markdown]``, and the grounded-search
part of ``llmroute demo`` (bundled recordings, no keys, no network).

Credentials come from the environment and opencode's files (``--config``, default ``opencode.json``
/ ``opencode.jsonc`` here, else ``~/.config/opencode/``; ``--auth``, default
``~/.local/share/opencode/auth.json``), with the precedence of ``websearch.config``. Progress goes to
stderr; the result to stdout. Exit status: 0 answered, 1 the search failed, 2 nothing to search
with (the message names what to set) or the arguments / files are wrong.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio

from ..schema.errors import LLMError
from .config import PROVIDERS
from .result import SearchError, error_result, render, report_error, report_markdown
from .search import GroundedSearch, check_arguments

__all__ = ["add_parser", "demo", "handler"]

_CONFIG_NAMES = ("opencode.json", "opencode.jsonc")
_SOURCE_CASSETTES = Path(__file__).resolve().parents[3] / "cassettes"  # the source tree's recordings


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "search", help="LLM-grounded web search with cited sources (needs a provider key or login)"
    )
    p.add_argument("query")
    p.add_argument(
        "--provider",
        action="append",
        dest="providers",
        choices=PROVIDERS,
        help="provider to try, in order (repeat for fallbacks; default: " + ", ".join(PROVIDERS) + ")",
    )
    p.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    p.add_argument("--config", help="opencode config (JSON/JSONC)")
    p.add_argument("--auth", help="opencode auth.json")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=handler)


def _default_config() -> Path | None:
    for folder in (Path.cwd(), Path.home() / ".config" / "opencode"):
        for name in _CONFIG_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


def _default_auth() -> Path | None:
    path = Path.home() / ".local" / "share" / "opencode" / "auth.json"
    return path if path.is_file() else None


def handler(args: argparse.Namespace, out: TextIO) -> int:
    return anyio.run(_search, args, out)


async def _search(args: argparse.Namespace, out: TextIO) -> int:
    def progress(line: str) -> None:
        if not args.quiet:
            print(f"llmroute search: {line}", file=sys.stderr, flush=True)

    checked = check_arguments({"query": args.query})
    try:
        search = GroundedSearch(
            args.providers or PROVIDERS,
            config=args.config or _default_config(),
            auth=args.auth or _default_auth(),
            on_progress=progress,
        )
    except LLMError as exc:
        print(f"llmroute search: {exc}", file=sys.stderr)
        return 2
    async with search:
        outcome = checked if isinstance(checked, SearchError) else await search.answer(checked)
    query = checked if isinstance(checked, str) else args.query
    if args.format == "json":
        result = error_result(outcome) if isinstance(outcome, SearchError) else render(outcome, query)
        out.write(result.to_json() + "\n")
    else:
        out.write(report_error(outcome) if isinstance(outcome, SearchError) else report_markdown(outcome))
    out.flush()
    if isinstance(outcome, SearchError):
        if outcome.type == "NO_PROVIDERS_AVAILABLE" or outcome.type.startswith(("MISSING_", "INVALID_")):
            if not out.isatty():  # stdout went elsewhere: say what to set where the user looks
                print(f"llmroute search: {outcome.message}", file=sys.stderr)
            return 2
        return 1
    return 0


# -- demo -----------------------------------------------------------------------------------------------

# provider, model, recording (one non-streamed grounded answer), query as recorded
_DEMO = (
    ("google", "gemini-2.5-pro", "pydantic-ai/test_google/test_google_model_web_search_tool.yaml", "What is the weather in San Francisco today?"),
    ("openai", "gpt-5", "pydantic-ai/test_openai_responses/test_openai_responses_model_builtin_tools_web_search.yaml", "Give me the top 3 news in the world today"),
    ("anthropic", "claude-sonnet-4-0", "pydantic-ai/test_anthropic/test_anthropic_web_search_tool.yaml", "What is the weather in San Francisco today?"),
)  # fmt: skip


async def demo(out: TextIO, root: Path | None = None, limit: int = 1200) -> None:
    """Grounded search on the recordings under ``root`` (default: ``LLMROUTE_CASSETTES``, else the
    source tree's ``cassettes/``; scenes whose recording is absent are skipped): each provider's
    answer as the tool result the model reads (``[n]`` markers, ``Sources:``)."""
    import httpx

    from ..client import Client
    from ..testing.cassette import Cassette
    from ..testing.replay import ReplayTransport

    if root is None:
        env = os.environ.get("LLMROUTE_CASSETTES")
        root = Path(env) if env else _SOURCE_CASSETTES
    from ..console import use_color

    bold, reset = ("\033[1m", "\033[0m") if use_color(out) else ("", "")
    for provider, model, rel, query in _DEMO:
        path = root / rel
        if not path.exists():
            continue
        out.write(
            f"\n{bold}== Grounded search ({provider}): websearch_grounded tool result{reset}  ({rel})\n"
        )
        cassette = Cassette.load(path)
        transport = ReplayTransport(cassette.interactions[:1])
        options = {"apiKey": "demo", "websearch_grounded": {"model": model}}
        client = Client(http=httpx.AsyncClient(transport=transport))
        async with (
            client,
            GroundedSearch(
                [provider], config={"provider": {provider: {"options": options}}}, env={}, client=client
            ) as search,
        ):
            result = await search.run({"query": query})
        body, sep, sources = result.llm_content.partition("\n\nSources:\n")
        out.write(body if len(body) <= limit else body[: limit - 1] + "…")
        out.write(f"{sep}{sources}\n")
        out.flush()
