"""Fuzz every protocol's non-streamed decoder (``GenerationOptions(stream=False)``): a real recorded
JSON body (Vercel AI SDK fixtures), mutated by bytes or by JSON value, must decode into well-formed
events or raise an ``LLMError`` -- never another exception. Same rules and knobs as
``test_protocols.py``."""

from __future__ import annotations

import json
from dataclasses import replace

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import llmroute
from llmroute.providers.registry import PROTOCOLS as REGISTERED
from llmroute.testing import Cassette

from ..helpers import CASSETTES
from ..routes import PROTOCOLS, WireCase
from .test_protocols import FUZZ, byte_mutations, check, cuts, hostile_values, paths, replace_at

JSON = {"content-type": "application/json"}
# each registered protocol's recorded non-streamed body (``ProtocolEntry.whole``)
WHOLE = {entry.name: entry.whole for entry in REGISTERED}


def _whole_case(name: str) -> WireCase:
    streamed = PROTOCOLS[name]

    def make(origin: str) -> llmroute.LLMRequest:
        request = streamed.request(origin)
        return msgspec.structs.replace(request, generation=llmroute.GenerationOptions(stream=False))

    return replace(streamed, cassette=WHOLE[name], make=make, headers=JSON)


CASES = {name: _whole_case(name) for name in WHOLE}
BODIES = {name: Cassette.load(CASSETTES / path).interactions[0].response.body for name, path in WHOLE.items()}


@st.composite
def value_mutations(draw: st.DrawFn, body: bytes) -> bytes:
    value = json.loads(body)
    path = draw(st.sampled_from(paths(value)))
    return json.dumps(replace_at(value, path, draw(hostile_values))).encode()


@pytest.mark.parametrize("name", list(WHOLE))
def test_recorded_whole_body_decodes(name: str) -> None:
    check(CASES[name], BODIES[name], [])


@pytest.mark.parametrize("name", list(WHOLE))
@FUZZ
@given(data=st.data(), cuts=cuts)
def test_mutated_whole_bytes(name: str, data: st.DataObject, cuts: list[int]) -> None:
    check(CASES[name], data.draw(byte_mutations(BODIES[name])), cuts)


@pytest.mark.parametrize("name", list(WHOLE))
@FUZZ
@given(data=st.data(), cuts=cuts)
def test_mutated_whole_values(name: str, data: st.DataObject, cuts: list[int]) -> None:
    check(CASES[name], data.draw(value_mutations(BODIES[name])), cuts)
