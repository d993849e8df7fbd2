"""The Vercel fixture oracles against facts read off the fixtures by hand.

``vercel_oracles`` and llmroute's parsers could agree on a mistake; these values were read from the
raw fixture lines (and their arithmetic checked) without either.
"""

from __future__ import annotations

from typing import Any

import pytest

from llmroute.testing import Cassette
from tests.conformance.vercel_oracles import Expected, expect, http_error
from tests.helpers import CASSETTES


def oracle(name: str, index: int = 0) -> Expected:
    cassette = Cassette.load(CASSETTES / "vercel-ai" / f"{name}.yaml")
    response = cassette.interactions[index].response
    streamed = cassette.metadata["streamed"]
    return expect(cassette.metadata["family"], response.status, response.body, streamed=streamed)


def test_anthropic_text_usage_and_finish() -> None:
    exp = oracle("anthropic/anthropic-text.chunks")
    assert exp.text.startswith("Hello! I'm doing well, thank you for asking.")
    assert (exp.finish, exp.usage) == ("stop", {"input": 12, "output": 30, "cache_read": 0})


def test_anthropic_message_delta_input_tokens_replace_message_start() -> None:
    assert oracle("anthropic/anthropic-message-delta-input-tokens.chunks").usage == {"input": 61, "output": 2}


def test_anthropic_follow_up_arrives_whole_in_message_start() -> None:
    exp = oracle("anthropic/anthropic-programmatic-tool-calling.1.chunks", 1)
    assert exp.calls == [("toolu_015dGLMbwBKv1ZRQr6KdJzeH", "rollDie", {"player": "player2"})]
    assert (exp.finish, exp.usage) == ("tool-calls", {"input": 0, "output": 0})


def test_second_message_start_with_another_id_is_a_violation() -> None:
    assert oracle("anthropic/spliced-message-start.chunks").error == "InvalidProviderOutputError"


def test_the_same_message_start_again_before_content_is_a_duplicate() -> None:
    exp = oracle("anthropic/duplicate-message-start.chunks")
    assert (exp.error, exp.text, exp.finish) == (None, "Hello, World!", "stop")


@pytest.mark.parametrize(
    ("name", "usage"),
    [
        # 12 + 2 + 340 = 354 = total: completion excludes reasoning
        ("xai/xai-text.chunks", {"input": 12, "output": 291, "reasoning": 290, "cache_read": 11}),
        (
            "openai-compatible/chat/xai-text.chunks",
            {"input": 12, "output": 342, "reasoning": 340, "cache_read": 11},
        ),
        # 18 + 219 = 237 = total: completion includes reasoning
        (
            "deepseek/chat/deepseek-reasoning.chunks",
            {"input": 18, "output": 219, "reasoning": 205, "cache_read": 0},
        ),
        # 216 + 863 = 1079 = total on xAI's Responses API: output includes reasoning there
        (
            "xai/responses/xai-text-streaming.1.chunks",
            {"input": 216, "output": 863, "reasoning": 237, "cache_read": 192},
        ),
        # Gemini: 9 prompt + 5 candidates + 185 thoughts = 199 = total
        ("google/google-text.chunks", {"input": 9, "output": 208, "reasoning": 185}),
        ("amazon-bedrock/amazon-bedrock-text.chunks", {"input": 22, "output": 55}),
    ],
)
def test_inclusive_usage_from_the_providers_arithmetic(name: str, usage: dict[str, int]) -> None:
    assert oracle(name).usage == usage


def test_gemini_streamed_arguments_assemble() -> None:
    exp = oracle("google/google-stream-tool-call-arguments.chunks")
    assert exp.calls == [
        (None, "getWeather", {"location": "Boston"}),
        (None, "getWeather", {"location": "San Francisco"}),
    ]
    nested = oracle("google/google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks")
    ((_, name, args),) = nested.calls
    assert name == "writeItems" and [op["price"] for op in args["operations"]] == [0.5, 0.3]


@pytest.mark.parametrize(
    ("name", "call"),
    [
        (
            "openai/responses/openai-local-shell-tool.1.chunks",
            ("call_h3nm8hUG0KO9tVNuRACkL1ri", "local_shell"),
        ),
        ("openai/responses/openai-shell-tool.1.chunks", ("call_pbxjNs1tMJUahLZKAS9qLtvw", "shell")),
        ("openai/responses/openai-custom-tool.1.chunks", ("call_custom_sql_001", "write_sql")),
        ("openai/responses/openai-apply-patch-tool-delete.1.chunks", ("call_delete_1", "apply_patch")),
        (
            "openai/responses/openai-client-tool-search.1.chunks",
            ("call_RWTIIVfxsJW9fecsg6fy23Dy", "tool_search"),
        ),
    ],
)
def test_client_executed_responses_items(name: str, call: tuple[str, str]) -> None:
    exp = oracle(name)
    assert [c[:2] for c in exp.calls] == [call] and exp.hosted == []
    assert exp.finish == "tool-calls"


def test_server_ran_shell_and_tool_search_are_hosted() -> None:
    shell = oracle("openai/responses/openai-shell-container.1.chunks")
    assert (shell.calls, shell.hosted) == (
        [],
        [("sh_0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e50", "shell")],
    )
    search = oracle("openai/responses/openai-tool-search.1.chunks")
    assert [h[1] for h in search.hosted] == ["tool_search"] and [c[1] for c in search.calls] == [
        "get_weather"
    ]


def test_rotating_item_ids_do_not_double_text() -> None:
    exp = oracle("openai/responses/github-copilot-id-rotation.1.chunks")
    assert exp.text.startswith("There are **3** letter") and exp.text.count("There are") == 1
    assert exp.reasoning == "**Counting character occurrences**"


def test_xai_server_side_custom_tools_are_hosted() -> None:
    exp = oracle("xai/responses/xai-x-search-tool.chunks")
    assert {h[1] for h in exp.hosted} == {"x_keyword_search", "view_x_video", "web_search"}
    assert exp.calls == []


def test_mcp_approval_request_is_reported() -> None:
    exp = oracle("openai/responses/openai-mcp-tool-approval.1.chunks")
    assert (
        exp.approvals == ["mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe"]
        and exp.finish == "tool-calls"
    )


@pytest.mark.parametrize(
    ("name", "error", "retry_after"),
    [
        ("google/google-429-retry-info.json", "RateLimitError", 34.4),
        ("openai/responses/openai-error.1.json", "QuotaExceededError", None),
        ("openai/responses/openai-error.1.chunks", "QuotaExceededError", None),
        ("openai/chat/reasoning-model-legacy-parameter-error.json", "InvalidRequestError", None),
        ("openai/responses/parallel-tool-call-wrapper.1.chunks", "InvalidProviderOutputError", None),
    ],
)
def test_errors(name: str, error: str, retry_after: Any) -> None:
    exp = oracle(name)
    assert (exp.error, exp.retry_after) == (error, retry_after)


def test_http_error_keeps_the_provider_message() -> None:
    body = b'{"error": {"message": "Unsupported parameter", "type": "invalid_request_error"}}'
    assert http_error(400, body).error_text == "Unsupported parameter"


def test_non_streamed_bodies() -> None:
    bedrock = oracle("amazon-bedrock/amazon-bedrock-tool-call.1.json")
    assert (bedrock.calls, bedrock.finish) == ([("tool-use-id", "bash", {"command": "ls -l"})], "tool-calls")
    assert bedrock.usage == {"input": 10, "output": 20}
    text = oracle("anthropic/anthropic-text.json")
    assert (text.finish, text.usage) == ("stop", {"input": 12, "output": 29, "cache_read": 0})
    chat = oracle("deepseek/chat/deepseek-tool-call.json")
    assert [c[1:] for c in chat.calls] == [("weather", {"location": "San Francisco"})]
    assert chat.usage == {"input": 339, "output": 92, "reasoning": 48, "cache_read": 320}
    xai = oracle("xai/responses/xai-x-search-tool.1.json")
    assert [h[1] for h in xai.hosted] == ["x_semantic_search"] and xai.calls == []
