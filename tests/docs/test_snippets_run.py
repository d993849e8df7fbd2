"""The README's programs and the user guide's snippets run unchanged, as a user would run them: the
provider endpoints come from the environment (``OPENAI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``) and
point at a local fake provider (``fake_provider.py``); hosted web search replays a bundled real
recording. A snippet that the docs change must keep running, and every Python block of the guide is
either run here or named in ``NOT_RUN`` with the reason."""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import llmroute
from llmroute.cli.demo import load_recording
from llmroute.providers import anthropic
from llmroute.testing import ReplayTransport

from .fake_provider import ANSWER, FakeProvider
from .test_examples import readme_examples

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000105fe02fea70000000049454e44ae426082"
)


def guide_blocks() -> list[str]:
    return _BLOCK.findall((ROOT / "docs" / "guide.md").read_text(encoding="utf-8"))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    with FakeProvider() as server:
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        yield server


@pytest.mark.timeout(180)
@pytest.mark.parametrize("index", range(len(readme_examples())))
def test_readme_programs_run_against_a_local_server(index: int, fake: FakeProvider, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", readme_examples()[index]],
        env={**os.environ, **fake.env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert ANSWER in result.stdout or "Pancakes 15" in result.stdout
    assert fake.requests, "the program never reached the provider"


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("name", "expected"),
    [("quickstart.py", ANSWER), ("sync_client.py", "stop"), ("structured_pydantic.py", "Pancakes 15")],
)
def test_examples_run_against_a_local_server(name: str, expected: str, fake: FakeProvider) -> None:
    """``examples/tools.py`` (Anthropic) is type-checked only; ``offline_replay.py`` runs in
    ``test_examples.py``."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        env={**os.environ, **fake.env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_readme_cited_answer_prints_the_markdown_shown() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code, shown = re.search(
        r"```python\n(from llmroute.websearch import .*?)```\n\n```markdown\n(.*?)```", text, re.S
    ).groups()  # type: ignore[union-attr]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == shown.strip()


@pytest.mark.timeout(120)
def test_guide_first_call_runs(fake: FakeProvider, tmp_path: Path) -> None:
    first = next(b for b in guide_blocks() if "anyio.run(main)" in b)
    result = subprocess.run(
        [sys.executable, "-c", first],
        env={**os.environ, **fake.env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert ANSWER in result.stdout
    assert fake.requests[0][1]["max_tokens"] == 200  # generation options reached the wire


# Guide snippets not run here, with the reason.
NOT_RUN = {
    "anyio.run(main)": "a whole program: test_guide_first_call_runs",
    '{"sources"': "a shape, not a program",
}


async def _run_fragment(source: str, namespace: dict[str, Any]) -> None:
    code = compile(source, "<guide>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if result is not None:
        await result


@pytest.mark.timeout(180)
def test_guide_snippets_run_in_order(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fragments share one namespace, as a reader's session would: ``model``, ``client`` and
    ``request`` from the first call, the tools and types each section defines."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chart.png").write_bytes(_PNG)
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    blocks = [b for b in guide_blocks() if not any(key in b for key in NOT_RUN)]
    ran: list[str] = []

    async def session() -> None:
        from llmroute.providers import openai

        model = openai.configure().chat("gpt-4o-mini")
        client = llmroute.Client()
        namespace: dict[str, Any] = {
            "llmroute": llmroute,
            "model": model,
            "client": client,
            "request": llmroute.request(model, prompt="Hello!"),
        }
        made: list[llmroute.Client] = [client]
        async with client:
            for block in blocks:
                if "hosted.web_search" in block:
                    # Hosted search needs a protocol that has it: replay a real Anthropic recording.
                    transport = ReplayTransport(load_recording("anthropic-web-search"))
                    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as replay:
                        hosted_ns = {
                            **namespace,
                            "client": replay,
                            "model": anthropic.configure(api_key="offline").messages("claude-sonnet-4-0"),
                        }
                        await _run_fragment(block, hosted_ns)
                elif "use_cassette(" in block:  # record from the fake provider, then replay
                    with monkeypatch.context() as env:
                        env.setenv("LLMROUTE_RECORD", "1")
                        await _run_fragment("\n\n".join(block.split("\n\n")[:2]), namespace)
                    served = len(fake.requests)
                    await _run_fragment(block, namespace)
                    assert len(fake.requests) == served, "the replay reached the server"
                    assert namespace["response"].text == ANSWER
                elif "SyncClient()" in block:  # its own `client`, closed by its `with`
                    sync_ns = dict(namespace)
                    await anyio.to_thread.run_sync(functools.partial(exec, block, sync_ns))
                    assert sync_ns["answer"].text == ANSWER
                else:
                    await _run_fragment(block, namespace)
                if namespace["client"] not in made:  # a snippet made its own client
                    made.append(namespace["client"])
                ran.append(block.splitlines()[0])
            for other in made[1:]:
                await other.aclose()
        assert namespace["recipe"].name == "Pancakes"
        assert namespace["second"].text == ANSWER
        assert namespace["response"].text == ANSWER

    anyio.run(session)
    assert len(ran) == len(blocks)
    paths = [path for path, _ in fake.requests]
    assert all(path == "/v1/chat/completions" for path in paths)
    tools_sent = [body for _, body in fake.requests if body.get("tools")]
    assert tools_sent and tools_sent[0]["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.timeout(60)
def test_reliability_settings_snippet_runs(fake: FakeProvider) -> None:
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    (block,) = _BLOCK.findall(text)

    async def session() -> None:
        from llmroute.providers import openai

        namespace: dict[str, Any] = {"request": llmroute.request(openai.configure().chat("m"), prompt="Hi")}
        await _run_fragment(block, namespace)
        client: llmroute.Client = namespace["client"]
        assert client.timeouts == llmroute.Timeouts()  # "the defaults", as the comment says
        await client.aclose()

    anyio.run(session)
    assert len(fake.requests) == 1


class _LoopbackOnly(httpx.AsyncBaseTransport):
    """Sends to 127.0.0.1 only: a snippet that would reach a real provider fails instead."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert request.url.host == "127.0.0.1", f"a docs snippet tried to reach {request.url.host}"
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@pytest.mark.timeout(60)
def test_readme_server_web_search_snippet_runs(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's ``ServerWebSearch`` block, with a request that shows no search intent: the
    ``selective`` policy leaves the main model's request without the tool."""
    monkeypatch.setenv("ZHIPUAI_API_KEY", "docs-test")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in _BLOCK.findall(text) if "ServerWebSearch(" in b]

    async def session() -> None:
        from llmroute.providers import openai

        request = llmroute.request(openai.configure().chat("m"), prompt="Hello!")
        async with llmroute.Client(http=httpx.AsyncClient(transport=_LoopbackOnly())) as client:
            namespace: dict[str, Any] = {"client": client, "request": request, "my_tools": []}
            await _run_fragment(block, namespace)
        assert namespace["response"].text == ANSWER

    anyio.run(session)
    assert "tools" not in fake.requests[0][1]


async def _token() -> str:
    return "ya29.docs-test"


# The constructors the guide's Providers table shows, with the URL each must reach.
PROVIDER_ROWS: dict[str, tuple[str, str]] = {
    "openai.configure(api_key='k').model('m')": ("openai", "/v1/responses"),
    "openai.configure(api_key='k').chat('m')": ("openai", "/v1/chat/completions"),
    "anthropic.configure(api_key='k', betas=['b']).messages('m')": ("anthropic", "/v1/messages"),
    "google.configure(api_key='k').gemini('m')": ("google", ":streamGenerateContent?alt=sse"),
    "vertex.configure(project='p', location='us-central1', access_token=token).gemini('m')": (
        "vertex",
        "/projects/p/locations/us-central1/publishers/google/models/m:streamGenerateContent?alt=sse",
    ),
    "google.code_assist(access_token='t', project='p').gemini('m')": (
        "google",
        "/v1internal:streamGenerateContent",
    ),
    "azure.configure('res', api_key='k').chat('dep')": (
        "azure",
        "res.openai.azure.com/openai/deployments/dep/",
    ),
    "azure.configure('res', api_key='k').responses('dep')": (
        "azure",
        "res.openai.azure.com/openai/v1/responses",
    ),
    "bedrock.configure(region='us-east-1', api_key='k').converse('m')": (
        "bedrock",
        "/model/m/converse-stream",
    ),
    "bedrock.configure(region='us-east-1', api_key='k').anthropic('m')": (
        "bedrock",
        "/model/m/invoke-with-response-stream",
    ),
    "openrouter.configure(api_key='k').responses('m')": ("openrouter", "openrouter.ai/api/v1/responses"),
    "xai.configure(api_key='k').responses('m')": ("xai", "api.x.ai/v1/responses"),
    "glm.configure(api_key='k').chat('m')": ("glm", "/chat/completions"),
    "compatible.configure('groq', api_key='k').model('m')": (
        "compatible",
        "api.groq.com/openai/v1/chat/completions",
    ),
    "compatible.configure(base_url='http://127.0.0.1:8080/v1').model('m')": (
        "compatible",
        "http://127.0.0.1:8080/v1/chat/completions",
    ),
}


@pytest.mark.parametrize("expression", PROVIDER_ROWS)
def test_guide_provider_rows_prepare(expression: str) -> None:
    """Each facade row of the guide builds a model whose request ``prepare`` describes (nothing sent)."""
    import importlib

    module, url_part = PROVIDER_ROWS[expression]
    facade = importlib.import_module(f"llmroute.providers.{module}")
    model = eval(expression, {module: facade, "token": _token})

    async def prepare() -> str:
        async with llmroute.Client() as client:
            return (await client.prepare(llmroute.request(model, prompt="Hi"))).url

    assert url_part in anyio.run(prepare)


def test_guide_providers_table_covers_every_registered_facade_and_protocol() -> None:
    """A facade or protocol added to ``llmroute.providers.registry`` needs its row in the guide."""
    import importlib

    from llmroute.providers import registry

    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    table = guide[guide.index("## Providers") :]
    table = table[: table.index("\n## ")]
    assert [f.name for f in registry.FACADES if f"`{f.name}.configure" not in table] == []
    assert {module for module, _ in PROVIDER_ROWS.values()} == {f.name for f in registry.FACADES}
    reached = {
        eval(
            expression, {module: importlib.import_module(f"llmroute.providers.{module}"), "token": _token}
        ).route.protocol.name
        for expression, (module, _) in PROVIDER_ROWS.items()
    }
    assert sorted({entry.name for entry in registry.PROTOCOLS} - reached) == []


@pytest.mark.timeout(60)
def test_readme_grounded_search_snippet_runs(
    fake: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's ``GroundedSearch`` block with opencode's files where it looks for them, Gemini's
    ``baseURL`` pointing at the fake provider."""
    import json

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    options = {"apiKey": "docs-test", "baseURL": f"{fake.url}/v1beta"}
    (tmp_path / "opencode.json").write_text(json.dumps({"provider": {"google": {"options": options}}}))
    auth = tmp_path / ".local" / "share" / "opencode" / "auth.json"
    auth.parent.mkdir(parents=True)
    auth.write_text("{}")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in _BLOCK.findall(text) if "GroundedSearch(" in b]

    async def session() -> None:
        from llmroute.providers import openai

        request = llmroute.request(openai.configure().chat("m"), prompt="Hello!")
        async with llmroute.Client(http=httpx.AsyncClient(transport=_LoopbackOnly())) as client:
            namespace: dict[str, Any] = {"client": client, "request": request}
            await _run_fragment(block, namespace)
        assert namespace["result"].provider == "google"
        assert ANSWER in namespace["markdown"]

    anyio.run(session)
    assert any(":generateContent" in path for path, _ in fake.requests)


def test_readme_gateway_config_loads() -> None:
    """The README's gateway file is valid as shown, and names what it lacks when a variable is unset."""
    import json

    from llmroute.schema.errors import ConfigError
    from llmroute.server.config import load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (shown,) = [b for b in re.findall(r"```json\n(.*?)```", text, re.S) if '"webSearch"' in b]
    config = json.loads(shown)
    environ = {"UPSTREAM_KEY": "u", "ZHIPUAI_API_KEY": "z", "GEMINI_API_KEY": "g"}
    gateway = load(config, environ=environ)
    assert list(gateway.public) == ["main"]
    with pytest.raises(ConfigError, match=r"\$\.models\.main\.api_key_env"):
        load(config, environ={})


def test_guide_first_errors_table_quotes_real_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The messages the guide's "First errors" table quotes are the ones users get (prepare only)."""
    from llmroute import hosted
    from llmroute.providers import openai

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    table = guide[guide.index("### First errors") : guide.index("## Deadlines")]
    chat = openai.configure(api_key="k").chat("m")
    cases: list[Any] = [
        lambda: llmroute.request(openai.configure().chat("gpt-4o-mini"), prompt="Hi"),
        lambda: llmroute.request(chat, prompt="x", tools=[hosted.web_search()]),
        lambda: llmroute.request(chat, prompt=["x", llmroute.file("https://example.com/report.pdf")]),
    ]

    async def messages() -> list[str]:
        found: list[str] = []
        async with llmroute.Client() as client:
            for build in cases:
                with pytest.raises(llmroute.LLMError) as info:
                    await client.prepare(build())
                found.append(str(info.value))
        with pytest.raises(llmroute.InvalidRequestError) as info:
            llmroute.request("openai:gpt-4o-mini", prompt="Hi")  # type: ignore[arg-type]
        return [*found, str(info.value)]

    for message in anyio.run(messages):
        quoted = [q for q in re.findall(r"`([^`]{20,})`", table) if q.split(" ... ")[0] in message]
        assert quoted, f"the table quotes nothing of: {message}"


@pytest.mark.timeout(120)
def test_routing_guides_first_example_runs_and_falls_back(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/routing.md's opening example as written: Anthropic (priority 0) is unreachable here, so
    the answer comes from one of the priority-1 targets and the printed attempts name Anthropic."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on: connection refused, at once
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k-anthropic")
    text = (ROOT / "docs" / "routing.md").read_text(encoding="utf-8")
    first = _BLOCK.findall(text)[0]
    anyio.run(_run_fragment, first, {})
    target, attempts = capsys.readouterr().out.splitlines()
    assert target in ("openai:gpt-4.1", "google:gemini-2.5-pro")
    assert "anthropic:claude-sonnet-4-5" in attempts and "k-anthropic" not in attempts
    assert fake.requests
