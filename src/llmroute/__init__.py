"""llmroute: one typed request model and one normalised event stream for every major LLM provider.

    from llmroute.providers import openai
    model = openai.configure().chat("gpt-4o-mini")
    async with llmroute.Client() as client:
        async for event in client.stream(llmroute.request(model=model, prompt="Hi")):
            ...
"""

from ._version import __version__
from .build import assistant, image, request, system, tool_message, user
from .route import (
    Client,
    EventStream,
    Model,
    PreparedRequest,
    RetryPolicy,
    Route,
    Secret,
    Timeouts,
)
from .schema import *  # noqa: F403
from .schema import __all__ as _schema_all

__all__ = [
    "Client",
    "EventStream",
    "Model",
    "PreparedRequest",
    "RetryPolicy",
    "Route",
    "Secret",
    "Timeouts",
    "__version__",
    "assistant",
    "image",
    "request",
    "system",
    "tool_message",
    "user",
    *_schema_all,
]
