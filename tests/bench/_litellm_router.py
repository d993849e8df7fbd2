"""litellm's Router in the fault scenarios of ``bench_router_faults.py``, run by that script with
the interpreter of a venv that has litellm (``--litellm PYTHON``): reads the scenario as JSON on
the command line, prints one JSON line of outcomes. Imports nothing from llmroute."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from typing import Any


async def main(spec: dict[str, Any]) -> None:
    import litellm
    from litellm import Router

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
    logging.getLogger("LiteLLM Router").setLevel(logging.CRITICAL)
    urls: dict[str, str] = spec["urls"]

    def deployment(group: str, name: str) -> dict[str, Any]:
        params = {"model": "openai/m", "api_base": urls[name], "api_key": "sk-bench"}
        return {"model_name": group, "litellm_params": params, "model_info": {"id": name}}

    if spec["scenario"] == "latency":
        router = Router(
            model_list=[deployment("m", "fast"), deployment("m", "slow")],
            routing_strategy="latency-based-routing",
        )
        group = "m"
    else:
        router = Router(model_list=[deployment("a", "a"), deployment("b", "b")], fallbacks=[{"a": ["b"]}])
        group = "a"
    timeout = spec.get("timeout")
    outcomes: list[list[Any]] = []
    start = spec["start"]
    stop = spec["stop"]
    await asyncio.sleep(max(0.0, start - spec["warm"] - time.monotonic()))

    async def caller() -> None:
        while time.monotonic() < stop:
            began = time.monotonic()
            try:
                kw: dict[str, Any] = {"timeout": timeout} if timeout else {}
                stream = await router.acompletion(
                    model=group, messages=[{"role": "user", "content": "Hi"}], stream=True, **kw
                )
                text = ""
                async for chunk in stream:  # pyright: ignore[reportGeneralTypeIssues]
                    text += chunk.choices[0].delta.content or "" if chunk.choices else ""
                outcomes.append([began, time.monotonic(), text, None])
            except Exception as exc:
                outcomes.append([began, time.monotonic(), None, type(exc).__name__])

    await asyncio.gather(*(caller() for _ in range(spec["callers"])))
    print(json.dumps(outcomes))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
