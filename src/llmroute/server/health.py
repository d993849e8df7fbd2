"""``GET /health/ready``: can this instance serve? The config is loaded (it is, or the app would not
exist), every upstream host resolves, and Redis answers when ``redisUrl`` is set.

Problems name the model or the check, never an upstream URL or a Redis password.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import anyio

from .config import Gateway

__all__ = ["readiness"]

_TIMEOUT = 2.0


async def readiness(gateway: Gateway) -> dict[str, str]:
    """Problems by check (``upstream:main``, ``redis``); empty when ready."""
    problems: dict[str, str] = {}
    checked: dict[str, str | None] = {}
    for name, model in {**gateway.models, **gateway.embeddings}.items():
        host = urlsplit(model.route.endpoint.base_url).hostname
        if not host or "{" in host:  # a templated host (region) resolves per request
            continue
        if host not in checked:
            checked[host] = await _resolve(host)
        if checked[host] is not None:
            problems[f"upstream:{name}"] = f"the upstream host of model {name!r} {checked[host]}"
    if gateway.redis_url is not None:
        problem = await _redis(gateway.redis_url)
        if problem is not None:
            problems["redis"] = problem
    return problems


async def _resolve(host: str) -> str | None:
    try:
        with anyio.fail_after(_TIMEOUT):
            await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except TimeoutError:
        return f"did not resolve within {_TIMEOUT:g} s"
    except OSError as exc:
        return f"does not resolve ({exc.strerror or type(exc).__name__})"
    return None


async def _redis(url: str) -> str | None:
    try:
        import redis.asyncio as redis
    except ImportError:
        return "redisUrl is set but the redis package is missing: pip install 'llmroute[redis]'"
    client = redis.Redis.from_url(  # pyright: ignore[reportUnknownMemberType]
        url, socket_timeout=_TIMEOUT, socket_connect_timeout=_TIMEOUT
    )
    try:
        with anyio.fail_after(_TIMEOUT * 2):
            await client.ping()  # pyright: ignore[reportUnknownMemberType]
    except Exception as exc:  # any failure means not ready; the type says which
        return f"redis did not answer PING ({type(exc).__name__})"
    finally:
        await client.aclose()
    return None
