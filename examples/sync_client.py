"""The same client without async: SyncClient. Needs GEMINI_API_KEY."""

import llmroute
from llmroute.providers import google

model = google.configure().gemini("gemini-2.5-flash")
request = llmroute.request(model, prompt="One sentence about the Moon.")

with llmroute.SyncClient() as client:
    for event in client.stream(request):
        if event.type == "text-delta":
            print(event.text, end="", flush=True)
    print()
    response = client.generate(request)
    print(response.finish_reason, response.usage)
