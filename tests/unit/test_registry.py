"""The registry of protocols and facades (``llmroute.providers.registry``, issue #27 move 7) is
complete: every protocol module is in it, each entry is true to its module and its recordings, and
every registered protocol reaches the suites that must cover it (fuzz, hostile bytes, telemetry,
shape, hosted tools, option matrix, the protocol property tests and their stream generators). A protocol module added without an entry fails here, by name."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import llmroute.protocols
from llmroute.providers.registry import PROTOCOLS, facade_names, named_facades
from llmroute.route.protocol import Protocol
from llmroute.testing import Cassette

from ..helpers import CASSETTES

NAMES = {entry.name for entry in PROTOCOLS}
ROOT = Path(__file__).resolve().parents[2]

# Suites parametrised by protocol name (the ids carry it): each must run every registered protocol.
SUITES = [
    "tests/fuzz/test_protocols.py",
    "tests/fuzz/test_whole_bodies.py",
    "tests/reliability/test_hostile.py",
    "tests/reliability/test_connections.py",
    "tests/telemetry/test_otel.py",
    "tests/unit/test_protocol_shape.py",
    "tests/unit/test_hosted_registry.py",
    "tests/conformance/test_protocol_violations.py",
]


def _protocol_modules() -> list[str]:
    """Every module under ``llmroute.protocols``, subpackages included."""
    package = llmroute.protocols
    return sorted(info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."))


def _registered(module: str) -> bool:
    return any(module == entry.module or module.startswith(f"{entry.module}.") for entry in PROTOCOLS)


def test_every_protocol_module_is_registered() -> None:
    # the six-section shape: a module with its own NAME and PROTOCOL is a protocol
    missing = [
        name
        for name in _protocol_modules()
        if isinstance(getattr(module := importlib.import_module(name), "PROTOCOL", None), Protocol)
        and isinstance(getattr(module, "NAME", None), str)
        and not _registered(name)
    ]
    assert missing == [], "protocol modules missing from llmroute/providers/registry.py"


def test_every_protocol_value_carries_a_registered_name() -> None:
    # also a protocol written in another shape: any Protocol value a module holds names an entry
    strays = sorted(
        f"{name}.{attr} ({value.name!r})"
        for name in _protocol_modules()
        for attr, value in vars(importlib.import_module(name)).items()
        if isinstance(value, Protocol) and value.name not in NAMES
    )
    assert strays == [], "protocols missing from llmroute/providers/registry.py"


@pytest.mark.parametrize("entry", PROTOCOLS, ids=lambda entry: entry.name)
def test_each_entry_is_true_to_its_module_and_recordings(entry: object) -> None:
    from llmroute.providers.registry import ProtocolEntry

    assert isinstance(entry, ProtocolEntry)
    module = entry.load()
    assert module.__name__ == entry.module
    assert module.NAME == module.PROTOCOL.name == entry.name
    model = entry.sample("http://127.0.0.1:9")
    assert model.route.protocol.name == entry.name
    assert model.route.endpoint.base_url.startswith("http://127.0.0.1:9")
    for path in (entry.stream, entry.whole):
        (interaction, *_) = Cassette.load(CASSETTES / path).interactions
        assert interaction.response.status == 200 and interaction.response.body
    streamed = Cassette.load(CASSETTES / entry.stream).interactions[0].response
    assert streamed.headers["content-type"][0].startswith(entry.content_type)


def test_names_and_modules_are_unique() -> None:
    assert len(NAMES) == len(PROTOCOLS) == len({entry.module for entry in PROTOCOLS})


def test_every_registered_protocol_is_in_each_suite() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            *SUITES,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    ids: dict[str, list[str]] = {suite: [] for suite in SUITES}
    for line in result.stdout.splitlines():
        found = re.match(r"(tests/\S+\.py)::\S+\[(.+)\]$", line)
        if found and found[1] in ids:
            ids[found[1]].append(f"-{found[2]}-")  # ids join parameters with "-"
    absent = {
        suite: sorted(name for name in NAMES if not any(f"-{name}-" in one for one in seen))
        for suite, seen in ids.items()
    }
    absent = {suite: names for suite, names in absent.items() if names}
    assert absent == {}, "registered protocols no test of these suites runs"


def test_every_registered_protocol_has_stream_generators() -> None:
    # the property tests take each protocol's well-formed and shuffled streams from this table
    from ..conformance.stream_generators import GENERATORS

    missing = sorted(NAMES - set(GENERATORS))
    assert missing == [], (
        "registered protocols without stream generators in tests/conformance/stream_generators.py"
    )
    assert sorted(set(GENERATORS) - NAMES) == [], "stream generators for protocols the registry does not have"


def test_the_option_matrix_reaches_every_protocol() -> None:
    from ..unit.test_option_matrix import VARIANTS

    reached = {make().route.protocol.name for make in VARIANTS.values()}
    assert sorted(NAMES - reached) == []


def test_facade_names_are_what_cli_and_gateway_accept() -> None:
    # the CLI takes aliases (``gemini:...``); the gateway config only the facade names
    assert "gemini" in facade_names(aliases=True) and "gemini" not in facade_names()
    assert {"compatible", "groq", "openai", "bedrock"} <= set(facade_names())
    assert "vertex" not in facade_names(aliases=True)
    assert named_facades(aliases=True)["gemini"] is named_facades()["google"]
