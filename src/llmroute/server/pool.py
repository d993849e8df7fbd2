"""The gateway's upstream client (``upstream_client``): the library's own pool
(``route.http_pool.http_transport``) in an ``httpx.AsyncClient`` that keeps no cookies."""

from __future__ import annotations

from typing import Any

import httpx

from ..route.http_pool import http_transport

__all__ = ["upstream_client"]


def upstream_client(max_connections: int = 1000) -> httpx.AsyncClient | None:
    """The ``httpx.AsyncClient`` the gateway's ``llmroute.Client`` sends upstream calls through;
    ``None`` (the client's usual pool) when the environment names a proxy. Call it on the event
    loop that will use it."""
    transport = http_transport(max_connections, max_idle=256)
    if transport is None:
        return None
    return _UpstreamClient(transport=transport, timeout=None)


class _NoCookies(httpx.Cookies):
    """Always empty: a cookie one upstream response sets is not stored."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class _UpstreamClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` that keeps no cookies. The gateway calls upstreams for many clients,
    so a cookie one response sets (a CDN's ``__cf_bm``, say) must not ride along on everyone's next
    calls; and parsing ``Set-Cookie`` costs a tenth of a short call's client-side time."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NoCookies()

    @cookies.setter
    def cookies(self, cookies: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        raise TypeError("the gateway's upstream client keeps no cookies")
