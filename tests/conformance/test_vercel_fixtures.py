"""Every Vercel AI SDK fixture of a protocol llmroute speaks, replayed through the public API.

Each cassette under ``cassettes/vercel-ai/`` (made by ``scripts/convert_vercel_fixtures.py``) is
replayed with ``llmroute.Client`` over ``ReplayTransport``, one ``generate`` per recorded response,
under three chunkings: whole, seeded random cuts of 1-64 bytes, and byte by byte (``EdgesBytewise``:
a body up to ``SMALL`` bytes is cut into single bytes throughout; a larger one byte by byte over its
first and last ``EDGE`` bytes, where streams open and where usage and finish arrive, with random
cuts of up to 512 bytes between: the corpus then costs seconds instead of a minute). The events
must be identical under every chunking, and the fold must match what ``vercel_oracles`` reads from
the fixture's own bytes.

One test per (fixture, aspect) so a failure names what is wrong: ``stream`` (completes, or fails
with the right typed error, same events under every chunking, event order), ``text``,
``reasoning``, ``tool-calls`` (client-executed), ``hosted`` (provider-executed calls and results),
``citations``, ``finish``, ``usage`` (inclusive), ``approvals``. Known gaps (``GAPS``) are strict
xfails: a fix makes the test pass, pytest reports the xfail as broken, and whoever fixed it removes
the fixture from its gap (and its row in ``VERCEL_STATUS.md``).

Non-streamed JSON bodies (``*.json.yaml``) go through the non-streaming path
(``GenerationOptions(stream=False)``): the request must go to the provider's non-streaming URL and
the whole body must decode to what the same oracle expects when fed the body as the events a stream
would carry. They are replayed whole and in random cuts (the body is read whole before decoding, so
byte by byte adds nothing there).
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import anthropic, azure, bedrock, compatible, google, openai, vertex, xai
from llmroute.testing import Cassette, Chunking, ReplayTransport, event_order_problems
from tests.conformance.vercel_oracles import Expected, expect
from tests.helpers import CASSETTES

ROOT = CASSETTES / "vercel-ai"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts/convert_vercel_fixtures.py"
SMALL = 4096
EDGE = 512
ASPECTS = ("stream", "text", "reasoning", "tool-calls", "hosted", "citations", "finish", "usage")

# family (the converter's name) -> the model a user would build for it
MODELS: dict[str, Callable[[str], llmroute.Model]] = {
    "anthropic": anthropic.configure(api_key="sk-ant-test").messages,
    "bedrock": bedrock.configure(region="us-east-1", api_key="test-bedrock-key").converse,
    "gemini": google.configure(api_key="test-key").gemini,
    "vertex": vertex.configure(project="vercel-fixtures", location="global", access_token="ya29.test").gemini,
    "openai-chat": openai.configure(api_key="sk-test").chat,
    "azure-chat": azure.configure(resource="vercel-fixtures", api_key="test-key").chat,
    "groq": compatible.configure("groq", api_key="test-key").model,
    "deepseek": compatible.configure("deepseek", api_key="test-key").model,
    "xai-chat": xai.configure(api_key="test-key").chat,
    "compatible-xai": compatible.configure(base_url="https://api.x.ai/v1", api_key="test-key").model,
    "compatible-anthropic": compatible.configure(base_url="https://api.anthropic.com/v1", api_key="k").model,
    "openai-responses": openai.configure(api_key="sk-test").responses,
    "copilot-responses": openai.configure(base_url="https://api.githubcopilot.com", api_key="k").responses,
    "xai-responses": xai.configure(api_key="test-key").responses,
}


class Fixture(msgspec.Struct, frozen=True):
    name: str  # the cassette path below cassettes/vercel-ai, without ``.yaml``
    family: str
    model: str
    streamed: bool
    aspects: tuple[str, ...]


def _fixtures() -> list[Fixture]:
    out: list[Fixture] = []
    for path in sorted(ROOT.rglob("*.yaml")):
        cassette = Cassette.load(path)
        meta = cassette.metadata
        responses = [i.response for i in cassette.interactions]
        if meta["protocol"] is None:
            continue
        streamed = meta["streamed"]
        expected = [expect(meta["family"], r.status, r.body, streamed=streamed) for r in responses]
        if any(e.error for e in expected):
            aspects: tuple[str, ...] = ("stream",)
        else:
            aspects = ASPECTS + (("approvals",) if any(e.approvals for e in expected) else ())
            if any(e.finish is None for e in expected):
                aspects = tuple(a for a in aspects if a != "finish")
        name = path.relative_to(ROOT).as_posix().removesuffix(".yaml")
        out.append(Fixture(name, meta["family"], meta["model"], streamed, aspects))
    return out


FIXTURES = _fixtures()

# Each gap: (why, the aspects it breaks ("*": all, the replay raises), the fixtures showing it).
GAPS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()
# fixture -> {aspect: why}, each a strict xfail: fixing the behaviour fails the test until removed
KNOWN: dict[str, dict[str, str]] = {}
for _why, _aspects, _names in GAPS:
    for _name in _names:
        KNOWN.setdefault(_name, {}).update(dict.fromkeys(_aspects, _why))


def _params() -> list[Any]:
    params: list[Any] = []
    for fixture in FIXTURES:
        known = KNOWN.get(fixture.name, {})
        for aspect in fixture.aspects:
            reason = known.get(aspect) or known.get("*")
            marks = [pytest.mark.xfail(strict=True, reason=f"issue 13: {reason}")] if reason else []
            params.append(pytest.param(fixture, aspect, id=f"{fixture.name}:{aspect}", marks=marks))
    return params


# -- replay ----------------------------------------------------------------------------------------


class Outcome(msgspec.Struct):
    """What one chunking produced: a response per recorded interaction, or the error that stopped it."""

    chunking: Chunking
    responses: list[llmroute.LLMResponse]
    error: BaseException | None = None


class EdgesBytewise(Chunking, frozen=True):
    """Single bytes over the first and last ``edge`` bytes, seeded random cuts of up to ``size``
    bytes between them (single bytes throughout a body of up to ``small`` bytes)."""

    edge: int = EDGE
    small: int = SMALL

    def split(self, data: bytes) -> list[bytes]:
        if len(data) <= self.small:
            return Chunking.bytewise().split(data)
        middle = Chunking.random(self.seed, self.size).split(data[self.edge : -self.edge])
        head, tail = data[: self.edge], data[-self.edge :]
        return (
            [head[i : i + 1] for i in range(len(head))] + middle + [tail[i : i + 1] for i in range(len(tail))]
        )


def chunkings(name: str) -> list[Chunking]:
    seed = zlib.crc32(name.encode())
    return [Chunking.whole(), Chunking.random(seed), EdgesBytewise("bytewise", 512, seed + 1)]


async def _run_all(cassette: Cassette, request: llmroute.LLMRequest, cuts: list[Chunking]) -> list[Outcome]:
    return [await _run(cassette, request, chunking) for chunking in cuts]


async def _run(cassette: Cassette, request: llmroute.LLMRequest, chunking: Chunking) -> Outcome:
    # an HTTP error body reads the same for streamed and non-streamed requests: the recorded URL
    # may be the non-streaming one
    errors = any(i.response.status >= 400 for i in cassette.interactions)
    transport = ReplayTransport(cassette, chunking, check_url=not errors)
    outcome = Outcome(chunking, [])
    http = httpx.AsyncClient(transport=transport)
    async with llmroute.Client(http=http, retry=llmroute.RetryPolicy.none()) as client:
        for _ in cassette.interactions:
            try:
                outcome.responses.append(await client.generate(request))
            except Exception as exc:  # recorded: the oracle says whether failing was right
                outcome.error = exc
                break
    return outcome


@cache
def replay(fixture: Fixture) -> tuple[list[Outcome], list[Expected]]:
    cassette = Cassette.load(ROOT / f"{fixture.name}.yaml")
    generation = llmroute.GenerationOptions(stream=fixture.streamed)
    request = llmroute.request(model=MODELS[fixture.family](fixture.model), prompt="x", generation=generation)
    cuts = chunkings(fixture.name)
    outcomes = anyio.run(_run_all, cassette, request, cuts if fixture.streamed else cuts[:2])
    responses = [i.response for i in cassette.interactions]
    expected = [expect(fixture.family, r.status, r.body, streamed=fixture.streamed) for r in responses]
    return outcomes, expected


def _error_key(error: BaseException | None) -> tuple[str, str] | None:
    return None if error is None else (type(error).__name__, str(error))


def _completed(fixture: Fixture) -> list[tuple[llmroute.LLMResponse, Expected]]:
    """The whole-body responses paired with their expectations; fails when the replay failed."""
    (outcome, *_), expected = replay(fixture)
    if outcome.error is not None:
        raise AssertionError(f"replay failed: {type(outcome.error).__name__}: {outcome.error}")
    return list(zip(outcome.responses, expected, strict=True))


# -- the checks --------------------------------------------------------------------------------------


def check_stream(fixture: Fixture) -> None:
    outcomes, expected = replay(fixture)
    first = outcomes[0]
    for other in outcomes[1:]:
        assert _error_key(other.error) == _error_key(first.error), f"error differs under {other.chunking}"
        assert [r.events for r in other.responses] == [r.events for r in first.responses], (
            f"events differ under {other.chunking}"
        )
    failing = next((e for e in expected if e.error), None)
    if failing is None:
        assert first.error is None, f"{type(first.error).__name__}: {first.error}"
        for response in first.responses:
            assert response.complete
            assert event_order_problems(response.events) == []
        return
    error = first.error
    assert isinstance(error, llmroute.LLMError), f"expected {failing.error}, got {error!r}"
    assert failing.error in [c.__name__ for c in type(error).__mro__], (
        f"expected {failing.error}, got {error!r}"
    )
    if failing.error_text:
        assert failing.error_text in str(error)
    if failing.retry_after is not None:
        assert getattr(error, "retry_after", None) == failing.retry_after


def _calls(response: llmroute.LLMResponse, hosted: bool, with_ids: bool) -> list[Any]:
    return sorted(
        (repr((c.id if with_ids else None, c.name, c.input)) if not hosted else repr((c.id, c.name)))
        for c in response.tool_calls
        if c.provider_executed == hosted
    )


def check_aspect(fixture: Fixture, aspect: str) -> None:
    for n, (response, exp) in enumerate(_completed(fixture)):
        where = f"response #{n}"
        if aspect == "text":
            assert response.text == exp.text, where
        elif aspect == "reasoning":
            assert response.reasoning == exp.reasoning, where
        elif aspect == "tool-calls":
            with_ids = all(c[0] is not None for c in exp.calls)
            expected_calls = sorted(repr((c[0] if with_ids else None, c[1], c[2])) for c in exp.calls)
            assert _calls(response, False, with_ids) == expected_calls, where
        elif aspect == "hosted":
            assert _calls(response, True, True) == sorted(repr(h) for h in exp.hosted), where
            results = sorted(r.id for r in response.tool_results if r.provider_executed)
            assert results == sorted(exp.hosted_results), where
        elif aspect == "citations":
            assert [(c.url, c.title) for c in response.citations] == exp.citations, where
        elif aspect == "finish":
            assert response.finish_reason == exp.finish, where
        elif aspect == "usage":
            usage = response.usage or llmroute.Usage()
            assert (usage.input_tokens, usage.output_tokens) == (
                exp.usage.get("input"),
                exp.usage.get("output"),
            )
            if "reasoning" in exp.usage:
                assert (usage.reasoning_tokens or 0) == exp.usage["reasoning"], where
            if "cache_read" in exp.usage:
                assert (usage.cache_read_tokens or 0) == exp.usage["cache_read"], where
        elif aspect == "approvals":
            ids = {getattr(e, "id", None) for e in response.events}
            assert set(exp.approvals) <= ids, f"{where}: approval requests {exp.approvals} not surfaced"
        else:
            raise AssertionError(f"unknown aspect {aspect}")


@pytest.mark.parametrize(("fixture", "aspect"), _params())
def test_fixture(fixture: Fixture, aspect: str) -> None:
    if aspect == "stream":
        check_stream(fixture)
    else:
        check_aspect(fixture, aspect)


# -- the corpus itself -----------------------------------------------------------------------------


def test_every_supported_fixture_is_replayed() -> None:
    """The parametrisation is the corpus: no fixture of a supported protocol silently left out."""
    supported = {
        p.relative_to(ROOT).as_posix().removesuffix(".yaml")
        for p in ROOT.rglob("*.yaml")
        if Cassette.load(p).metadata["protocol"]
    }
    assert supported == {f.name for f in FIXTURES}
    assert (sum(f.streamed for f in FIXTURES), len(FIXTURES)) == (102, 198)
    assert set(KNOWN) <= {f.name for f in FIXTURES}, "KNOWN names a fixture that is not replayed"


def _converter() -> Any:
    spec = importlib.util.spec_from_file_location("convert_vercel_fixtures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cassettes_are_current(tmp_path: Path) -> None:
    """Regenerating from the source fixtures gives the committed files, byte for byte."""
    converter = _converter()
    source = converter.default_source()
    if source is None:
        pytest.skip("shared/conformance/vercel-ai is not beside this checkout (a clean clone)")
    converter.main(source, tmp_path)
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(ROOT).as_posix(): p.read_bytes()
        for p in ROOT.rglob("*")
        if p.is_file() and p.name not in converter.KEEP
    }
    assert sorted(fresh) == sorted(committed)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], "run scripts/convert_vercel_fixtures.py"


def test_status_table_matches_known() -> None:
    """``VERCEL_STATUS.md`` lists exactly the known failures (``all`` for ``*``)."""
    rows = set()
    for line in (Path(__file__).parent / "VERCEL_STATUS.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows.add((cells[0], cells[1]))
    known = {(name, "all" if aspect == "*" else aspect) for name, entry in KNOWN.items() for aspect in entry}
    assert rows == known
