"""The protocol seam: build a provider body from an ``LLMRequest``; fold provider frames into events.

A protocol is a value (a frozen Struct of functions), so it can be composed: wrapping a body in an
envelope and unwrapping each frame (Gemini Code Assist) is a new value, not a fork of the module.

``Protocol[Body, Frame, State]`` is generic, as msgspec's ``Decoder[T]`` is: ``Body`` is what
``build_body`` returns, ``Frame`` what the route's framing hands ``step``, ``State`` the parser
state ``new_state`` makes and every handler takes, so a ``step`` that takes another protocol's
state or frame is a type error where the value is built. A ``Route`` holds any protocol
(``AnyProtocol``): the one place the three are erased.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeAlias, TypeVar

import msgspec

from ..schema.events import FinishReason, LLMEvent
from ..schema.request import LLMRequest, ModelRef
from ..schema.usage import Usage
from .support import Support

__all__ = ["AnyProtocol", "Protocol", "StreamState"]


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


BodyT = TypeVar("BodyT")
"""What ``build_body`` returns: a msgspec Struct, or a dict once provider options are merged."""
FrameT = TypeVar("FrameT")
"""What the route's framing hands ``step``: SSE data bytes, an ``SSEEvent``, a JSON value, ..."""
StateT = TypeVar("StateT", bound=StreamState)
"""The protocol's parser state."""
OuterBodyT = TypeVar("OuterBodyT")
OuterFrameT = TypeVar("OuterFrameT")
NewFrameT = TypeVar("NewFrameT")


class Protocol(msgspec.Struct, Generic[BodyT, FrameT, StateT], frozen=True):
    """``build_body(request, model)`` returns a msgspec Struct or dict (it reads
    ``request.generation.stream`` where the body says whether to stream); ``new_state(request)``
    makes the parser state; ``step(state, frame, out)`` appends events for one frame;
    ``on_halt(state, out)`` closes open blocks at end of input and raises if no terminal arrived.

    ``whole(state, body, out)`` decodes a complete non-streamed response body (``bytes``) into the
    same events, through the same handlers ``step`` uses; ``None``: the protocol only streams."""

    name: str
    """The protocol's name in errors and telemetry (``openai-chat``, ``anthropic-messages``, ...)."""
    build_body: Callable[[LLMRequest, ModelRef], BodyT]
    """Lowers a prepared request for one model into the provider's request body."""
    new_state: Callable[[LLMRequest], StateT]
    """A fresh parser state for one attempt."""
    step: Callable[[StateT, FrameT, list[LLMEvent]], None]
    """Folds one frame into the state, appending the events it yields."""
    on_halt: Callable[[StateT, list[LLMEvent]], None]
    """End of input: closes open blocks, raises if no terminal event arrived."""
    accept: str = "text/event-stream"
    """The ``accept`` header of a streamed request."""
    native_output_schema: bool = False
    """Lowers ``request.output_schema`` itself (a JSON-schema response mode, or a forced tool
    answered as text)."""
    whole: Callable[[StateT, bytes, list[LLMEvent]], None] | None = None
    """Decodes a complete non-streamed body; ``None``: the protocol only streams."""
    tool_kinds: frozenset[str] = frozenset({"function"})
    """The ``ToolDefinition.kind`` values build_body lowers (client-executed built-ins beyond
    functions)."""
    hosted_kinds: frozenset[str] = frozenset()
    """The ``HostedTool.kind`` values build_body lowers: the keys of the module's ``HOSTED_TOOLS``."""
    support: Support = Support()
    """The request options build_body leaves out (warned) or cannot honour (refused): see
    ``route.support``."""

    def with_step(
        self, step: Callable[[StateT, NewFrameT, list[LLMEvent]], None]
    ) -> Protocol[BodyT, NewFrameT, StateT]:
        """This protocol reading another frame type: the same body and state, ``step`` replaced
        (``msgspec.structs.replace`` would keep the old frame type)."""
        return Protocol(
            name=self.name,
            build_body=self.build_body,
            new_state=self.new_state,
            step=step,
            on_halt=self.on_halt,
            accept=self.accept,
            native_output_schema=self.native_output_schema,
            whole=self.whole,
            tool_kinds=self.tool_kinds,
            hosted_kinds=self.hosted_kinds,
            support=self.support,
        )

    def wrapped(
        self,
        name: str,
        wrap_body: Callable[[BodyT, LLMRequest, ModelRef], OuterBodyT],
        unwrap_frame: Callable[[OuterFrameT], FrameT],
        unwrap_whole: Callable[[bytes], bytes] | None = None,
    ) -> Protocol[OuterBodyT, OuterFrameT, StateT]:
        """This protocol inside an envelope: the body is wrapped after building; each frame is
        unwrapped before the inner ``step`` sees it, and a whole body by ``unwrap_whole`` (none:
        the non-streamed body is not enveloped, as on Bedrock's ``invoke``)."""
        inner_build, inner_step, inner_whole = self.build_body, self.step, self.whole

        def build(request: LLMRequest, model: ModelRef) -> OuterBodyT:
            return wrap_body(inner_build(request, model), request, model)

        def step(state: StateT, frame: OuterFrameT, out: list[LLMEvent]) -> None:
            inner_step(state, unwrap_frame(frame), out)

        whole = inner_whole
        if inner_whole is not None and unwrap_whole is not None:
            whole = _unwrapping(inner_whole, unwrap_whole)
        return Protocol(
            name=name,
            build_body=build,
            new_state=self.new_state,
            step=step,
            on_halt=self.on_halt,
            accept=self.accept,
            native_output_schema=self.native_output_schema,
            whole=whole,
            tool_kinds=self.tool_kinds,
            hosted_kinds=self.hosted_kinds,
            support=self.support,
        )


def _unwrapping(
    decode: Callable[[StateT, bytes, list[LLMEvent]], None], unwrap: Callable[[bytes], bytes]
) -> Callable[[StateT, bytes, list[LLMEvent]], None]:
    def whole(state: StateT, body: bytes, out: list[LLMEvent]) -> None:
        decode(state, unwrap(body), out)

    return whole


AnyProtocol: TypeAlias = Protocol[Any, Any, Any]
"""Any protocol, its body, frame and state erased: what a ``Route`` holds (routes of different
protocols share one list), and where the executor meets it."""
