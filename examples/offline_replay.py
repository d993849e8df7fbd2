"""Runs offline: replays a real recorded Anthropic web-search stream (bundled with llmroute)
through the whole stack and prints the answer with its citations. No key, no network."""

import anyio
import httpx

import llmroute
from llmroute import hosted
from llmroute.cli.demo import load_recording
from llmroute.providers import anthropic
from llmroute.testing import Chunking, ReplayTransport


async def main() -> None:
    transport = ReplayTransport(load_recording("anthropic-web-search"), Chunking.random(seed=1))
    model = anthropic.configure(api_key="offline").messages("claude-sonnet-4-0")
    request = llmroute.request(
        model, prompt="Give me the top 3 news in the world today.", tools=[hosted.web_search()]
    )
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.generate(request)
    searches = [c.input for c in response.tool_calls if c.provider_executed]
    print(f"searched: {searches}")
    print(response.text[:300], "…")
    for citation in response.citations[:3]:
        print(f"  [{citation.title}]({citation.url})")


if __name__ == "__main__":
    anyio.run(main)
