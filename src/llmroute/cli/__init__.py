"""The ``llmroute`` command: ``demo`` (offline, bundled recordings), ``chat`` (live), and the
subcommands other packages register in ``SUBCOMMANDS``.

The presentation layer lives in this package: ``console`` (an event stream written to a terminal)
and ``demo`` (the bundled recordings and their scenes). ``python -m llmroute`` and
``python -m llmroute.cli`` both run ``main``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn, TextIO

import anyio

from .._version import __version__
from ..build import request
from ..client import Client
from ..providers.registry import facade_names, named_facades
from ..route.model import Model
from ..schema.errors import LLMError
from ..schema.options import GenerationOptions
from ..schema.response import LLMResponse
from .console import Renderer, use_color

__all__ = ["EXIT_ERROR", "EXIT_USAGE", "UsageError", "main", "resolve_model"]

EXIT_ERROR = 1  # the provider or the network failed
EXIT_USAGE = 2  # bad options or configuration (argparse uses 2 as well)


class UsageError(Exception):
    """Bad options or configuration: printed as ``llmroute <command>: <message>``, exit code 2."""


def resolve_model(spec: str, base_url: str | None = None) -> Model:
    """``provider:model-id`` -> a Model with credentials from the environment. ``compatible:ID``
    (with ``base_url``) is any OpenAI-compatible server; ``base_url`` overrides any provider's."""
    provider, sep, model_id = spec.partition(":")
    if not sep or not model_id:
        raise UsageError(f"--model must look like provider:model-id, e.g. openai:gpt-4o-mini (got {spec!r})")
    extra = {"base_url": base_url} if base_url else {}
    facades = named_facades(aliases=True)
    try:
        if provider in facades:
            facade = facades[provider]
            return getattr(facade.load().configure(**extra), facade.chat)(model_id)
        compatible = importlib.import_module("llmroute.providers.compatible")
        if provider == "compatible":
            if not base_url:
                raise UsageError("compatible:MODEL needs --base-url (the server's OpenAI-compatible /v1 URL)")
            return compatible.configure(**extra).model(model_id)
        if provider in compatible.FAMILIES:
            return compatible.configure(provider, **extra).model(model_id)
    except ImportError as exc:
        raise UsageError(f"provider {provider!r} is not available: {exc}") from None
    raise UsageError(f"unknown provider {provider!r}; known: {', '.join(facade_names(aliases=True))}")


# The facades' messages name Python keywords (``pass api_key=...``); at the command line only the
# environment and ``--base-url`` exist, so those hints are reworded for the CLI.
_CLI_HINTS: tuple[tuple[str, str], ...] = (
    ("pass api_key=... or set ", "set "),
    ("pass region=..., set ", "set "),
    ("pass resource= or base_url=, or set ", "pass --base-url, or set "),
    ("; or pass token_provider=, or pip install ", "; or pip install "),
)


def _cli_message(message: str) -> str:
    for python, cli in _CLI_HINTS:
        message = message.replace(python, cli)
    return message


def _read_prompt(prompt: str) -> str:
    """The prompt as given, or standard input when it is ``-`` (``git diff | llmroute chat -``)."""
    if prompt != "-":
        return prompt
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("the prompt is '-' (read standard input), but nothing is piped in")
    try:
        return sys.stdin.read()
    except UnicodeDecodeError:
        raise UsageError("standard input is not UTF-8 text") from None


async def _chat(args: argparse.Namespace, out: TextIO) -> int:
    prompt = _read_prompt(args.prompt)
    if not prompt.strip():
        raise UsageError('the prompt is empty: give the message to send, e.g. llmroute chat "Hello"')
    model = resolve_model(args.model, args.base_url)
    built = request(
        model=model,
        system=args.system,
        prompt=prompt,
        generation=GenerationOptions(max_tokens=args.max_tokens),
    )
    renderer = Renderer(out, color=use_color(out), live=out.isatty())
    async with Client() as client:
        await client.prepare(built)  # fails fast on missing credentials, before any network
        stream = client.stream(built)
        folded = stream.track()
        async for event in stream:
            renderer.write(event)
    out.write(_cost_line(folded.build()))
    return 0


def _cost_line(response: LLMResponse) -> str:
    """What the answer cost, after the finish line: the provider's figure or the catalog's."""
    cost = response.cost
    if cost is not None:
        return f"  cost: ${cost.total:f} ({cost.source})\n"
    if response.usage is None or response.provider is None or response.model_id is None:
        return "  cost: unknown\n"
    from ..catalog import cost_reason

    return f"  cost: unknown ({cost_reason(response.provider, response.model_id, response.usage)})\n"


# Subcommands living in other packages: each module defines ``add_parser(subparsers)``, which adds its
# parser and calls ``set_defaults(run=handler)`` with ``handler(args, out) -> exit code``. Imported only
# when the CLI starts, so ``import llmroute`` never pays for them.
SUBCOMMANDS: tuple[str, ...] = ("llmroute.websearch.cli", "llmroute.server.cli", "llmroute.catalog.cli")

# Modules whose ``async def demo(out)`` runs after the built-in demo scenes (e.g. grounded search).
DEMO_EXTRAS: tuple[str, ...] = ("llmroute.websearch.cli",)


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def _add_builtin(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="stream bundled real recordings offline (no keys, no network)",
        description="Replay real recorded provider streams through the whole stack, offline.",
    )
    demo.add_argument(
        "--pace",
        type=_non_negative_float,
        default=None,
        metavar="SECONDS",
        help="seconds between replayed chunks (0: as fast as possible; default: about a second per scene)",
    )
    demo.set_defaults(run=_run_demo)
    chat = sub.add_parser(
        "chat",
        help="stream a live answer (needs the provider's API key)",
        description="Stream one live answer. Credentials come from the provider's environment variables.",
    )
    chat.add_argument("prompt", help="the user message; - reads it from standard input")
    chat.add_argument(
        "--model",
        default="openai:gpt-4o-mini",
        help="provider:model-id, e.g. anthropic:claude-sonnet-4-0, groq:llama-3.3-70b-versatile, "
        "compatible:local (with --base-url); default %(default)s",
    )
    chat.add_argument("--system", help="a system prompt")
    chat.add_argument("--max-tokens", type=_positive_int, metavar="N", help="cap on generated tokens")
    chat.add_argument(
        "--base-url", metavar="URL", help="send to this base URL instead of the provider's (http or https)"
    )
    chat.set_defaults(run=_run_chat)


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    from . import demo
    from .console import Style

    color = use_color(out)
    style = Style(color)

    async def go() -> int:
        out.write(
            f"{style.dim}Real provider streams, recorded earlier and bundled with llmroute, replayed through "
            f"the whole stack: no keys, no network.{style.reset}\n"
        )
        code = await demo.run(out, pace=args.pace, color=color, live=out.isatty())
        for module in DEMO_EXTRAS:
            await importlib.import_module(module).demo(out)
        out.write(
            f'\n{style.dim}Live next: llmroute chat "Hello" --model openai:gpt-4o-mini (reads OPENAI_API_KEY); '
            f"llmroute --help for the other commands.{style.reset}\n"
        )
        return code

    return anyio.run(go)


def _run_chat(args: argparse.Namespace, out: TextIO) -> int:
    return anyio.run(_chat, args, out)


_BUG = "set LLMROUTE_TRACEBACK=1 to see the traceback, and please report it"


def _origin(exc: BaseException) -> str:
    """``llmroute/module.py:line`` of the innermost frame inside llmroute (else the innermost one)."""
    package = Path(__file__).resolve().parents[1]  # llmroute/, this package's parent
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(package)]
    if ours:
        frame = ours[-1]
        return f"llmroute/{Path(frame.filename).resolve().relative_to(package).as_posix()}:{frame.lineno}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "no traceback"


def _fail(command: str, message: str, code: int) -> NoReturn:
    print(f"llmroute {command}: {message}", file=sys.stderr)
    raise SystemExit(code)


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 success, 1 a provider or network failure, 2 bad options or configuration
    (argparse's own usage errors included), 130 interrupted."""
    parser = argparse.ArgumentParser(
        prog="llmroute",
        description="One typed request model and one event stream for every major LLM provider.",
    )
    parser.add_argument("--version", action="version", version=f"llmroute {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_builtin(sub)
    for module in SUBCOMMANDS:
        importlib.import_module(module).add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, sys.stdout))
    except UsageError as exc:
        _fail(args.command, str(exc), EXIT_USAGE)
    except LLMError as exc:
        # Missing credentials and requests rejected before sending are configuration errors.
        from ..schema.errors import AuthenticationError, InvalidRequestError, NoRouteError

        config = isinstance(exc, NoRouteError | InvalidRequestError) and exc.http is None
        config = config or (isinstance(exc, AuthenticationError) and exc.kind == "missing")
        _fail(args.command, _cli_message(str(exc)), EXIT_USAGE if config else EXIT_ERROR)
    except KeyboardInterrupt:
        _fail(args.command, "interrupted", 130)
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 0
    except Exception as exc:
        if os.environ.get("LLMROUTE_TRACEBACK"):
            raise
        # A bug, or input a check missed: its text may hold request data (a key, a prompt), so only
        # its type and where it was raised are shown.
        _fail(args.command, f"unexpected {type(exc).__name__} ({_origin(exc)}); {_BUG}", EXIT_ERROR)
