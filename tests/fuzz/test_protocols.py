"""Fuzz every protocol with mutated real recordings: only correct events or a typed ``LLMError``.

Two kinds of mutation per protocol (hypothesis, fixed seeds in CI):

- **bytes**: flip, insert, delete, duplicate or truncate anywhere in the body, then cut it into
  random reads -- exercises the framing (SSE, AWS event-stream CRCs) and the JSON decoders;
- **values**: decode one event's JSON, replace one value anywhere in it with another JSON value
  (a string for a number, an object for a string, deep nesting, ...), re-encode (event-stream frames
  get fresh CRCs so the parser, not the checksum, meets the damage) -- exercises the protocol
  state machines.

Each example runs through ``Client`` with ``RetryPolicy.none()`` under a time bound. It must either
finish with a well-formed event stream (``event_order_problems`` empty) or raise an ``LLMError``;
any other exception, or a hang, fails. ``LLMROUTE_FUZZ_EXAMPLES=5000`` runs a longer, randomised
campaign (the default is small so the suite stays fast).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmroute
from llmroute import RetryPolicy
from llmroute.framing.eventstream import EventStreamDecoder, encode_message
from llmroute.testing.invariants import event_order_problems

from ..routes import EVENTSTREAM, PROTOCOLS, WireCase

DEFAULT_EXAMPLES = 15
EXAMPLES = int(os.environ.get("LLMROUTE_FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=EXAMPLES <= DEFAULT_EXAMPLES,  # CI: the same examples every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
BOUND = 5.0  # seconds per example: a hang is a failure
BODIES = {name: case.body() for name, case in PROTOCOLS.items()}


class _Reads(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):  # type: ignore[override]
        for chunk in self.chunks:
            yield chunk


def replay(case: WireCase, chunks: list[bytes]) -> tuple[list[llmroute.LLMEvent], BaseException | None]:
    """Events until the end or the first exception (returned, not raised)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=case.headers, stream=_Reads(chunks))

    events: list[llmroute.LLMEvent] = []
    failure: list[BaseException] = []

    async def main() -> None:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        async with llmroute.Client(http=http, retry=RetryPolicy.none()) as client:
            with anyio.fail_after(BOUND):
                try:
                    async for event in client.stream(case.request("http://fuzz.invalid")):
                        events.append(event)
                except Exception as exc:
                    failure.append(exc)
        await http.aclose()

    anyio.run(main)
    return events, failure[0] if failure else None


def check(case: WireCase, body: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(body) + 1) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if b > a]
    events, failure = replay(case, chunks)
    if failure is not None:
        assert isinstance(failure, llmroute.LLMError), f"untyped {type(failure).__name__}: {failure!r}"
        assert str(failure)  # a message a person can read
        return
    assert event_order_problems(events) == []


# byte mutations --------------------------------------------------------------------------------


@st.composite
def byte_mutations(draw: st.DrawFn, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "duplicate", "truncate", "utf8"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "duplicate":
            n = draw(st.integers(1, 512))
            data[at:at] = data[at : at + n]
        elif op == "truncate":
            del data[at:]
        else:  # a lone continuation byte / a cut multi-byte sequence inside the text
            data[at:at] = draw(st.sampled_from([b"\x80", b"\xc3", b"\xe2\x82", b"\xff\xfe"]))
    return bytes(data)


# value mutations -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
hostile_values = json_values | st.sampled_from(
    [{"type": "x"}, [], {}, "", -1, 2**64, "5", {"a": {"b": {"c": None}}}, "[" * 300 + "]" * 300]
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():  # pyright: ignore[reportUnknownVariableType]
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            out += paths(v, (*prefix, i))
    return out


def replace_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replace_at(value[head], rest, new)}
    copy = list(value)
    copy[head] = replace_at(copy[head], rest, new)
    return copy


def _events(case: WireCase, body: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """(prefix, json payload, suffix) per event, so a payload can be swapped in place."""
    if case.headers == EVENTSTREAM:
        return [(b"", m.payload, b"") for m in EventStreamDecoder().feed(body)]
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        head, sep, data = block.rpartition(b"data: ")
        if sep:
            out.append((head + sep, data, b"\n\n"))
    return out


@st.composite
def value_mutations(draw: st.DrawFn, case: WireCase, body: bytes) -> bytes:
    events = _events(case, body)
    index = draw(st.integers(0, len(events) - 1))
    payload = events[index][1]
    try:
        value = json.loads(payload)
    except ValueError:  # [DONE] and friends
        value = None
    if value is not None:
        path = draw(st.sampled_from(paths(value)))
        payload = json.dumps(replace_at(value, path, draw(hostile_values))).encode()
    if case.headers == EVENTSTREAM:
        messages = EventStreamDecoder().feed(body)
        return b"".join(
            encode_message(dict(m.headers), payload if i == index else m.payload)
            for i, m in enumerate(messages)
        )
    return b"".join(p + (payload if i == index else d) + s for i, (p, d, s) in enumerate(events))


cuts = st.lists(st.integers(0, 100_000), max_size=8)


@pytest.mark.parametrize("name", list(PROTOCOLS))
@FUZZ
@given(data=st.data(), cuts=cuts)
def test_mutated_bytes(name: str, data: st.DataObject, cuts: list[int]) -> None:
    case = PROTOCOLS[name]
    check(case, data.draw(byte_mutations(BODIES[name])), cuts)


@pytest.mark.parametrize("name", list(PROTOCOLS))
@FUZZ
@given(data=st.data(), cuts=cuts)
def test_mutated_values(name: str, data: st.DataObject, cuts: list[int]) -> None:
    case = PROTOCOLS[name]
    check(case, data.draw(value_mutations(case, BODIES[name])), cuts)


@pytest.mark.parametrize("name", list(PROTOCOLS))
@FUZZ
@given(noise=st.binary(max_size=2048), cuts=cuts)
def test_random_bytes(name: str, noise: bytes, cuts: list[int]) -> None:
    check(PROTOCOLS[name], noise, cuts)
