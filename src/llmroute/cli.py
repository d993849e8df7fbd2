"""The ``llmroute`` command: ``demo`` (offline, bundled recordings) and ``chat`` (live)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx

from . import build
from .route.client import Client
from .route.model import Model
from .schema.errors import LLMError
from .schema.events import (
    Citation,
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextStart,
    ToolCall,
    ToolResult,
)
from .schema.options import GenerationOptions
from .schema.request import LLMRequest

__all__ = ["main"]


def _cassette_root() -> Path:
    env = os.environ.get("LLMROUTE_CASSETTES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "cassettes"


class DemoScene:
    def __init__(
        self, title: str, cassette: str, model: Callable[[], Model], prompt: str, **request: Any
    ) -> None:
        self.title = title
        self.cassette = cassette
        self.model = model
        self.prompt = prompt
        self.request = request


def _facade(module: str) -> Any:
    return importlib.import_module(f"llmroute.providers.{module}")


def _scenes() -> list[DemoScene]:
    tool = {"tools": [_weather_tool()]}
    return [
        DemoScene(
            "OpenAI Chat: text after a tool result",
            "opencode/openai-chat/continues-after-tool-result.yaml",
            lambda: _facade("openai").configure(api_key="sk-demo").chat("gpt-4o-mini"),
            "What is the weather in Paris?",
        ),
        DemoScene(
            "xAI (OpenAI-compatible): reasoning, then text",
            "opencode/openai-compatible-chat/xai-streams-text.yaml",
            lambda: _facade("compatible").configure("xai", api_key="xai-demo").model("grok-3-mini"),
            "Reply with exactly: Hello!",
        ),
        DemoScene(
            "Groq (OpenAI-compatible): a tool call",
            "opencode/openai-compatible-chat/groq-streams-tool-call.yaml",
            lambda: (
                _facade("compatible").configure("groq", api_key="gsk-demo").model("llama-3.3-70b-versatile")
            ),
            "Call get_weather with city exactly Paris.",
            tool_choice="get_weather",
            **tool,
        ),
        DemoScene(
            "OpenAI Responses: reasoning (encrypted, round-trippable), then text",
            "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml",
            lambda: _facade("openai").configure(api_key="sk-demo").responses("gpt-5.5"),
            "Think briefly, then answer.",
        ),
        DemoScene(
            "Bedrock Converse: binary AWS event-stream",
            "opencode/bedrock-converse/streams-text.yaml",
            lambda: (
                _facade("bedrock")
                .configure(region="us-east-1", api_key="demo")
                .converse("us.amazon.nova-micro-v1:0")
            ),
            "Say hello.",
        ),
        DemoScene(
            "Anthropic: hosted web search with citations",
            "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
            lambda: _facade("anthropic").configure(api_key="demo").messages("claude-sonnet-4-0"),
            "Give me the top 3 news in the world today.",
        ),
        DemoScene(
            "Gemini: grounded answer, UTF-8 byte offsets turned into str spans",
            "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml",
            lambda: _facade("google").configure(api_key="demo").gemini("gemini-2.5-pro"),
            "What is the weather in San Francisco today?",
        ),
    ]


def _weather_tool() -> Any:
    from .schema.tools import ToolDefinition

    return ToolDefinition(
        "get_weather",
        "Get current weather for a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )


async def _render(
    client: Client, request: LLMRequest, out: TextIO, reasoning_limit: int | None = None
) -> None:
    shown = 0
    blocks: dict[str, list[str]] = {}
    async with client.stream(request) as events:
        async for event in events:
            if isinstance(event, ReasoningStart):
                out.write("\033[2m[thinking] ")
                shown = 0
            elif isinstance(event, ReasoningDelta):
                if reasoning_limit is None or shown < reasoning_limit:
                    text = event.text if reasoning_limit is None else event.text[: reasoning_limit - shown]
                    shown += len(event.text)
                    out.write(text.replace("\n", " ") if reasoning_limit is not None else text)
                    if reasoning_limit is not None and shown >= reasoning_limit:
                        out.write(" …")
            elif isinstance(event, ReasoningEnd) and event.encrypted and shown == 0:
                out.write(f"(encrypted, {len(event.encrypted)} chars, carried into the next turn)")
            elif isinstance(event, TextStart):
                out.write("\033[0m\n")
            elif isinstance(event, TextDelta):
                blocks.setdefault(event.id, []).append(event.text)
                out.write(event.text)
            elif isinstance(event, ToolCall):
                who = "hosted " if event.provider_executed else ""
                out.write(f"\033[0m\n  -> {who}tool call {event.name}({_short(event.input)})")
            elif isinstance(event, ToolResult) and event.provider_executed:
                out.write(f"\n  <- hosted result for {event.name}: {_short(event.result)}")
            elif isinstance(event, Citation):
                text = "".join(blocks.get(event.block_id, ()))
                quoted = (
                    text[event.start : event.end] if event.start is not None else (event.cited_text or "")
                )
                source = event.title or event.url or ""
                out.write(f'\n  [cite] "{_short(" ".join(quoted.split()), 60)}" <- {_short(source, 60)}')
            elif isinstance(event, Finish):
                usage = event.usage
                tokens = (
                    f"{usage.input_tokens} in / {usage.output_tokens} out" if usage else "no usage reported"
                )
                out.write(f"\033[0m\n  finish: {event.reason}, {tokens}\n")
            out.flush()


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _demo(pace: float, out: TextIO) -> int:
    from .testing.cassette import Cassette
    from .testing.replay import Chunking, ReplayTransport

    root = _cassette_root()
    if not root.is_dir():
        print(
            f"llmroute demo: bundled recordings not found at {root}; set LLMROUTE_CASSETTES", file=sys.stderr
        )
        return 2
    for scene in _scenes():
        path = root / scene.cassette
        if not path.exists():
            continue
        out.write(f"\n\033[1m== {scene.title}\033[0m  ({scene.cassette})\n")
        transport = ReplayTransport(Cassette.load(path), Chunking.random(seed=7, max_size=48), delay=pace)
        request = build.request(
            model=scene.model(),
            prompt=scene.prompt,
            generation=GenerationOptions(max_tokens=1024),
            **scene.request,
        )
        async with Client(http=httpx.AsyncClient(transport=transport)) as client:
            await _render(client, request, out, reasoning_limit=240)
    from .websearch.cli import demo as search_demo

    await search_demo(out, root)
    return 0


_FACADES: dict[str, tuple[str, str]] = {
    "openai": ("openai", "model"),
    "anthropic": ("anthropic", "messages"),
    "google": ("google", "gemini"),
    "gemini": ("google", "gemini"),
    "bedrock": ("bedrock", "converse"),
    "openrouter": ("openrouter", "chat"),
    "xai": ("xai", "chat"),
    "glm": ("glm", "chat"),
    "azure": ("azure", "chat"),
}


def resolve_model(spec: str) -> Model:
    """``provider:model-id`` -> a Model with credentials from the environment."""
    provider, sep, model_id = spec.partition(":")
    if not sep or not model_id:
        raise SystemExit(f"--model must look like provider:model-id, e.g. openai:gpt-4o-mini (got {spec!r})")
    if provider in _FACADES:
        module, method = _FACADES[provider]
        try:
            facade = _facade(module).configure()
        except ImportError as exc:
            raise SystemExit(f"provider {provider!r} is not available: {exc}") from None
        return getattr(facade, method)(model_id)
    compatible = _facade("compatible")
    if provider in compatible.FAMILIES:
        return compatible.configure(provider).model(model_id)
    known = ", ".join(sorted({*_FACADES, *compatible.FAMILIES}))
    raise SystemExit(f"unknown provider {provider!r}; known: {known}")


async def _chat(model_spec: str, prompt: str, system: str | None, max_tokens: int | None, out: TextIO) -> int:
    try:
        model = resolve_model(model_spec)
        request = build.request(
            model=model, system=system, prompt=prompt, generation=GenerationOptions(max_tokens=max_tokens)
        )
        async with Client() as client:
            await client.prepare(request)  # fails fast on missing credentials, before any network
            await _render(client, request, out)
    except LLMError as exc:
        print(f"llmroute chat: {exc}", file=sys.stderr)
        return 2
    return 0


# Subcommands living in other packages: each module defines ``add_parser(subparsers)``, which adds its
# parser and calls ``set_defaults(run=handler)`` with ``handler(args, out) -> exit code``. Imported only
# when the CLI starts, so ``import llmroute`` never pays for them.
SUBCOMMANDS: tuple[str, ...] = ("llmroute.websearch.cli", "llmroute.server.cli")


def _add_builtin(sub: Any) -> None:
    demo = sub.add_parser("demo", help="stream bundled real recordings offline (no keys, no network)")
    demo.add_argument(
        "--pace", type=float, default=0.004, help="seconds between replayed chunks (0: as fast as possible)"
    )
    demo.set_defaults(run=_run_demo)
    chat = sub.add_parser("chat", help="stream a live answer (needs the provider's API key)")
    chat.add_argument("prompt")
    chat.add_argument("--model", default="openai:gpt-4o-mini", help="provider:model-id")
    chat.add_argument("--system")
    chat.add_argument("--max-tokens", type=int)
    chat.set_defaults(run=_run_chat)


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    return anyio.run(_demo, args.pace, out)


def _run_chat(args: argparse.Namespace, out: TextIO) -> int:
    return anyio.run(_chat, args.model, args.prompt, args.system, args.max_tokens, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llmroute", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_builtin(sub)
    for module in SUBCOMMANDS:
        importlib.import_module(module).add_parser(sub)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, sys.stdout))
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
