"""The tool loop: the model calls tools, they run, their results go back, until it answers.
Needs ANTHROPIC_API_KEY."""

from typing import Literal

import anyio
import msgspec

import llmroute
from llmroute.providers import anthropic


class City(msgspec.Struct):
    city: str
    unit: Literal["c", "f"] = "c"


@llmroute.tool
async def get_weather(args: City) -> dict[str, str | int]:
    """Current weather for a city."""
    if args.city.lower() == "atlantis":
        raise llmroute.ToolFailure("no weather station in Atlantis")  # the model reads this
    return {"city": args.city, "temperature": 22 if args.unit == "c" else 72}


@llmroute.tool
def convert(celsius: float) -> float:
    """Celsius to Fahrenheit (a sync tool: runs in a worker thread)."""
    return celsius * 9 / 5 + 32


async def main() -> None:
    model = anthropic.configure().messages("claude-sonnet-4-5")
    request = llmroute.request(model, prompt="Weather in Paris and Atlantis, in Fahrenheit?")
    async with llmroute.Client() as client:
        # Loops until the model stops calling tools (at most 20 model calls; see stop_when).
        response = await client.generate(request, tools=[get_weather, convert])
    print(response.text)
    print(f"{len(response.steps)} steps, {len(response.tool_errors)} tool errors, usage {response.usage}")
    history = [*request.messages, *response.messages]  # carry the conversation on
    print(f"{len(history)} messages in the conversation")


if __name__ == "__main__":
    anyio.run(main)
