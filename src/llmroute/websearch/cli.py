"""``llmroute search "query" [--provider ...]... [--format json|markdown] [--cited]``, and the grounded-search
part of ``llmroute demo`` (bundled recordings, no keys, no network).

Credentials come from the environment and opencode's files (``--config``, default ``opencode.json``
/ ``opencode.jsonc`` here, else ``~/.config/opencode/``; ``--auth``, default
``~/.local/share/opencode/auth.json``), with the precedence of ``websearch.config``. Progress goes to
stderr; the result to stdout. Exit status: 0 answered, 1 the search failed, 2 nothing to search
with (the message names what to set) or the arguments / files are wrong, 3 with ``--cited``: the
answer had no source that can be cited (``UNGROUNDED_ANSWER``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio
import msgspec

from ..schema.errors import LLMError
from ..terminal import sanitize
from .answer import GroundedAnswer
from .cited import UngroundedAnswerError, render_cited
from .config import PROVIDERS
from .result import SearchError, error_result, render, report_error, report_markdown
from .search import GroundedSearch, check_arguments

__all__ = ["DEMO_SCENES", "SearchScene", "add_parser", "demo", "handler"]

_CONFIG_NAMES = ("opencode.json", "opencode.jsonc")


# Exit codes: 0 an answer, 1 the search failed, 2 bad arguments or no credentials, 3 (--cited) the
# provider answered without a source that can be cited.
EXIT_UNGROUNDED = 3


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "search",
        help="LLM-grounded web search with cited sources (needs a provider key or login)",
        description="Ask a provider's web-search-grounded model and print its answer with [n] citation "
        "markers and numbered sources. Credentials: the providers' environment variables, or opencode's "
        "config and auth.json.",
        epilog="exit codes: 0 an answer, 1 the search failed, 2 bad arguments or no credentials, "
        f"{EXIT_UNGROUNDED} with --cited: the answer had no source that can be cited",
    )
    p.add_argument("query", help="what to search for")
    p.add_argument(
        "--provider",
        action="append",
        dest="providers",
        choices=PROVIDERS,
        help="provider to try, in order (repeat for fallbacks; default: " + ", ".join(PROVIDERS) + ")",
    )
    p.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="opencode config, JSON/JSONC (default: ./opencode.json, else ~/.config/opencode/)",
    )
    p.add_argument(
        "--auth", metavar="FILE", help="opencode auth.json (default: ~/.local/share/opencode/auth.json)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--cited",
        action="store_true",
        help="cite by construction: [Source](url) links and a ## Sources list taken only from the "
        f"grounding; an answer with nothing citable is an error (exit {EXIT_UNGROUNDED})",
    )
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
    if args.cited and not isinstance(outcome, SearchError):
        return _cited(outcome, query, args.format, out)
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


def _cited(answer: GroundedAnswer, query: str, fmt: str, out: TextIO) -> int:
    """The answer cited by construction (``render_cited``); with nothing citable, the
    ``UNGROUNDED_ANSWER`` error and exit ``EXIT_UNGROUNDED``."""
    result = render(answer, query)
    try:
        cited = render_cited(answer) if sanitize(answer.text).strip() else None
    except UngroundedAnswerError as exc:
        error = SearchError(str(exc), "UNGROUNDED_ANSWER", provider=answer.provider)
        out.write(error_result(error).to_json() + "\n" if fmt == "json" else report_error(error))
        out.flush()
        if not out.isatty():
            print(f"llmroute search: {error.message}", file=sys.stderr)
        return EXIT_UNGROUNDED
    if fmt == "json":
        shown = result if cited is None else msgspec.structs.replace(result, llm_content=cited)
        out.write(shown.to_json() + "\n")
    else:
        out.write(cited if cited is not None else report_markdown(answer))
    out.flush()
    return 0


# -- demo -----------------------------------------------------------------------------------------------


class SearchScene(msgspec.Struct, frozen=True):
    """One grounded answer replayed offline."""

    title: str
    """The heading shown above the scene."""
    provider: str
    """The provider that answered."""
    model: str
    """The model that answered."""
    recording: str
    """The recording bundled with ``llmroute demo`` (``llmroute/demo/recordings``, made by
    ``scripts/bundle_demo.py``)."""
    source: str
    """The cassette under ``cassettes/`` whose first, non-streamed interaction the recording was made
    from."""
    query: str
    """The question, as recorded."""


DEMO_SCENES: tuple[SearchScene, ...] = (
    SearchScene(
        "Gemini",
        "google",
        "gemini-2.5-pro",
        "search-gemini",
        "pydantic-ai/test_google/test_google_model_web_search_tool.yaml",
        "What is the weather in San Francisco today?",
    ),
    SearchScene(
        "OpenAI Responses",
        "openai",
        "gpt-5",
        "search-openai-responses",
        "pydantic-ai/test_openai_responses/test_openai_responses_model_builtin_tools_web_search.yaml",
        "Give me the top 3 news in the world today",
    ),
    SearchScene(
        "Anthropic",
        "anthropic",
        "claude-sonnet-4-0",
        "search-anthropic",
        "pydantic-ai/test_anthropic/test_anthropic_web_search_tool.yaml",
        "What is the weather in San Francisco today?",
    ),
)


async def demo(out: TextIO, limit: int = 1200) -> None:
    """Grounded search on the bundled recordings: each provider's answer as the tool result the
    model reads (``[n]`` markers, ``Sources:``), an answer over ``limit`` characters cut (``_cut``)."""
    import httpx

    from ..cli.console import Style, use_color
    from ..cli.demo import load_recording
    from ..client import Client
    from ..testing.replay import ReplayTransport

    style = Style(use_color(out))
    out.write(
        f"\n{style.bold}Grounded web search{style.reset} (llmroute.websearch): recorded answers turned into the "
        "tool result an agent's model reads, with [n] citation markers and numbered Sources.\n"
        f'{style.dim}Live: llmroute search "your question" (needs a provider key; see llmroute search --help){style.reset}\n'
    )
    for scene in DEMO_SCENES:
        out.write(f"\n{style.bold}== Grounded search ({scene.title}, {scene.model}){style.reset}\n")
        out.write(f"{style.cyan}> {scene.query}{style.reset}\n")
        transport = ReplayTransport(load_recording(scene.recording))
        options = {"apiKey": "demo", "websearch_grounded": {"model": scene.model}}
        config = {"provider": {scene.provider: {"options": options}}}
        client = Client(http=httpx.AsyncClient(transport=transport))
        async with client, GroundedSearch([scene.provider], config=config, env={}, client=client) as search:
            result = await search.run({"query": scene.query})
        body, sep, sources = result.llm_content.partition("\n\nSources:\n")
        out.write(f"{_cut(body, limit)}{sep}{sources}\n")
        out.flush()


def _cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, cut after a whole paragraph where there is one."""
    if len(text) <= limit:
        return text
    end = text.rfind("\n\n", 0, limit)
    return f"{text[:end] if end > 0 else text[: limit - 1]}\n[… {len(text) - max(end, limit - 1)} more characters]"
