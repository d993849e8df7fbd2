"""A Router goes wherever a Model goes: generate_object, hosted tools, web-search engines, prepare."""

from __future__ import annotations

import json
from collections.abc import Callable

import msgspec
import pytest

import llmroute
from llmroute import RetryPolicy, Router, Target, hosted
from llmroute.websearch.backends import SearchQuery
from llmroute.websearch.server_tool import Engine

from ..reliability.server import FaultServer, Reply
from .upstreams import SSE, anthropic_text, chat_model, claude_model, error

pytestmark = pytest.mark.anyio

Servers = Callable[[], FaultServer]
NO_RETRY = RetryPolicy(max_retries=0)


class City(msgspec.Struct):
    name: str
    population: int


async def test_generate_object_through_a_router(servers: Servers) -> None:
    from ..reliability.server import chat_stream

    a, b = servers(), servers()
    a.add(error(503))
    b.add(Reply(200, SSE, chat_stream(json.dumps({"name": "Lyon", "population": 522_000}))))
    router = Router([Target(chat_model(a)), Target(chat_model(b, "m2"), priority=1)])
    async with llmroute.Client(retry=NO_RETRY) as client:
        city, response = await client.generate_object(llmroute.request(model=router, prompt="A city"), City)
    assert city == City("Lyon", 522_000)
    assert [x.error for x in response.attempts] == ["ProviderInternalError"]
    assert "response_format" in json.loads(b.received[0].body)  # native mode: every target has it


def test_generate_object_uses_a_forced_tool_unless_every_target_has_native_mode(servers: Servers) -> None:
    from llmroute.tools.structured import output_request

    native = chat_model(servers())
    assert native.route.protocol.native_output_schema
    plain = native.with_(
        route=native.route.with_(
            protocol=msgspec.structs.replace(native.route.protocol, native_output_schema=False)
        ),
        id="plain",
    )
    both = Router([Target(native), Target(native.with_(id="n2"), priority=1)])
    mixed = Router([Target(native), Target(plain, priority=1)])
    assert output_request(llmroute.request(model=both, prompt="x"), City)[1] is None
    sent, tool_name = output_request(llmroute.request(model=mixed, prompt="x"), City)
    assert tool_name == "City" and sent.model is mixed


async def test_a_target_that_cannot_carry_a_hosted_tool_is_skipped_before_sending(servers: Servers) -> None:
    chat, claude = servers(), servers()
    claude.add(anthropic_text("searched"))
    router = Router(
        [Target(chat_model(chat), name="chat"), Target(claude_model(claude), name="claude", priority=1)]
    )
    request = llmroute.request(model=router, prompt="news?", tools=[hosted.web_search()])
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(request)
    assert response.text == "searched" and response.steps[-1].target == "claude"
    assert chat.received == [] and response.attempts == ()


async def test_a_router_as_a_web_search_engine(servers: Servers) -> None:
    chat, claude = servers(), servers()
    claude.add(anthropic_text("Search summary."))
    router = Router([Target(chat_model(chat)), Target(claude_model(claude), priority=1)], name="search")
    engine = Engine("web", router, "the web", default=True)
    async with llmroute.Client(retry=NO_RETRY) as client:
        outcome = await engine.searcher().search(client.context(), SearchQuery("llmroute"))
    assert outcome.summary == "Search summary." and outcome.model == "search"
    assert chat.received == []
    assert "web_search" in claude.received[0].body.decode()


async def test_prepare_shows_the_first_choice(servers: Servers) -> None:
    a, b = servers(), servers()
    router = Router([Target(chat_model(a)), Target(chat_model(b, "m2"), priority=1)])
    async with llmroute.Client() as client:
        prepared = await client.prepare(llmroute.request(model=router, prompt="hi"))
    assert prepared.url.startswith(a.base_url)
    assert json.loads(prepared.body)["model"] == "m"
    assert repr(router).startswith("Router('router'")


async def test_a_modality_the_target_refuses_goes_to_one_that_takes_it(servers: Servers) -> None:
    from llmroute.router import Cooldown
    from llmroute.schema.content import MediaPart, Message, TextPart

    from .upstreams import gemini_model

    claude, gemini = servers(), servers()
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "a video of a cat"}]}, "finishReason": "STOP"}
        ]
    }
    gemini.add(Reply(200, SSE, [f"data: {json.dumps(chunk)}\r\n\r\n".encode()]))
    router = Router(
        [
            Target(claude_model(claude), name="claude"),
            Target(gemini_model(gemini), name="gemini", priority=1),
        ],
        cooldown=Cooldown(failures=1),
    )
    video = Message("user", (TextPart("What is in it?"), MediaPart("video/mp4", b"\x00\x00\x00\x18ftypmp42")))
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(llmroute.LLMRequest(model=router, messages=(video,)))
    assert response.text == "a video of a cat"
    assert claude.received == []  # refused before sending
    assert [(a.target, a.error, a.status) for a in response.attempts] == [
        ("claude", "InvalidRequestError", None)
    ]
    assert not (await router.health())["claude"]["cooling_down"]  # not the target's fault


async def test_the_answering_routes_warnings_survive_the_router(servers: Servers) -> None:
    """A step-start the router stamps with its target keeps the route's ``RequestWarning``s."""
    a, b = servers(), servers()
    a.add(error(503))
    b.add(anthropic_text("Bonjour"))
    router = Router([Target(chat_model(a)), Target(claude_model(b), priority=1)])
    request = llmroute.request(model=router, prompt="Hi", generation=llmroute.GenerationOptions(seed=7))
    async with llmroute.Client(retry=NO_RETRY) as client:
        response = await client.generate(request)
    assert response.text == "Bonjour"
    assert [(w.option, w.route) for w in response.warnings] == [("generation.seed", "anthropic-messages")]
