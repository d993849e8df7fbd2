"""The package's shape: the lower layers stay free of httpx (and, below, of import cycles)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import llmroute.protocols

PROTOCOL_MODULES = sorted(
    f"llmroute.protocols.{info.name}" for info in pkgutil.iter_modules(llmroute.protocols.__path__)
)
HTTPX_FREE = ["llmroute.schema", "llmroute.route", "llmroute.protocols", *PROTOCOL_MODULES]


@pytest.mark.parametrize("module", HTTPX_FREE)
def test_import_does_not_pull_httpx(module: str) -> None:
    # A fresh interpreter: this test process has httpx loaded already.
    code = f"import sys, {module}; assert 'httpx' not in sys.modules, 'httpx imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
