"""``llmroute demo``: real recorded provider streams replayed offline through the whole stack.

The recordings ship inside the package (``recordings/*.json``, the JSON cassette form, read with
``importlib.resources``), so the demo works from an ordinary install with only the core
dependencies: no keys, no network, no PyYAML. ``scripts/bundle_demo.py`` regenerates them from
``cassettes/``. Each scene's body is replayed in small random chunks paced so the scene takes about
``SCENE_SECONDS`` (``pace`` overrides: seconds between chunks, 0 for no delay).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, TextIO

import httpx
import msgspec

from ...build import request
from ...client import Client
from ...route.model import Model
from ...schema.options import GenerationOptions
from ...schema.tools import ToolDefinition
from ...testing.cassette import Cassette
from ...testing.replay import Chunking, ReplayTransport
from ..console import Renderer, Style

__all__ = ["SCENES", "SCENE_SECONDS", "Scene", "load_recording", "run"]

SCENE_SECONDS = 0.7
_SCENE_CHUNKS = 120  # about this many chunks per scene: timer granularity makes finer pacing slower
_REASONING_SHOWN = 240


class Scene(msgspec.Struct, frozen=True):
    """One recorded exchange the demo replays."""

    title: str
    """The heading shown above the scene."""
    recording: str
    """The bundled recording's name (``recordings/<name>.json``)."""
    source: str
    """The cassette under ``cassettes/`` the recording was made from."""
    provider: str
    """The provider facade module (``llmroute.providers.<provider>``)."""
    model: Callable[[Any], Model]
    """Builds the model from that facade module."""
    prompt: str
    """The user's message."""
    tools: tuple[ToolDefinition, ...] = ()
    """Tools offered to the model."""
    tool_choice: str | None = None
    """The tool choice sent, if any."""


def _weather() -> ToolDefinition:
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


SCENES: tuple[Scene, ...] = (
    Scene(
        "OpenAI Chat: text after a tool result",
        "openai-chat-tool-result",
        "opencode/openai-chat/continues-after-tool-result.yaml",
        "openai",
        lambda f: f.configure(api_key="sk-demo").chat("gpt-4o-mini"),
        "What is the weather in Paris?",
    ),
    Scene(
        "xAI (OpenAI-compatible): reasoning, then text",
        "xai-reasoning",
        "opencode/openai-compatible-chat/xai-streams-text.yaml",
        "compatible",
        lambda f: f.configure("xai", api_key="xai-demo").model("grok-3-mini"),
        "Reply with exactly: Hello!",
    ),
    Scene(
        "Groq (OpenAI-compatible): a tool call",
        "groq-tool-call",
        "opencode/openai-compatible-chat/groq-streams-tool-call.yaml",
        "compatible",
        lambda f: f.configure("groq", api_key="gsk-demo").model("llama-3.3-70b-versatile"),
        "Call get_weather with city exactly Paris.",
        tools=(_weather(),),
        tool_choice="get_weather",
    ),
    Scene(
        "OpenAI Responses: reasoning (encrypted, round-trippable), then text",
        "openai-responses-reasoning",
        "opencode/openai-responses/openai-responses-gpt-5-5-reasoning.yaml",
        "openai",
        lambda f: f.configure(api_key="sk-demo").responses("gpt-5.5"),
        "Think briefly, then answer.",
    ),
    Scene(
        "Bedrock Converse: binary AWS event-stream",
        "bedrock-converse",
        "opencode/bedrock-converse/streams-text.yaml",
        "bedrock",
        lambda f: f.configure(region="us-east-1", api_key="demo").converse("us.amazon.nova-micro-v1:0"),
        "Say hello.",
    ),
    Scene(
        "Anthropic: hosted web search with citations",
        "anthropic-web-search",
        "pydantic-ai/test_anthropic/test_anthropic_web_search_tool_stream.yaml",
        "anthropic",
        lambda f: f.configure(api_key="demo").messages("claude-sonnet-4-0"),
        "Give me the top 3 news in the world today.",
    ),
    Scene(
        "Gemini: grounded answer, UTF-8 byte offsets turned into str spans",
        "gemini-grounding",
        "pydantic-ai/test_google/test_google_model_web_search_tool_stream.yaml",
        "google",
        lambda f: f.configure(api_key="demo").gemini("gemini-2.5-pro"),
        "What is the weather in San Francisco today?",
    ),
)


def load_recording(name: str) -> Cassette:
    data = resources.files(__name__).joinpath("recordings", f"{name}.json").read_bytes()
    return Cassette.from_json(data)


def _replay(cassette: Cassette, pace: float | None) -> ReplayTransport:
    """Random chunks of at most 48 bytes, larger for long bodies so a scene stays near
    ``SCENE_SECONDS``; ``pace`` (seconds per chunk) overrides the delay."""
    size = sum(len(i.response.body) for i in cassette.interactions)
    chunking = Chunking.random(seed=7, max_size=max(48, 2 * size // _SCENE_CHUNKS))
    if pace is None:
        chunks = sum(len(chunking.split(i.response.body)) for i in cassette.interactions)
        pace = SCENE_SECONDS / max(1, chunks)
    return ReplayTransport(cassette, chunking, delay=pace)


async def run(
    out: TextIO,
    *,
    pace: float | None = None,
    color: bool = False,
    live: bool = False,
    scenes: Sequence[Scene] = SCENES,
) -> int:
    """Replay ``scenes`` to ``out``; returns the exit code. ``live``: ``out`` is a terminal."""
    style = Style(color)
    for scene in scenes:
        cassette = load_recording(scene.recording)
        out.write(f"\n{style.bold}== {scene.title}{style.reset}\n")
        out.write(f"{style.cyan}> {scene.prompt}{style.reset}\n")
        transport = _replay(cassette, pace)
        facade = importlib.import_module(f"llmroute.providers.{scene.provider}")
        built = request(
            model=scene.model(facade),
            prompt=scene.prompt,
            tools=scene.tools,
            tool_choice=scene.tool_choice,
            generation=GenerationOptions(max_tokens=1024),
        )
        renderer = Renderer(out, color=color, live=live, reasoning_limit=_REASONING_SHOWN)
        async with (
            Client(http=httpx.AsyncClient(transport=transport)) as client,
            client.stream(built) as events,
        ):
            async for event in events:
                renderer.write(event)
    return 0
