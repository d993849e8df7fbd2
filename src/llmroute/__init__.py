"""llmroute: one typed request model and one normalised event stream for every major LLM provider.

from llmroute.providers import openai
model = openai.configure().chat("gpt-4o-mini")
async with llmroute.Client() as client:
    async for event in client.stream(llmroute.request(model=model, prompt="Hi")):
        ...
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .build import approval, assistant, request, system, tool_message, user
from .schema import (
    ApprovalRequest,
    ApprovalRequestPart,
    ApprovalResponsePart,
    AssistantPart,
    Attempt,
    AuthenticationError,
    CachePolicy,
    Citation,
    ClientClosedError,
    ContentPolicyError,
    ContextOverflowError,
    Finish,
    FinishReason,
    GenerationOptions,
    HostedTool,
    HttpContext,
    HttpOverlay,
    InvalidProviderOutputError,
    InvalidRequestError,
    LLMError,
    LLMEvent,
    LLMRequest,
    LLMResponse,
    Media,
    MediaPart,
    Message,
    ModelRef,
    NoRouteError,
    OutputSchema,
    Part,
    ProviderError,
    ProviderInternalError,
    QuotaExceededError,
    RateLimitError,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningPart,
    ReasoningStart,
    ResponseBuilder,
    ResponseTooLargeError,
    Role,
    StepFinish,
    StepResult,
    StepStart,
    StreamConsumedError,
    TextDelta,
    TextEnd,
    TextPart,
    TextStart,
    TimeoutError,
    ToolCall,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolError,
    ToolExecutionError,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolResult,
    ToolResultPart,
    ToolSpec,
    TransportError,
    Usage,
    merge_generation,
)

if TYPE_CHECKING:
    from .client import Client
    from .media import file, image
    from .route import Model, PreparedRequest, RetryPolicy, Route, Secret, Timeouts
    from .route.hooks import CallInfo, CallResult, Hook, LoopInfo, ResponseHead, ToolInfo
    from .route.socket_pool import SocketPool
    from .router import Router, Target
    from .stream import EventStream
    from .sync import SyncClient, SyncEventStream
    from .tools import ObjectResponse, Tool, ToolFailure, has_tool_call, step_count_is, tool

# The Client pulls in httpx, and ``media`` pathlib, mimetypes and urllib (a third of llmroute's
# own import cost): load them on first use so `import llmroute` stays fast.
_LAZY = {
    "CallInfo": "route.hooks",
    "CallResult": "route.hooks",
    "Client": "client",
    "Hook": "route.hooks",
    "LoopInfo": "route.hooks",
    "ResponseHead": "route.hooks",
    "ToolInfo": "route.hooks",
    "EventStream": "stream",
    "Model": "route",
    "PreparedRequest": "route",
    "RetryPolicy": "route",
    "Route": "route",
    "Router": "router",
    "Target": "router",
    "Secret": "route",
    "SocketPool": "route.socket_pool",
    "SyncClient": "sync",
    "SyncEventStream": "sync",
    "Timeouts": "route",
    "ObjectResponse": "tools",
    "Tool": "tools",
    "ToolFailure": "tools",
    "has_tool_call": "tools",
    "step_count_is": "tools",
    "tool": "tools",
    "file": "media",
    "image": "media",
    "client_tools": "",
    "hosted": "",
    "telemetry": "",
    "testing": "",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'llmroute' has no attribute {name!r}")
    import importlib

    if module == "":
        return importlib.import_module(f"llmroute.{name}")
    value = getattr(importlib.import_module(f"llmroute.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ApprovalRequest",
    "ApprovalRequestPart",
    "ApprovalResponsePart",
    "AssistantPart",
    "Attempt",
    "AuthenticationError",
    "CallInfo",
    "CallResult",
    "ClientClosedError",
    "CachePolicy",
    "Citation",
    "Client",
    "ContentPolicyError",
    "ContextOverflowError",
    "EventStream",
    "Finish",
    "FinishReason",
    "GenerationOptions",
    "Hook",
    "HostedTool",
    "HttpContext",
    "HttpOverlay",
    "InvalidProviderOutputError",
    "InvalidRequestError",
    "LLMError",
    "LLMEvent",
    "LLMRequest",
    "LLMResponse",
    "LoopInfo",
    "Media",
    "MediaPart",
    "Message",
    "Model",
    "ModelRef",
    "NoRouteError",
    "ObjectResponse",
    "OutputSchema",
    "Part",
    "PreparedRequest",
    "ProviderError",
    "ProviderInternalError",
    "QuotaExceededError",
    "RateLimitError",
    "ResponseHead",
    "ResponseTooLargeError",
    "StreamConsumedError",
    "SyncClient",
    "SyncEventStream",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningPart",
    "ReasoningStart",
    "ResponseBuilder",
    "RetryPolicy",
    "Role",
    "Route",
    "Router",
    "Secret",
    "SocketPool",
    "StepFinish",
    "StepResult",
    "StepStart",
    "TextDelta",
    "TextEnd",
    "TextPart",
    "TextStart",
    "Target",
    "TimeoutError",
    "Tool",
    "Timeouts",
    "ToolCall",
    "ToolCallPart",
    "ToolChoice",
    "ToolDefinition",
    "ToolError",
    "ToolExecutionError",
    "ToolFailure",
    "ToolInfo",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResult",
    "ToolResultPart",
    "ToolSpec",
    "TransportError",
    "Usage",
    "__version__",
    "approval",
    "assistant",
    "file",
    "has_tool_call",
    "image",
    "merge_generation",
    "request",
    "step_count_is",
    "system",
    "tool",
    "tool_message",
    "user",
]
