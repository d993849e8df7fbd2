"""Without vcrpy, ``use_cassette`` names the extra to install (not a bare "No module named 'vcr'")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llmroute.testing import use_cassette


def test_use_cassette_without_vcrpy_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [m for m in sys.modules if m == "vcr" or m.startswith("vcr.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vcr", None)  # import vcr -> ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError) as err, use_cassette(tmp_path / "x.yaml"):
        pass
    assert "pip install 'llmroute[test]'" in str(err.value)
    assert err.value.name == "vcr"
