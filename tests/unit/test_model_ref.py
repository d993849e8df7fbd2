"""``LLMRequest.model`` is typed by ``schema.request.ModelRef``, a small base class that
``route.Model`` and ``route.model.ModelGroup`` (so ``llmroute.Router``) extend (issue #27). The
field still holds the value as given: a value that is not a model gets the same typed errors."""

from __future__ import annotations

import typing
from pathlib import Path

import httpx
import msgspec
import pytest

import llmroute
from llmroute.providers import openai
from llmroute.route.model import Model, ModelGroup
from llmroute.schema.request import LLMRequest, ModelRef
from tests.helpers import pyright_report


def _model() -> Model:
    return openai.configure(api_key="sk-test", base_url="http://llm.test/v1").chat("gpt-4o-mini")


def test_models_and_routers_are_model_refs() -> None:
    model = _model()
    router = llmroute.Router([model])
    assert issubclass(Model, ModelRef) and issubclass(ModelGroup, ModelRef)
    assert isinstance(model, ModelRef) and isinstance(router, ModelRef)
    assert typing.get_type_hints(LLMRequest)["model"] is ModelRef
    assert Model.__struct_fields__[:3] == ("id", "route", "provider")  # positional order kept
    request = llmroute.request(router, prompt="hi")
    assert request.model is router and msgspec.structs.replace(request, model=model).model is model


class _Lookalike:
    id = "gpt-4o"
    provider = "openai"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        ("gpt-4o", llmroute.InvalidRequestError, "not a string"),
        (None, llmroute.InvalidRequestError, "expected a Model"),
        (_Lookalike(), llmroute.NoRouteError, "must be an llmroute Model"),
    ],
)
async def test_a_value_that_is_not_a_model_gets_the_same_typed_error(
    value: object, error: type[llmroute.LLMError], words: str
) -> None:
    request = msgspec.structs.replace(llmroute.request(_model(), prompt="hi"), model=value)
    async with llmroute.Client(
        http=httpx.AsyncClient(transport=httpx.MockTransport(lambda _r: httpx.Response(500)))
    ) as client:
        with pytest.raises(error, match=words):
            await client.prepare(request)
        with pytest.raises(error, match=words):
            await client.generate(request)


PROBE = """\
from llmroute import Router, request
from llmroute.providers import openai
from llmroute.schema.request import LLMRequest

model = openai.configure(api_key="k").chat("gpt-4o-mini")
routed = request(Router([model]), prompt="hi")
reveal_type(routed.model.provider)
bad = LLMRequest(model="gpt-4o")  # ERROR
"""


@pytest.mark.timeout(120)
def test_pyright_sees_the_model_type(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    config = {"include": ["probe.py"], "pythonVersion": "3.11", "reportMissingModuleSource": "none"}
    diagnostics = pyright_report(tmp_path, config)["generalDiagnostics"]
    lines = PROBE.splitlines()
    errors = [lines[d["range"]["start"]["line"]] for d in diagnostics if d["severity"] == "error"]
    revealed = [d["message"] for d in diagnostics if d["severity"] == "information"]
    assert errors == ['bad = LLMRequest(model="gpt-4o")  # ERROR'], diagnostics
    assert revealed == ['Type of "routed.model.provider" is "str"'], diagnostics
