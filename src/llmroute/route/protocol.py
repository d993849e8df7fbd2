"""The protocol seam: build a provider body from an ``LLMRequest``; fold provider frames into events.

A protocol is a value (a frozen Struct of functions), so it can be composed: wrapping a body in an
envelope and unwrapping each frame (Gemini Code Assist) is a new value, not a fork of the module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..schema.events import FinishReason, LLMEvent
from ..schema.request import LLMRequest
from ..schema.usage import Usage
from .support import Support

__all__ = ["Protocol", "StreamState"]


class StreamState:
    """What every protocol's parser state carries; the executor turns it into step-finish/finish.

    ``done``: a terminal event arrived (the executor stops reading). ``reason``/``usage``: the
    finish. ``metadata``: response-level provider metadata (ids, model version, ...).
    """

    __slots__ = ("done", "metadata", "reason", "usage")

    def __init__(self) -> None:
        self.done = False
        self.reason: FinishReason = "unknown"
        self.usage: Usage | None = None
        self.metadata: dict[str, Any] | None = None


Step = Callable[[Any, Any, list[LLMEvent]], None]


class Protocol(msgspec.Struct, frozen=True):
    """``build_body(request, model)`` returns a msgspec Struct or dict (it reads
    ``request.generation.stream`` where the body says whether to stream); ``new_state(request)``
    makes the parser state; ``step(state, frame, out)`` appends events for one frame;
    ``on_halt(state, out)`` closes open blocks at end of input and raises if no terminal arrived.

    ``whole(state, body, out)`` decodes a complete non-streamed response body (``bytes``) into the
    same events, through the same handlers ``step`` uses; ``None``: the protocol only streams."""

    name: str
    build_body: Callable[[LLMRequest, Any], Any]
    new_state: Callable[[LLMRequest], StreamState]
    step: Step
    on_halt: Callable[[Any, list[LLMEvent]], None]
    accept: str = "text/event-stream"
    # lowers request.output_schema itself (a JSON-schema response mode, or a forced tool answered as text)
    native_output_schema: bool = False
    whole: Step | None = None
    # the ``ToolDefinition.kind`` values build_body lowers (client-executed built-ins beyond functions)
    tool_kinds: frozenset[str] = frozenset({"function"})
    # the ``HostedTool.kind`` values build_body lowers: the keys of the module's ``HOSTED_TOOLS``
    hosted_kinds: frozenset[str] = frozenset()
    # the request options build_body leaves out (warned) or cannot honour (refused): see route.support
    support: Support = Support()

    def wrapped(
        self,
        name: str,
        wrap_body: Callable[[Any, LLMRequest, Any], Any],
        unwrap_frame: Callable[[Any], Any],
        unwrap_whole: Callable[[bytes], bytes] | None = None,
    ) -> Protocol:
        """This protocol inside an envelope: the body is wrapped after building; each frame is
        unwrapped before the inner ``step`` sees it, and a whole body by ``unwrap_whole`` (none:
        the non-streamed body is not enveloped, as on Bedrock's ``invoke``)."""
        inner_build, inner_step, inner_whole = self.build_body, self.step, self.whole

        def build(request: LLMRequest, model: Any) -> Any:
            return wrap_body(inner_build(request, model), request, model)

        def step(state: Any, frame: Any, out: list[LLMEvent]) -> None:
            inner_step(state, unwrap_frame(frame), out)

        whole = inner_whole
        if inner_whole is not None and unwrap_whole is not None:
            whole = _unwrapping(inner_whole, unwrap_whole)
        return msgspec.structs.replace(self, name=name, build_body=build, step=step, whole=whole)


def _unwrapping(decode: Step, unwrap: Callable[[bytes], bytes]) -> Step:
    def whole(state: Any, body: Any, out: list[LLMEvent]) -> None:
        decode(state, unwrap(body), out)

    return whole
