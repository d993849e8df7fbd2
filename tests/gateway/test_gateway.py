"""``llmroute serve`` end to end: the official ``openai`` SDK -> the gateway (uvicorn on 127.0.0.1)
-> upstream Chat and GLM servers (a scripted HTTP server on 127.0.0.1), with the server-side
``web_search`` injected per policy, errors mapped to OpenAI-style bodies, keys and body size checked."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import uvicorn

from llmroute.schema.errors import ConfigError
from llmroute.server import create_app, load
from llmroute.server.cli import add_parser

from ..reliability.server import DONE, FaultServer, Reply, Stall, chat_chunk, chat_error, chat_stream
from ..unit.test_server_web_search import GLM_HIT_1, GLM_QUOTA, GLM_SEARCH, main_calls_search

UPSTREAM_KEY = "sk-upstream-0123456789abcdef"
GLM_KEY = "glm-secret-key-0123456789"
GATEWAY_KEY = "gw-key-1"


def config(upstream: FaultServer, policy: str = "always", **extra: Any) -> dict[str, Any]:
    return {
        "keys": [GATEWAY_KEY, "gw-key-2"],
        "models": {
            "main": {
                "provider": "compatible",
                "base_url": upstream.base_url,
                "api_key_env": "UPSTREAM_KEY",
                "model": "m",
            },
            "glm": {
                "provider": "glm",
                "model": "glm-4.7",
                "base_url": upstream.base_url,
                "api_key": GLM_KEY,
                "public": False,
            },
        },
        "webSearch": {
            "engines": [
                {"id": "glm", "providerKey": "glm", "description": "GLM: Chinese news", "default": True}
            ],
            "injectPolicy": policy,
        },
        **extra,
    }


class Served:
    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "gateway did not start"
            time.sleep(0.01)
        return self

    @property
    def base_url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def serve(upstream: FaultServer, policy: str = "always", **extra: Any) -> Served:
    gateway = load(config(upstream, policy, **extra), environ={"UPSTREAM_KEY": UPSTREAM_KEY})
    return Served(create_app(gateway))


def sdk(served: Served, key: str = GATEWAY_KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.base_url, api_key=key, max_retries=0, timeout=20)


def sse(*parts: bytes) -> Reply:
    return Reply(parts=list(parts))


def body_of(interaction: Any) -> Reply:
    return Reply(parts=[interaction.response.body])


def answer(*texts: str) -> Reply:
    return sse(*chat_stream(*texts))


# -- the openai SDK, unchanged ----------------------------------------------------------------------


def test_models_lists_public_entries_only(upstream: FaultServer) -> None:
    with serve(upstream) as served:
        models = sdk(served).models.list()
    assert [(m.id, m.owned_by) for m in models.data] == [("main", "compatible")]


def test_non_streaming_chat_with_server_search_through_glm(upstream: FaultServer) -> None:
    args = json.dumps({"query": "东京塔 高度"}, ensure_ascii=False)
    upstream.add(body_of(main_calls_search(args)), body_of(GLM_SEARCH), answer("Tokyo Tower is 333 m tall."))
    with serve(upstream) as served:
        completion = sdk(served).chat.completions.create(
            model="main", messages=[{"role": "user", "content": "How tall is Tokyo Tower?"}]
        )
    assert completion.choices[0].message.content == "Tokyo Tower is 333 m tall."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.tool_calls is None  # the search never reaches the client
    assert completion.usage is not None and completion.usage.prompt_tokens == 120 + 5
    first, to_glm, second = upstream.received
    assert (first.path, to_glm.path, second.path) == ("/v1/chat/completions",) * 3
    assert first.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert to_glm.headers["authorization"] == f"Bearer {GLM_KEY}"
    assert [t["function"]["name"] for t in json.loads(first.body)["tools"]] == ["web_search"]
    assert json.loads(to_glm.body)["tools"][0]["web_search"]["search_query"] == "东京塔 高度"
    tool_message = json.loads(second.body)["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"])["hits"][0]["url"] == GLM_HIT_1["link"]


def test_streaming_chat_shows_only_the_answer_and_usage(upstream: FaultServer) -> None:
    upstream.add(
        body_of(main_calls_search('{"query": "东京塔"}')),
        body_of(GLM_SEARCH),
        answer("Tokyo Tower is 333 m tall."),
    )
    with serve(upstream) as served:
        stream = sdk(served).chat.completions.create(
            model="main",
            messages=[{"role": "user", "content": "How tall is Tokyo Tower?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Tokyo Tower is 333 m tall."
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "stop"
    ]
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 25 + 1
    assert len(upstream.received) == 3


def test_streamed_search_steps_are_sse_comments(upstream: FaultServer) -> None:
    upstream.add(body_of(main_calls_search('{"query": "东京塔"}')), body_of(GLM_SEARCH), answer("ok"))
    with serve(upstream) as served:
        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "main", "stream": True, "messages": [{"role": "user", "content": "x"}]},
            timeout=20,
        )
    lines = response.text.split("\n\n")
    assert ': web_search call {"query":"东京塔"}' in lines
    assert ": web_search result done" in lines
    assert lines[-2] == "data: [DONE]"


def test_client_tools_pass_through_and_come_back_as_tool_calls(upstream: FaultServer) -> None:
    tool = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
    }
    upstream.add(sse(chat_chunk(tool=tool), chat_chunk(finish="tool_calls"), DONE))
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    with serve(upstream, policy="selective") as served:
        for stream in (False, True):
            if stream:
                upstream.add(sse(chat_chunk(tool=tool), chat_chunk(finish="tool_calls"), DONE))
            result = sdk(served).chat.completions.create(
                model="main",
                messages=[
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather in Paris?"},
                ],
                tools=[weather],  # type: ignore[list-item]
                stream=stream,
            )
            if stream:
                chunks = list(result)  # type: ignore[arg-type]
                calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
                # opened with id and name, then the arguments as the upstream streamed them
                assert [(tc.index, tc.id, tc.function.name, tc.function.arguments) for tc in calls] == [
                    (0, "call_1", "get_weather", ""),
                    (0, None, None, '{"city":"Paris"}'),
                ]
            else:
                (call,) = result.choices[0].message.tool_calls  # type: ignore[union-attr]
                assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
                    "call_1",
                    "get_weather",
                    {"city": "Paris"},
                )
                assert result.choices[0].finish_reason == "tool_calls"  # type: ignore[union-attr]
    sent = json.loads(upstream.received[0].body)
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    # selective, no search intent in "Weather in Paris?": only the client's tool is offered
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather"]


def test_a_tool_round_trip_from_the_client(upstream: FaultServer) -> None:
    upstream.add(answer("It is 22 °C in Paris."))
    with serve(upstream) as served:
        result = sdk(served).chat.completions.create(
            model="main",
            messages=[
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 22}'},
            ],
        )
    assert result.choices[0].message.content == "It is 22 °C in Paris."
    sent = json.loads(upstream.received[0].body)["messages"]
    assert sent[1]["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 22}'}


def test_glm_quota_reaches_the_main_model_as_a_tool_error(upstream: FaultServer) -> None:
    upstream.add(
        body_of(main_calls_search('{"query": "东京塔"}')),
        Reply(429, {"content-type": "application/json"}, [GLM_QUOTA.response.body], chunked=False),
        answer("Search is unavailable right now."),
    )
    with serve(upstream) as served:
        completion = sdk(served).chat.completions.create(
            model="main", messages=[{"role": "user", "content": "x"}]
        )
    assert completion.choices[0].message.content == "Search is unavailable right now."
    tool_message = json.loads(upstream.received[2].body)["messages"][-1]
    assert "the search quota is exhausted" in tool_message["content"]
    assert len(upstream.received) == 3  # the quota error was not retried


# -- errors, keys, limits ---------------------------------------------------------------------------


def _upstream_error(status: int, message: str, code: str | None = None) -> Reply:
    body = json.dumps({"error": {"message": message, "type": "x", "code": code}}).encode()
    return Reply(status, {"content-type": "application/json"}, [body], chunked=False)


@pytest.mark.parametrize(
    ("reply", "exc_type", "status", "code"),
    [
        (
            _upstream_error(401, f"Incorrect API key provided: {UPSTREAM_KEY}"),
            openai.InternalServerError,
            502,
            "upstream_auth",
        ),
        (_upstream_error(400, "bad thing", "invalid_value"), openai.BadRequestError, 400, "invalid_value"),
        (
            _upstream_error(
                400, "This model's maximum context length is 8192 tokens", "context_length_exceeded"
            ),
            openai.BadRequestError,
            400,
            "context_length_exceeded",
        ),
        (
            _upstream_error(429, "You exceeded your current quota", "insufficient_quota"),
            openai.RateLimitError,
            429,
            "insufficient_quota",
        ),
    ],
)
def test_upstream_errors_map_to_openai_errors_without_secrets(
    upstream: FaultServer, reply: Reply, exc_type: type[Exception], status: int, code: str
) -> None:
    upstream.add(reply)
    with serve(upstream) as served:
        for stream in (False, True):
            if stream:
                upstream.add(reply)
            with pytest.raises(exc_type) as info:
                sdk(served).chat.completions.create(
                    model="main", messages=[{"role": "user", "content": "x"}], stream=stream
                )
            error = info.value
            assert isinstance(error, openai.APIStatusError) and error.status_code == status
            assert error.code == code
            text = error.response.text
            assert UPSTREAM_KEY not in text and GLM_KEY not in text and "Traceback" not in text
            assert upstream.base_url not in text


def test_upstream_down_is_a_502_with_no_url() -> None:
    gone = FaultServer().start()
    gateway = load(config(gone), environ={"UPSTREAM_KEY": UPSTREAM_KEY})
    gone.stop()
    with Served(create_app(gateway)) as served, pytest.raises(openai.APIStatusError) as info:
        sdk(served).chat.completions.create(model="main", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 502
    assert "127.0.0.1" not in info.value.response.text and "http" not in info.value.message
    assert "ConnectError" in info.value.response.text  # the message no longer carries the URL at all


def test_keys_are_required_and_checked(upstream: FaultServer) -> None:
    with serve(upstream) as served:
        with pytest.raises(openai.AuthenticationError) as info:
            sdk(served, key="gw-key-3").models.list()
        assert info.value.code == "invalid_api_key"
        assert sdk(served, key="gw-key-2").models.list().data[0].id == "main"
        missing = httpx.get(served.base_url + "/models", timeout=5)
        assert missing.status_code == 401 and missing.json()["error"]["code"] == "invalid_api_key"
        basic = httpx.get(
            served.base_url + "/models", headers={"authorization": f"Basic {GATEWAY_KEY}"}, timeout=5
        )
        assert basic.status_code == 401
    assert upstream.received == []


def test_unknown_or_hidden_model_is_404(upstream: FaultServer) -> None:
    with serve(upstream) as served:
        for name in ("nope", "glm"):
            with pytest.raises(openai.NotFoundError) as info:
                sdk(served).chat.completions.create(model=name, messages=[{"role": "user", "content": "x"}])
            assert info.value.code == "model_not_found"
    assert upstream.received == []


def test_body_size_limit(upstream: FaultServer) -> None:
    with serve(upstream, maxBodyBytes=4096) as served:
        with pytest.raises(openai.APIStatusError) as info:
            sdk(served).chat.completions.create(
                model="main", messages=[{"role": "user", "content": "x" * 5000}]
            )
        assert info.value.status_code == 413 and info.value.code == "body_too_large"

        def chunks() -> Iterator[bytes]:  # no content-length: the limit holds while reading
            yield b'{"model": "main", "messages": [{"role": "user", "content": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}]}'

        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            content=chunks(),
            timeout=5,
        )
        assert response.status_code == 413
    assert upstream.received == []


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"model": "main"}', "`messages`"),
        (b'{"model": "main", "messages": [{"role": "robot", "content": "x"}]}', "$.messages[0].role"),
        (b'{"model": "main", "n": 2, "messages": [{"role": "user", "content": "x"}]}', "only one choice"),
        (
            b'{"model": "main", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}]}',
            "messages[0].content[0].image_url.url",
        ),
    ],
)
def test_bad_requests_are_400_naming_the_field(upstream: FaultServer, body: bytes, needle: str) -> None:
    with serve(upstream) as served:
        response = httpx.post(
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}", "content-type": "application/json"},
            content=body,
            timeout=5,
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert needle in error["message"] and error["type"] == "invalid_request_error"
    assert upstream.received == []


def test_unknown_routes_are_openai_style_404(upstream: FaultServer) -> None:
    with serve(upstream) as served:
        response = httpx.get(served.base_url + "/nothing", timeout=5)
    assert response.status_code == 404 and response.json()["error"]["message"] == "not found"


# -- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda c: c["models"]["main"].pop("base_url"), "$.models.main.base_url: required"),
        (
            lambda c: c["models"]["main"].update(provider="nope"),
            "$.models.main.provider: unknown provider 'nope'",
        ),
        (lambda c: c["models"]["main"].update(api_key_env="NOT_SET_ANYWHERE"), "$.models.main.api_key_env"),
        (lambda c: c["models"]["main"].update(temperature=1), "`$.models.main`"),
        (lambda c: c.update(keys=[]), "$.keys"),
        (
            lambda c: c["webSearch"]["engines"][0].update(providerKey="main2"),
            "$.webSearch.engines[0].providerKey",
        ),
        (lambda c: c["models"]["glm"].update(settings={"region": "eu"}), "$.models.glm: glm: unknown region"),
        (lambda c: c["models"]["main"].update(public=False), "no public model"),
    ],
)
def test_bad_config_fails_at_start_naming_the_path(upstream: FaultServer, mutate: Any, needle: str) -> None:
    raw = config(upstream)
    mutate(raw)
    with pytest.raises(ConfigError) as info:
        load(raw, environ={"UPSTREAM_KEY": UPSTREAM_KEY})
    assert needle in str(info.value)
    assert UPSTREAM_KEY not in str(info.value) and GLM_KEY not in str(info.value)


def test_serve_cli_reports_a_bad_config_file(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from llmroute import cli

    path = tmp_path / "gateway.json"
    path.write_text('{"keys": ["k"], "models": {"m": {"provider": "openai"}}}')
    assert cli.main(["serve", "--config", str(path)]) == 2
    assert "`$.models.m`" in capsys.readouterr().err
    assert cli.main(["serve", "--config", str(tmp_path / "missing.json")]) == 2
    assert "cannot read gateway config" in capsys.readouterr().err
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--config", "g.json", "--port", "9"])
    assert (args.host, args.port, args.config) == ("127.0.0.1", 9, "g.json")


def test_selective_policy_offers_search_only_on_intent(upstream: FaultServer) -> None:
    upstream.add(
        answer("4"), body_of(main_calls_search('{"query": "东京塔"}')), body_of(GLM_SEARCH), answer("333 m.")
    )
    with serve(upstream, policy="selective") as served:
        client = sdk(served)
        plain = client.chat.completions.create(
            model="main", messages=[{"role": "user", "content": "What is 2 + 2?"}]
        )
        searched = client.chat.completions.create(
            model="main", messages=[{"role": "user", "content": "Search the web: how tall is Tokyo Tower?"}]
        )
    assert (plain.choices[0].message.content, searched.choices[0].message.content) == ("4", "333 m.")
    assert "tools" not in json.loads(upstream.received[0].body)
    assert [t["function"]["name"] for t in json.loads(upstream.received[1].body)["tools"]] == ["web_search"]
    # the search made the chain sticky: the answering step still offers the tool
    assert [t["function"]["name"] for t in json.loads(upstream.received[3].body)["tools"]] == ["web_search"]


def test_selective_without_the_classifier_fails_at_start(
    upstream: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "llmroute.websearch.intent", None)  # import fails
    with pytest.raises(ConfigError, match=r"\$\.webSearch\.injectPolicy: 'selective' needs"):
        load(config(upstream, "selective"), environ={"UPSTREAM_KEY": UPSTREAM_KEY})
    assert load(config(upstream, "always"), environ={"UPSTREAM_KEY": UPSTREAM_KEY}).web_search is not None


def test_an_error_after_the_first_chunk_reaches_the_sdk_as_an_api_error(upstream: FaultServer) -> None:
    upstream.add(
        sse(chat_chunk("Hel"), chat_error(f"overloaded, key {UPSTREAM_KEY}", "server_error", "overloaded"))
    )
    with serve(upstream) as served:
        stream = sdk(served).chat.completions.create(
            model="main", messages=[{"role": "user", "content": "x"}], stream=True
        )
        with pytest.raises(openai.APIError) as info:
            for _ in stream:
                pass
    assert "overloaded" in info.value.message and UPSTREAM_KEY not in info.value.message


def test_a_client_hanging_up_closes_the_upstream_stream(upstream: FaultServer) -> None:
    upstream.add(Reply(parts=[chat_chunk("Hel"), Stall()]))
    with serve(upstream) as served:
        with httpx.stream(
            "POST",
            served.base_url + "/chat/completions",
            headers={"authorization": f"Bearer {GATEWAY_KEY}"},
            json={"model": "main", "stream": True, "messages": [{"role": "user", "content": "x"}]},
            timeout=10,
        ) as response:
            first = next(response.iter_bytes())
            assert b"Hel" in first or b"assistant" in first
        deadline = time.monotonic() + 10
        while upstream.client_disconnects == 0:
            assert time.monotonic() < deadline, "the gateway kept the upstream stream open"
            time.sleep(0.02)
