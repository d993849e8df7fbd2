"""``llmroute serve``: an OpenAI-compatible gateway over any configured model, with the server-side
``web_search`` applied per its inject policy (extra ``llmroute[server]``: Starlette + uvicorn).

    gateway = llmroute.server.load("gateway.json")
    app = llmroute.server.create_app(gateway)        # any ASGI server

The app module (and Starlette) loads on first use, so ``llmroute.server.config`` and the CLI
subcommand import without the extra.
"""

from typing import TYPE_CHECKING, Any

from .config import Gateway, GatewayConfig, load

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["Gateway", "GatewayConfig", "create_app", "load"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module 'llmroute.server' has no attribute {name!r}")
