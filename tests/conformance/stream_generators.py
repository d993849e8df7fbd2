"""Hypothesis generators of provider streams, one entry per registered protocol name
(``llmroute.providers.registry.PROTOCOLS``): the property tests in ``test_protocol_violations.py``
iterate the registry and take each protocol's generators from ``GENERATORS``, and
``tests/unit/test_registry.py`` fails, naming the protocol, while one has no entry here.

Each entry has two strategies:

- ``script``: a well-formed answer (``Script``: text, reasoning and tool-call parts, each cut into
  the deltas it is sent as) and the wire body that carries it, field for field in the shapes of the
  real recordings under ``cassettes/`` (named beside each encoder);
- ``events``: a body of that protocol's events drawn in any order, repeated or missing (what a
  broken server or proxy could send).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from llmroute.framing.eventstream import encode_message

# -- the answer a stream carries ----------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """Message text, sent as these deltas."""

    pieces: tuple[str, ...]


@dataclass(frozen=True)
class Reasoning:
    """Reasoning (thinking, a reasoning summary) text, sent as these deltas."""

    pieces: tuple[str, ...]


@dataclass(frozen=True)
class Call:
    """A client tool call; ``arguments`` is the JSON object text, sent as these pieces."""

    id: str
    name: str
    pieces: tuple[str, ...]

    @property
    def arguments(self) -> str:
        return "".join(self.pieces)


Part = Text | Reasoning | Call


@dataclass(frozen=True)
class Script:
    """A well-formed answer; ``usage`` is (input tokens, output tokens) as sent."""

    parts: tuple[Part, ...]
    usage: tuple[int, int] = (7, 11)

    @property
    def calls(self) -> list[Call]:
        return [p for p in self.parts if isinstance(p, Call)]

    @property
    def reason(self) -> str:
        return "tool-calls" if self.calls else "stop"


_chars = st.characters(codec="utf-8", exclude_categories=("Cs",))
_text = st.text(_chars, min_size=1, max_size=12)
_key = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=6)
_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(_chars, max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3),
    max_leaves=6,
)
_arguments = st.dictionaries(_key, _value, max_size=4)


@st.composite
def _pieces(draw: st.DrawFn, text: str) -> tuple[str, ...]:
    """``text`` cut at drawn points into non-empty pieces (a stream's deltas)."""
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=4))))
    bounds = [0, *(c for c in cuts if 0 < c < len(text)), len(text)]
    return tuple(text[a:b] for a, b in itertools.pairwise(bounds) if a < b)


@st.composite
def _json_text(draw: st.DrawFn) -> str:
    """An arguments object as a server might write it: compact or spaced, escaped or not."""
    value = draw(_arguments)
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    return json.dumps(value, separators=separators, ensure_ascii=draw(st.booleans()))


@st.composite
def scripts(draw: st.DrawFn, *, call_prefix: str = "call_") -> Script:
    """Any answer: up to five parts in any order, tool-call ids unique."""
    kinds = draw(st.lists(st.sampled_from(["text", "reasoning", "call"]), min_size=1, max_size=5))
    parts: list[Part] = []
    for n, kind in enumerate(kinds):
        if kind == "call":
            name = draw(st.sampled_from(["get_weather", "f", "lookup_2"]))
            parts.append(Call(f"{call_prefix}{n}", name, draw(_pieces(draw(_json_text())))))
        else:
            pieces = draw(_pieces(draw(_text)))
            parts.append(Text(pieces) if kind == "text" else Reasoning(pieces))
    usage = (draw(st.integers(1, 999)), draw(st.integers(1, 999)))
    return Script(tuple(parts), usage)


def sse_body(events: list[dict[str, Any]]) -> bytes:
    """``event: TYPE`` + ``data:`` blocks (Anthropic, Responses)."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events
    )


# -- OpenAI Chat Completions (opencode/openai-chat/streams-tool-call.yaml; reasoning fields:
# vercel-ai/deepseek/chat/deepseek-reasoning.chunks.yaml ``reasoning_content``, vercel-ai/groq/
# groq-reasoning.chunks.yaml ``reasoning``) -----------------------------------------------------------

_CHAT_ID = "chatcmpl-DcLQgGuIIwnMHqZMRCOwZMLir5SkK"


def chat_chunk(
    delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": _CHAT_ID,
        "object": "chat.completion.chunk",
        "created": 1778031210,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_d0a1738203",
        "choices": choices,
        "usage": usage,
        "obfuscation": "MzOlaTohF20Sbb",
    }


def chat_body(chunks: list[dict[str, Any] | str]) -> bytes:
    return b"".join(
        f"data: {c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks
    )


@st.composite
def _chat_script(draw: st.DrawFn) -> tuple[Script, bytes]:
    script = draw(scripts())
    field = draw(st.sampled_from(["reasoning_content", "reasoning"]))
    chunks: list[dict[str, Any] | str] = [chat_chunk({"role": "assistant", "content": ""})]
    index = 0
    for part in script.parts:
        if isinstance(part, Text):
            chunks += [chat_chunk({"content": p}) for p in part.pieces]
        elif isinstance(part, Reasoning):
            chunks += [chat_chunk({"content": None, field: p}) for p in part.pieces]
        else:
            first = {"index": index, "id": part.id, "type": "function"}
            chunks.append(
                chat_chunk({"tool_calls": [{**first, "function": {"name": part.name, "arguments": ""}}]})
            )
            chunks += [
                chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                for p in part.pieces
            ]
            index += 1
    chunks.append(chat_chunk({}, "tool_calls" if script.calls else "stop"))
    prompt, completion = script.usage
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    chunks += [chat_chunk(None, usage=usage), "[DONE]"]
    return script, chat_body(chunks)


_chat_index = st.integers(0, 1)
_chat_delta = st.one_of(
    st.builds(lambda t: {"content": t}, st.sampled_from(["hi", " there"])),
    st.builds(lambda f: {"content": None, f: "hm"}, st.sampled_from(["reasoning_content", "reasoning"])),
    st.just({"role": "assistant", "content": ""}),
    st.builds(
        lambda i, call: {
            "tool_calls": [
                {"index": i, "id": call, "type": "function", "function": {"name": "f", "arguments": ""}}
            ]
        },
        _chat_index,
        st.sampled_from(["call_a", "call_b"]),
    ),
    st.builds(
        lambda i, a: {"tool_calls": [{"index": i, "function": {"arguments": a}}]},
        _chat_index,
        st.sampled_from(['{"a":', "1}", "{}"]),
    ),
    st.builds(
        lambda call: {"tool_calls": [{"id": call, "function": {"arguments": "{}"}}]}, st.just("call_a")
    ),
)
_chat_event: st.SearchStrategy[dict[str, Any] | str] = st.one_of(
    st.builds(chat_chunk, _chat_delta),
    st.builds(lambda r: chat_chunk({}, r), st.sampled_from(["stop", "tool_calls", "length"])),
    st.just(chat_chunk(None, usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})),
    st.just("[DONE]"),
)


# -- OpenAI Responses (opencode/openai-responses/gpt-5-5-streams-tool-call.yaml, gpt-5-5-reasoning.yaml;
# summaries: vercel-ai/openai/responses/openai-reasoning-encrypted-content.1.chunks.yaml) ------------

_RESP_ID = "resp_05200a06f78f5b310069fa8aa28134819eba958e34eb1db6ae"


def response(status: str, usage: tuple[int, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": _RESP_ID,
        "object": "response",
        "created_at": 1778027170,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5.5-2026-04-23",
        "output": [],
        "service_tier": "auto",
        "usage": None,
    }
    if usage is not None:
        prompt, completion = usage
        body["usage"] = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
    return body


def message_item(item_id: str, status: str, text: str | None = None) -> dict[str, Any]:
    content = (
        [] if text is None else [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
    )
    return {
        "id": item_id,
        "type": "message",
        "status": status,
        "content": content,
        "phase": "final_answer",
        "role": "assistant",
    }


def reasoning_item(item_id: str, summary: str | None = None) -> dict[str, Any]:
    parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
    return {"id": item_id, "type": "reasoning", "encrypted_content": "gAAAAABqEeTJTjvWqpvy", "summary": parts}


def call_item(item_id: str, call_id: str, name: str, status: str, arguments: str = "") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


class _Seq:
    """Stamps ``sequence_number`` as the server does."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, **fields, "sequence_number": len(self.events)})


def _text_events(seq: _Seq, item_id: str, n: int, pieces: tuple[str, ...]) -> None:
    text = "".join(pieces)
    seq.add("response.output_item.added", item=message_item(item_id, "in_progress"), output_index=n)
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    where = {"content_index": 0, "item_id": item_id, "output_index": n}
    seq.add("response.content_part.added", **where, part=part)
    for p in pieces:
        seq.add("response.output_text.delta", **where, delta=p, logprobs=[], obfuscation="MiWshIm5Fsq")
    seq.add("response.output_text.done", **where, logprobs=[], text=text)
    seq.add("response.content_part.done", **where, part={**part, "text": text})
    seq.add("response.output_item.done", item=message_item(item_id, "completed", text), output_index=n)


def _reasoning_events(seq: _Seq, item_id: str, n: int, pieces: tuple[str, ...]) -> None:
    text = "".join(pieces)
    seq.add("response.output_item.added", item=reasoning_item(item_id), output_index=n)
    where = {"item_id": item_id, "output_index": n, "summary_index": 0}
    seq.add("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
    for p in pieces:
        seq.add("response.reasoning_summary_text.delta", **where, delta=p, obfuscation="2ajSAGID")
    seq.add("response.reasoning_summary_text.done", **where, text=text)
    seq.add("response.reasoning_summary_part.done", **where, part={"type": "summary_text", "text": text})
    seq.add("response.output_item.done", item=reasoning_item(item_id, text), output_index=n)


def _call_events(seq: _Seq, item_id: str, n: int, call: Call) -> None:
    seq.add(
        "response.output_item.added",
        item=call_item(item_id, call.id, call.name, "in_progress"),
        output_index=n,
    )
    for p in call.pieces:
        seq.add(
            "response.function_call_arguments.delta",
            delta=p,
            item_id=item_id,
            obfuscation="X7dp3R85iTgHxP",
            output_index=n,
        )
    seq.add(
        "response.function_call_arguments.done", arguments=call.arguments, item_id=item_id, output_index=n
    )
    done = call_item(item_id, call.id, call.name, "completed", call.arguments)
    seq.add("response.output_item.done", item=done, output_index=n)


@st.composite
def _responses_script(draw: st.DrawFn) -> tuple[Script, bytes]:
    script = draw(scripts())
    seq = _Seq()
    seq.add("response.created", response=response("in_progress"))
    seq.add("response.in_progress", response=response("in_progress"))
    for n, part in enumerate(script.parts):
        if isinstance(part, Text):
            _text_events(seq, f"msg_{n:04d}", n, part.pieces)
        elif isinstance(part, Reasoning):
            _reasoning_events(seq, f"rs_{n:04d}", n, part.pieces)
        else:
            _call_events(seq, f"fc_{n:04d}", n, part)
    seq.add("response.completed", response=response("completed", script.usage))
    return script, sse_body(seq.events)


# items of the shuffled stream, each with its own output index: (item id, output index)
_R_ITEMS = {"msg_a": 0, "rs_a": 1, "fc_a": 2, "msg_b": 3, "fc_b": 4, "fc_c": 5, "fc_x": 6}


def _at(item: str) -> dict[str, Any]:
    return {"item_id": item, "output_index": _R_ITEMS[item]}


_responses_event = st.one_of(
    st.sampled_from(
        [
            {"type": "response.created", "response": response("in_progress")},
            {"type": "response.completed", "response": response("completed", (1, 2))},
            {
                "type": "response.incomplete",
                "response": {**response("incomplete"), "incomplete_details": None},
            },
            {
                "type": "response.output_item.added",
                "item": message_item("msg_a", "in_progress"),
                "output_index": 0,
            },
            {
                "type": "response.output_item.added",
                "item": message_item("msg_b", "in_progress"),
                "output_index": 3,
            },
            {"type": "response.output_item.added", "item": reasoning_item("rs_a"), "output_index": 1},
            {
                "type": "response.output_item.added",
                "item": call_item("fc_a", "call_a", "f", "in_progress"),
                "output_index": 2,
            },
            {
                "type": "response.output_item.added",
                "item": call_item("fc_b", "call_b", "f", "in_progress"),
                "output_index": 4,
            },
            {
                "type": "response.output_item.done",
                "item": message_item("msg_a", "completed", "hi"),
                "output_index": 0,
            },
            {"type": "response.output_item.done", "item": reasoning_item("rs_a", "hm"), "output_index": 1},
            {
                "type": "response.output_item.done",
                "item": call_item("fc_a", "call_a", "f", "completed", '{"a":1}'),
                "output_index": 2,
            },
            {
                "type": "response.output_item.done",
                "item": call_item("fc_b", "call_b", "f", "completed", "{}"),
                "output_index": 4,
            },
            # another item under fc_a's call id
            {
                "type": "response.output_item.added",
                "item": call_item("fc_c", "call_a", "f", "in_progress"),
                "output_index": 5,
            },
            {
                "type": "response.output_item.done",
                "item": call_item("fc_c", "call_a", "f", "completed", "{}"),
                "output_index": 5,
            },
        ]
    ),
    st.builds(
        lambda item, i: {
            "type": "response.content_part.added",
            **_at(item),
            "content_index": i,
            "part": {"type": "output_text", "annotations": [], "text": ""},
        },
        st.sampled_from(["msg_a", "msg_b"]),
        st.integers(0, 1),
    ),
    st.builds(
        lambda item, i: {
            "type": "response.output_text.delta",
            **_at(item),
            "content_index": i,
            "delta": "hi",
        },
        st.sampled_from(["msg_a", "msg_b"]),
        st.integers(0, 1),
    ),
    st.builds(
        lambda item, i: {"type": "response.content_part.done", **_at(item), "content_index": i},
        st.sampled_from(["msg_a", "msg_b"]),
        st.integers(0, 1),
    ),
    st.builds(
        lambda i: {
            "type": "response.reasoning_summary_part.added",
            **_at("rs_a"),
            "summary_index": i,
            "part": {"type": "summary_text", "text": ""},
        },
        st.integers(0, 1),
    ),
    st.builds(
        lambda i: {
            "type": "response.reasoning_summary_text.delta",
            **_at("rs_a"),
            "summary_index": i,
            "delta": "hm",
        },
        st.integers(0, 1),
    ),
    st.builds(
        lambda item: {"type": "response.function_call_arguments.delta", **_at(item), "delta": '{"a":1}'},
        st.sampled_from(["fc_a", "fc_b", "fc_x"]),  # fc_x: never added
    ),
)


# -- Anthropic Messages (opencode/anthropic-messages/streams-tool-call.yaml) ----------------------------


@st.composite
def _anthropic_script(draw: st.DrawFn) -> tuple[Script, bytes]:
    script = draw(scripts(call_prefix="toolu_"))
    prompt, completion = script.usage
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [],
    }
    usage = {"input_tokens": prompt, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": usage}}]
    for i, part in enumerate(script.parts):
        if isinstance(part, Text):
            block: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in part.pieces]
        elif isinstance(part, Reasoning):
            block = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in part.pieces]
            deltas.append({"type": "signature_delta", "signature": "EqQBCkgIBxABGAI"})
        else:
            block = {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in part.pieces]
        events.append({"type": "content_block_start", "index": i, "content_block": block})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    stop = "tool_use" if script.calls else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": completion},
        }
    )
    events.append({"type": "message_stop"})
    return script, sse_body(events)


_anthropic_index = st.integers(0, 2)
_anthropic_block = st.sampled_from(
    [
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": ""},
        {"type": "redacted_thinking", "data": "x"},
        {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {}},
        {"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}},
        {"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_a", "content": []},
    ]
)
_anthropic_delta = st.sampled_from(
    [
        {"type": "text_delta", "text": "hi"},
        {"type": "thinking_delta", "thinking": "hm"},
        {"type": "signature_delta", "signature": "sig"},
        {"type": "input_json_delta", "partial_json": '{"a":1}'},
    ]
)
_anthropic_event = st.one_of(
    st.builds(
        lambda i, b: {"type": "content_block_start", "index": i, "content_block": b},
        _anthropic_index,
        _anthropic_block,
    ),
    st.builds(
        lambda i, d: {"type": "content_block_delta", "index": i, "delta": d},
        _anthropic_index,
        _anthropic_delta,
    ),
    st.builds(lambda i: {"type": "content_block_stop", "index": i}, _anthropic_index),
    st.just({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    st.just({"type": "message_start", "message": {"id": "m2", "usage": {"input_tokens": 1}}}),
    st.just({"type": "message_stop"}),
)
MESSAGE_START = {"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1}}}


# -- Bedrock Converse (opencode/bedrock-converse/streams-a-tool-call.yaml) -------------------------------


def bedrock_body(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    headers = {":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        encode_message({":event-type": kind, **headers}, json.dumps(payload, ensure_ascii=False).encode())
        for kind, payload in events
    )


@st.composite
def _bedrock_script(draw: st.DrawFn) -> tuple[Script, bytes]:
    script = draw(scripts(call_prefix="tooluse_"))
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"p": "abcdefgh", "role": "assistant"})]
    for i, part in enumerate(script.parts):
        if isinstance(part, Call):
            start = {"toolUse": {"name": part.name, "toolUseId": part.id}}
            events.append(("contentBlockStart", {"contentBlockIndex": i, "p": "abcd", "start": start}))
            deltas = [{"toolUse": {"input": p}} for p in part.pieces]
        elif isinstance(part, Text):
            deltas = [{"text": p} for p in part.pieces]
        else:
            deltas = [{"reasoningContent": {"text": p}} for p in part.pieces]
            deltas.append({"reasoningContent": {"signature": "EqQBCkgIBxABGAI"}})
        events += [("contentBlockDelta", {"contentBlockIndex": i, "delta": d, "p": "abc"}) for d in deltas]
        events.append(("contentBlockStop", {"contentBlockIndex": i, "p": "abcdefghijklmnopqrstuv"}))
    events.append(("messageStop", {"p": "abcd", "stopReason": "tool_use" if script.calls else "end_turn"}))
    prompt, completion = script.usage
    usage = {
        "inputTokens": prompt,
        "outputTokens": completion,
        "serverToolUsage": {},
        "totalTokens": prompt + completion,
    }
    events.append(("metadata", {"metrics": {"latencyMs": 468}, "p": "abcdefghijklmnop", "usage": usage}))
    return script, bedrock_body(events)


_bedrock_index = st.integers(0, 2)
_bedrock_event = st.one_of(
    st.builds(
        lambda i, s: ("contentBlockStart", {"contentBlockIndex": i, "start": s}),
        _bedrock_index,
        st.sampled_from(
            [
                {"toolUse": {"toolUseId": "a", "name": "f"}},
                {"toolUse": {"toolUseId": "b", "name": "f"}},
                {"toolResult": {"toolUseId": "a", "type": "web_search_result"}},
            ]
        ),
    ),
    st.builds(
        lambda i, d: ("contentBlockDelta", {"contentBlockIndex": i, "delta": d}),
        _bedrock_index,
        st.sampled_from(
            [
                {"text": "hi"},
                {"reasoningContent": {"text": "hm"}},
                {"reasoningContent": {"signature": "sig"}},
                {"toolUse": {"input": "{}"}},
            ]
        ),
    ),
    st.builds(lambda i: ("contentBlockStop", {"contentBlockIndex": i}), _bedrock_index),
    st.just(("messageStop", {"stopReason": "end_turn"})),
    st.just(("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}})),
)


# -- Gemini (opencode/gemini/streams-tool-call.yaml): function calls arrive whole, as objects ------------


def gemini_body(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\r\n\r\n" for c in chunks)


@st.composite
def _gemini_script(draw: st.DrawFn) -> tuple[Script, bytes]:
    script = draw(scripts())
    parts: list[dict[str, Any]] = []
    for part in script.parts:
        if isinstance(part, Text):
            parts += [{"text": p} for p in part.pieces]
        elif isinstance(part, Reasoning):
            parts += [{"text": p, "thought": True} for p in part.pieces]
        else:
            call = {"name": part.name, "args": json.loads(part.arguments), "id": part.id}
            parts.append({"functionCall": call, "thoughtSignature": "CiQBDDnWx1Wa8wdQ"})
    # the parts spread over chunks at drawn points, each chunk one candidate
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(parts) - 1)), max_size=3))))
    bounds = [0, *(c for c in cuts if c < len(parts)), len(parts)]
    chunks: list[dict[str, Any]] = [
        {
            "candidates": [{"content": {"parts": parts[a:b], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-2.5-flash",
            "responseId": "7CPuaa_aIcWb_uMP1Ia0wQ8",
        }
        for a, b in itertools.pairwise(bounds)
    ]
    prompt, completion = script.usage
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "totalTokenCount": prompt + completion,
    }
    return script, gemini_body(chunks)


_gemini_part = st.sampled_from(
    [
        {"text": "hi"},
        {"text": "hm", "thought": True},
        {"text": "", "thoughtSignature": "sig"},
        {"functionCall": {"name": "f", "args": {"a": 1}, "id": "x"}},
        {"functionCall": {"name": "f", "args": {"a": 1}}},
        {"functionCall": {"name": "g", "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "v"}], "willContinue": True}},
        {"functionCall": {"partialArgs": [{"jsonPath": "$.b[0].c", "numberValue": 1}]}},
        {"functionCall": {}},
        {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
    ]
)
_gemini_chunk = st.builds(
    lambda parts, stop: {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, **({"finishReason": "STOP"} if stop else {})}
        ],
        "responseId": "r",
    },
    st.lists(_gemini_part, min_size=1, max_size=3),
    st.booleans(),
)


# -- the table the property tests iterate -----------------------------------------------------------------


@dataclass(frozen=True)
class StreamGenerator:
    """How to make one protocol's streams."""

    script: st.SearchStrategy[tuple[Script, bytes]]
    """A well-formed answer and the body that carries it."""
    events: st.SearchStrategy[bytes]
    """A body of this protocol's events in any order (repeated, missing, out of place)."""
    shuffles: int = 150
    """Examples of ``events`` to run (hypothesis ``max_examples``)."""
    streams_arguments: bool = True
    """Tool arguments arrive as text pieces, passed on as input deltas byte for byte (Gemini's
    arrive whole, as objects)."""


def _listed(
    event: st.SearchStrategy[Any], encode: Callable[[list[Any]], bytes], max_size: int = 8, end: Any = None
) -> Any:
    """Lists of events, encoded; with ``end``, half of them end with it (a stream cut before its
    terminal event is refused before any other problem shows)."""
    events = st.lists(event, min_size=1, max_size=max_size)
    if end is not None:
        events = st.tuples(events, st.booleans()).map(lambda drawn: [*drawn[0], *([end] if drawn[1] else [])])
    return events.map(encode)


GENERATORS: dict[str, StreamGenerator] = {
    "openai-chat": StreamGenerator(
        _chat_script(), _listed(_chat_event, chat_body, 10, "[DONE]"), shuffles=300
    ),
    "openai-responses": StreamGenerator(
        _responses_script(),
        _listed(
            _responses_event,
            lambda events: sse_body(
                [{"type": "response.created", "response": response("in_progress")}, *events]
            ),
            10,
            {"type": "response.completed", "response": response("completed", (1, 2))},
        ),
        shuffles=300,
    ),
    "anthropic-messages": StreamGenerator(
        _anthropic_script(),
        _listed(_anthropic_event, lambda events: sse_body([MESSAGE_START, *events])),
    ),
    "bedrock-converse": StreamGenerator(
        _bedrock_script(),
        _listed(
            _bedrock_event, lambda events: bedrock_body([("messageStart", {"role": "assistant"}), *events])
        ),
    ),
    "gemini": StreamGenerator(
        _gemini_script(), _listed(_gemini_chunk, gemini_body, 6), streams_arguments=False
    ),
}
"""Registered protocol name -> its stream generators."""
