"""``Protocol[Body, Frame, State]`` is checked by pyright: a protocol value whose ``step`` takes
another protocol's state or frame, or an envelope whose unwrap hands the inner ``step`` the wrong
frame, is a type error; every protocol module's value carries its own concrete state type.

pyright (a dev dependency) runs on a small probe file, outside ``src/`` so it never ships."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.helpers import pyright_report

PROBE = """\
from llmroute.framing.eventstream import EventStreamMessage
from llmroute.framing.sse import SSEEvent
from llmroute.protocols import (
    anthropic_messages, bedrock_converse, gemini, gemini_code_assist, openai_chat, openai_responses,
)
from llmroute.protocols.openai_chat import ChatState
from llmroute.providers.bedrock import anthropic_protocol
from llmroute.route.protocol import Protocol
from llmroute.schema.events import LLMEvent

def chat_step_on_event_stream(state: ChatState, frame: EventStreamMessage, out: list[LLMEvent]) -> None: ...

def not_a_frame(frame: SSEEvent) -> int:
    return 0

def event_data(frame: SSEEvent) -> bytes:
    return frame.data

ok: openai_chat.ChatProtocol = Protocol(
    name="ok", build_body=openai_chat.build_body, new_state=openai_chat.PROTOCOL.new_state,
    step=openai_chat.step, on_halt=openai_chat.on_halt, whole=openai_chat.whole,
)
enveloped = openai_chat.PROTOCOL.wrapped("ok-envelope", lambda body, _r, _m: [body], event_data)
wrong_state: openai_chat.ChatProtocol = Protocol(  # ERROR state
    name="wrong-state", build_body=openai_chat.build_body, new_state=openai_chat.PROTOCOL.new_state,
    step=gemini.step, on_halt=openai_chat.on_halt,
)
wrong_frame: openai_chat.ChatProtocol = Protocol(  # ERROR frame
    name="wrong-frame", build_body=openai_chat.build_body, new_state=openai_chat.PROTOCOL.new_state,
    step=chat_step_on_event_stream, on_halt=openai_chat.on_halt,
)
wrong_whole: openai_chat.ChatProtocol = Protocol(  # ERROR whole
    name="wrong-whole", build_body=openai_chat.build_body, new_state=openai_chat.PROTOCOL.new_state,
    step=openai_chat.step, on_halt=openai_chat.on_halt, whole=anthropic_messages.whole,
)
wrong_unwrap = openai_chat.PROTOCOL.wrapped("x", lambda body, _r, _m: body, not_a_frame)  # ERROR unwrap

reveal_type(openai_chat.PROTOCOL)
reveal_type(openai_responses.PROTOCOL)
reveal_type(anthropic_messages.PROTOCOL)
reveal_type(gemini.PROTOCOL)
reveal_type(gemini.VERTEX_PROTOCOL)
reveal_type(bedrock_converse.PROTOCOL)
reveal_type(gemini_code_assist.code_assist_protocol("p"))
reveal_type(anthropic_protocol())
reveal_type(enveloped)
"""

# (protocol value, its frame type, its state type) as pyright reveals them
EXPECTED = [
    ("openai_chat.PROTOCOL", "bytes | SSEEvent", "ChatState"),
    ("openai_responses.PROTOCOL", "SSEEvent", "ResponsesState"),
    ("anthropic_messages.PROTOCOL", "bytes | SSEEvent", "AnthropicState"),
    ("gemini.PROTOCOL", "bytes | SSEEvent", "GeminiState"),
    ("gemini.VERTEX_PROTOCOL", "bytes | SSEEvent", "GeminiState"),
    ("bedrock_converse.PROTOCOL", "EventStreamMessage", "ConverseState"),
    ('gemini_code_assist.code_assist_protocol("p")', "SSEEvent", "GeminiState"),
    ("anthropic_protocol()", "EventStreamMessage", "AnthropicState"),
    ("enveloped", "SSEEvent", "ChatState"),
]


@pytest.mark.timeout(120)
def test_pyright_rejects_mismatched_protocols(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    config = {"include": ["probe.py"], "pythonVersion": "3.11", "reportMissingModuleSource": "none"}
    report = pyright_report(tmp_path, config)
    lines = PROBE.splitlines()
    errors: dict[str, list[str]] = {}
    revealed: dict[str, str] = {}
    for diagnostic in report["generalDiagnostics"]:
        line = lines[diagnostic["range"]["start"]["line"]]
        if diagnostic["severity"] == "error":
            # the statement's first line names the expected error (pyright may point inside it)
            row = diagnostic["range"]["start"]["line"]
            while lines[row].startswith((" ", ")")):
                row -= 1
            errors.setdefault(lines[row].partition("# ERROR ")[2] or lines[row], []).append(
                diagnostic["message"]
            )
        elif line.startswith("reveal_type("):
            revealed[line[len("reveal_type(") : -1]] = diagnostic["message"]
    assert sorted(errors) == ["frame", "state", "unwrap", "whole"], errors
    assert "GeminiState" in " ".join(errors["state"])
    assert "EventStreamMessage" in " ".join(errors["frame"])
    assert "AnthropicState" in " ".join(errors["whole"])
    for value, frame, state in EXPECTED:
        shown = revealed[value]
        assert shown.startswith('Type of "') and "Unknown" not in shown, shown
        assert shown.endswith(f', {frame}, {state}]"'), shown


def test_with_step_and_wrapped_keep_every_other_field() -> None:
    # They build a new Protocol field by field (the types change, so msgspec.structs.replace will
    # not do): a field added to Protocol later must be carried over, not reset to its default.
    from llmroute.protocols import openai_chat
    from llmroute.route.protocol import Protocol
    from llmroute.route.support import Support

    base = msgspec.structs.replace(
        openai_chat.PROTOCOL,
        accept="application/x-test",
        native_output_schema=True,
        tool_kinds=frozenset({"function", "x-test"}),
        hosted_kinds=frozenset({"x-test"}),
        support=Support(refused={"x-test": "test"}),
    )
    defaults = Protocol(
        name="d", build_body=base.build_body, new_state=base.new_state, step=base.step, on_halt=base.on_halt
    )
    replaced = {"with_step": {"step"}, "wrapped": {"name", "build_body", "step", "whole"}}
    made = {
        "with_step": base.with_step(base.step),
        "wrapped": base.wrapped("w", lambda body, _r, _m: body, lambda frame: frame, lambda body: body),
    }
    for how, protocol in made.items():
        for field in msgspec.structs.fields(Protocol):
            if field.name in replaced[how]:
                continue
            kept = getattr(protocol, field.name)
            assert kept == getattr(base, field.name), (how, field.name)
            if field.name not in {"name", "build_body", "new_state", "on_halt", "whole"}:
                assert kept != getattr(defaults, field.name), f"{field.name}: set it apart from its default"
