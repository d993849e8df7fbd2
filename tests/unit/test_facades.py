"""The facade surface: each module's ``configure`` is its class, every facade has ``.model(id)``
(its recommended API), and bearer keys are built by ``route.auth.bearer``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest

import llmroute
from llmroute.providers import (
    anthropic,
    azure,
    bedrock,
    compatible,
    glm,
    google,
    openai,
    openrouter,
    registry,
    vertex,
    xai,
)
from llmroute.providers._facade import env_default
from llmroute.route import auth

FACADES = {facade.name: facade.load() for facade in registry.FACADES}


@pytest.mark.parametrize("name", sorted(FACADES))
def test_configure_is_the_class(name: str) -> None:
    module = FACADES[name]
    cls = module.configure
    assert isinstance(cls, type) and cls.__module__ == module.__name__
    assert callable(cls.model)


def test_every_facade_module_is_registered() -> None:
    import pkgutil

    import llmroute.providers

    modules = {
        info.name
        for info in pkgutil.iter_modules(llmroute.providers.__path__)
        if hasattr(importlib.import_module(f"llmroute.providers.{info.name}"), "configure")
    }
    embedding_only = {facade.module.rpartition(".")[2] for facade in registry.EMBEDDING_FACADES}
    assert modules == {module.__name__.rpartition(".")[2] for module in FACADES.values()} | embedding_only


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


SECRET_INT = 4242424242  # a key of the wrong type must not be echoed either


@pytest.mark.parametrize(
    ("build", "param"),
    [
        (lambda: openai.configure(api_key=SECRET_INT), "api_key"),
        (lambda: anthropic.configure(api_key=b"sk-bytes"), "api_key"),
        (lambda: openai.configure(base_url=5), "base_url"),
        (lambda: openai.configure(api_key="k", organization=1), "organization"),
        (lambda: openai.configure(api_key="k", headers=[("a", "b")]), "headers"),
        (lambda: google.configure(api_key="k", headers={"x-trace": 1}), "headers['x-trace']"),
        (lambda: google.configure(api_key="k", headers={1: "v"}), "headers"),
        (lambda: anthropic.configure(api_key="k", betas="web-fetch-2025-09-10"), "betas"),
        (lambda: google.code_assist(access_token=SECRET_INT, project="p"), "access_token"),
        (lambda: azure.configure("r", token_provider="a-token-not-a-callable"), "token_provider"),
        (lambda: azure.configure(1, api_key="k"), "resource"),
        (lambda: bedrock.configure(region=1, api_key="k"), "region"),
        (
            lambda: bedrock.configure(region="us-east-1", access_key_id="a", secret_access_key=SECRET_INT),
            "secret_access_key",
        ),
        (lambda: compatible.configure(1), "family"),
        (lambda: compatible.configure("groq", api_key="k", quirks={"supports_top_k": True}), "quirks"),
        (lambda: xai.configure(api_key="k").model(5), "model"),
        (lambda: google.configure(api_key="k").model(5), "model"),
        (lambda: google.configure(api_key="k").gemini("gemini-2.5-flash", temperature=0.2), "temperature"),
        (lambda: openai.configure(api_key="k").chat("m", generation={"temperature": 0}), "generation"),
        (lambda: openrouter.configure(api_key="k").chat("m", web="exa"), "web"),
    ],
)
def test_wrong_argument_types_fail_typed_and_name_the_argument(build: Callable[[], Any], param: str) -> None:
    with pytest.raises(llmroute.InvalidRequestError) as info:
        build()
    assert info.value.param == param
    assert str(SECRET_INT) not in str(info.value)
    assert "sk-bytes" not in str(info.value)
    assert "a-token-not-a-callable" not in str(info.value)


@pytest.mark.anyio
async def test_azure_missing_key_names_the_other_ways_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(azure, "has_azure_identity", lambda: False)
    request = llmroute.request(azure.configure("res").model("prod"), prompt="hi")
    async with llmroute.Client() as client:
        with pytest.raises(
            llmroute.AuthenticationError, match=r"AZURE_OPENAI_API_KEY; or pass token_provider="
        ) as info:
            await client.prepare(request)
    assert info.value.kind == "missing"


def test_a_blank_sdk_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMROUTE_TEST_FIRST", "  ")
    monkeypatch.setenv("LLMROUTE_TEST_SECOND", "from-second")
    assert env_default(None, "LLMROUTE_TEST_FIRST", "LLMROUTE_TEST_SECOND") == "from-second"
    assert env_default("explicit", "LLMROUTE_TEST_SECOND") == "explicit"


@pytest.mark.parametrize("token", [None, ""])
def test_code_assist_without_a_token_is_a_missing_login(token: str | None) -> None:
    with pytest.raises(llmroute.AuthenticationError, match="pass access_token=") as info:
        google.code_assist(access_token=token, project="p")
    assert info.value.kind == "missing"
