"""Tools: ``@llmroute.tool``, the multi-step tool runtime, stop conditions and structured output.

@llmroute.tool(description="Get current weather for a city.")
async def get_weather(args: Weather) -> dict[str, Any]: ...

async for event in client.stream(request, tools=[get_weather], stop_when=llmroute.step_count_is(8)):
    ...
value, response = await client.generate_object(request, schema=Answer)
"""

from .runtime import DEFAULT_CONCURRENCY, dispatch, execute_calls, run_tools
from .schema_projection import json_schema, strict_schema, strip_null_defaults
from .stop import StopCondition, has_tool_call, step_count_is
from .structured import ObjectResponse, generate_object, output_request
from .tool import InvalidToolInput, Tool, ToolFailure, tool

__all__ = [
    "DEFAULT_CONCURRENCY",
    "InvalidToolInput",
    "ObjectResponse",
    "StopCondition",
    "Tool",
    "ToolFailure",
    "dispatch",
    "execute_calls",
    "generate_object",
    "has_tool_call",
    "json_schema",
    "output_request",
    "run_tools",
    "step_count_is",
    "strict_schema",
    "strip_null_defaults",
    "tool",
]
