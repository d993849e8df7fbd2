"""The gateway fails at start on a model it could never authenticate, and words request errors for
HTTP clients (not for Python callers)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from llmroute.schema.errors import ConfigError, InvalidRequestError
from llmroute.server.config import load
from llmroute.server.dialects import openai_chat, openai_responses


def _config(**entry: Any) -> dict[str, Any]:
    return {"keys": ["gw-key-1"], "models": {"main": {"model": "m", **entry}}}


def test_model_without_its_key_variable_fails_at_start() -> None:
    with pytest.raises(ConfigError) as err:
        load(_config(provider="openai"), environ={})
    message = str(err.value)
    assert "$.models.main" in message and "'main'" in message and "OPENAI_API_KEY" in message
    assert "api_key_env" in message


def test_model_keyed_by_its_variable_or_keyless_starts() -> None:
    assert load(_config(provider="openai"), environ={"OPENAI_API_KEY": "sk-x"}).models["main"]
    assert load(_config(provider="anthropic", api_key="sk-y"), environ={}).models["main"]
    local = load(_config(provider="compatible", base_url="http://127.0.0.1:9/v1"), environ={})
    assert local.models["main"]  # a local server without a key


@pytest.mark.parametrize(
    ("module", "body", "field"),
    [
        (
            openai_chat,
            {"model": "main", "messages": [{"role": "system", "content": "Be brief."}]},
            "messages",
        ),
        (openai_chat, {"model": "main", "messages": []}, "messages"),
        (openai_responses, {"model": "main", "input": [], "instructions": "Be brief."}, "input"),
    ],
)
def test_empty_conversation_is_worded_for_http_clients(module: Any, body: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRequestError) as err:
        module.DIALECT.decode(msgspec.json.encode(body), {})
    message = str(err.value)
    assert message.startswith(f"{field}: the conversation is empty") and err.value.param == field
    assert "prompt=" not in message and "messages=[" not in message
