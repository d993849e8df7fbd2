"""scripts/mutate.py (docs/mutation-testing.md): the mutants it makes, and that its configuration names
real modules, test files and mutant ids (a stale equivalent id would silently stop excluding)."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mutate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llmroute_mutate", ROOT / "scripts" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["llmroute_mutate"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_regex_variants_narrow_quantifiers_and_drop_members_and_alternatives(mutate: ModuleType) -> None:
    variants = dict(mutate._regex_variants(r"(?:sk-[a-z]{12,}|Signature=[0-9a-f]{16,})"))
    assert variants["quantifier {12,}->{13,}"] == r"(?:sk-[a-z]{13,}|Signature=[0-9a-f]{16,})"
    assert variants["class drop 'a-f' from '[0-9a-f]'"] == r"(?:sk-[a-z]{12,}|Signature=[0-9]{16,})"
    assert variants["alternative drop 'sk-[a-z]{12,}'"] == r"(?:Signature=[0-9a-f]{16,})"
    assert variants["alternative drop 'Signature=[0-9a-f]{16,}'"] == r"(?:sk-[a-z]{12,})"
    assert dict(mutate._regex_variants(rb"a+b?"))["quantifier +->{2,}"] == rb"a{2,}b?"


def test_every_kind_of_mutant_is_made(mutate: ModuleType) -> None:
    _, mutants = mutate.generate("protocols/_offsets.py")
    ids = [m.id for m in mutants]
    assert "protocols/_offsets.py::utf16_to_index::compare >=->>" in " ".join(ids)
    kinds = {m.desc.split(" ")[0] for m in mutants}
    assert {"compare", "arith", "const", "delete", "string", "boolop"} <= kinds
    assert len(ids) == len(set(ids))  # ids are unique


def test_the_configuration_is_current(mutate: ModuleType) -> None:
    config = tomllib.loads((ROOT / "scripts" / "mutation.toml").read_text())
    ids: set[str] = set()
    for relpath, entry in config["modules"].items():
        assert (ROOT / "src" / "llmroute" / relpath).is_file(), relpath
        for test in entry["tests"]:
            assert (ROOT / test).is_file(), test
        ids.update(m.id for m in mutate.generate(relpath)[1])
    stale = [e["id"] for e in config["equivalent"] if e["id"] not in ids]
    assert stale == []
    assert all(e["reason"].strip() for e in config["equivalent"])
