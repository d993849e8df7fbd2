"""Chat Completions and Responses bodies go through one lowering (``server/dialects/conversation.py``): the same
conversation in either shape becomes the same ``LLMRequest``."""

from __future__ import annotations

import msgspec
import pytest

from llmroute.schema.content import MediaPart, ToolCallPart, ToolResultPart
from llmroute.schema.errors import InvalidRequestError
from llmroute.server.dialects import openai_chat, openai_responses
from llmroute.server.dialects.conversation import image_part

CHAT = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": ""}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "noon"},
        {"role": "developer", "content": "Answer in French."},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    "tool_choice": "required",
    "max_tokens": 50,
    "temperature": 0.5,
    "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}},
}

RESPONSES = {
    "model": "m",
    "instructions": "Be brief.",
    "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": ""},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": "noon"},
        {"role": "developer", "content": "Answer in French."},
    ],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    "tool_choice": "required",
    "max_output_tokens": 50,
    "temperature": 0.5,
    "text": {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"}}},
}


def test_the_same_conversation_in_either_shape_is_the_same_request() -> None:
    from_chat = openai_chat.DIALECT.decode(msgspec.json.encode(CHAT), {}).request
    from_responses = openai_responses.DIALECT.decode(msgspec.json.encode(RESPONSES), {}).request
    assert from_chat == from_responses
    assert [m.role for m in from_chat.messages] == ["user", "assistant", "tool", "system"]
    assert from_chat.messages[2].content == (
        ToolResultPart("c1", "get_weather", "sunny"),  # named after the call the result answers
        ToolResultPart("c2", "get_time", "noon"),
    )
    assert from_chat.messages[1].content[1] == ToolCallPart("c2", "get_time", {})  # no arguments: {}
    assert from_chat.output_schema is not None and from_chat.output_schema.strict
    assert from_chat.tools[0].input_schema == {"type": "object"}


def test_image_urls_lower_to_media_parts_by_their_kind() -> None:
    assert image_part("data:image/png;base64,iVBORw0KGgo=", "x") == MediaPart("image/png", "iVBORw0KGgo=")
    # the media type is guessed from the path, not the query; a non-image guess falls back to jpeg
    assert image_part("https://e.example/cat.png?size=2x.pdf", "x").mime_type == "image/png"
    assert image_part("https://e.example/doc.pdf", "x").mime_type == "image/jpeg"
    for bad in (
        "data:image/png,iVBORw0KGgo=",
        "data:;base64,AAAA",
        "data:image/png;base64,",
        "ftp://e/x.png",
    ):
        with pytest.raises(InvalidRequestError, match=r"^messages\.0: "):
            image_part(bad, "messages.0")
