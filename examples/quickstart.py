"""Stream an answer, then fold one into a response. Needs OPENAI_API_KEY (any provider works the same)."""

import anyio

import llmroute
from llmroute.providers import openai


async def main() -> None:
    model = openai.configure().chat("gpt-4o-mini")  # OPENAI_API_KEY, OPENAI_BASE_URL, ...
    request = llmroute.request(model, system="Be brief.", prompt="Name three prime numbers.")
    async with llmroute.Client() as client:
        prepared = await client.prepare(request)  # the exact bytes, nothing sent
        print(prepared.method, prepared.url)
        async for event in client.stream(request):
            match event.type:
                case "text-delta":
                    print(event.text, end="", flush=True)
                case "finish":
                    print(f"\n[{event.reason}, usage: {event.usage}]")
                case _:
                    pass
        response = await client.generate(request)
        print(response.text, response.usage)


if __name__ == "__main__":
    anyio.run(main)
