"""The facade surface: each module's ``configure`` is its class, every facade has ``.model(id)``
(its recommended API), and bearer keys are built by ``route.auth.bearer``."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from llmroute.providers import (
    anthropic,
    azure,
    bedrock,
    compatible,
    glm,
    google,
    openai,
    openrouter,
    vertex,
    xai,
)
from llmroute.route import auth

CLASSES: list[tuple[ModuleType, type]] = [
    (openai, openai.OpenAI),
    (anthropic, anthropic.Anthropic),
    (google, google.Google),
    (vertex, vertex.Vertex),
    (azure, azure.Azure),
    (bedrock, bedrock.Bedrock),
    (glm, glm.GLM),
    (openrouter, openrouter.OpenRouter),
    (xai, xai.XAI),
    (compatible, compatible.Compatible),
]


@pytest.mark.parametrize(("module", "cls"), CLASSES, ids=lambda v: getattr(v, "__name__", ""))
def test_configure_is_the_class(module: ModuleType, cls: type) -> None:
    assert module.configure is cls
    assert callable(cls.model)


def test_code_assist_is_the_class() -> None:
    assert google.code_assist is google.CodeAssist


@pytest.mark.parametrize(
    ("facade", "route"),
    [
        (lambda: openai.configure(api_key="k"), "openai-responses"),
        (lambda: anthropic.configure(api_key="k"), "anthropic-messages"),
        (lambda: google.configure(api_key="k"), "gemini"),
        (lambda: google.code_assist(access_token="t", project="p"), "gemini-code-assist"),
        (lambda: vertex.configure(project="p", location="us-central1", access_token="t"), "vertex-gemini"),
        (lambda: azure.configure("res", api_key="k"), "azure-chat"),
        (lambda: bedrock.configure(region="us-east-1", api_key="k"), "bedrock-converse"),
        (lambda: glm.configure(api_key="k"), "glm-chat"),
        (lambda: openrouter.configure(api_key="k"), "openrouter-chat"),
        (lambda: xai.configure(api_key="k"), "xai-chat"),
        (lambda: compatible.configure("groq", api_key="k"), "groq-chat"),
    ],
)
def test_model_is_the_recommended_api(facade: Callable[[], Any], route: str) -> None:
    model = facade().model("some-model")
    assert model.id == "some-model"
    assert model.route.name == route


def test_responses_routes_are_built_once_per_facade() -> None:
    for facade in (
        openrouter.configure(api_key="k"),
        xai.configure(api_key="k"),
        azure.configure("r", api_key="k"),
    ):
        assert facade.responses("a").route is facade.responses("b").route
    ai = openai.configure(api_key="k")
    assert ai.responses("a", transport="websocket").route is ai.responses("b", transport="websocket").route
    rock = bedrock.configure(region="us-east-1", api_key="k")
    assert rock.anthropic("a").route is rock.anthropic("b").route


def test_openrouter_options_still_apply_through_model() -> None:
    model = openrouter.configure(api_key="k").model("openai/gpt-4o-mini", online=True, web=True)
    assert model.id == "openai/gpt-4o-mini:online"
    assert model.provider_options == {"openrouter": {"plugins": [{"id": "web"}]}}


def test_bearer_is_the_one_way_to_a_bearer_key() -> None:
    assert not hasattr(auth, "BearerAuth")
    header = auth.bearer("k", "SOME_ENV", provider="p")
    assert (header.name, header.prefix, header.key.env) == ("authorization", "Bearer ", ("SOME_ENV",))
