"""GLM (Zhipu BigModel in China, Z.ai internationally) over its OpenAI-compatible Chat API.

    glm.configure().chat("glm-4.6")                                   # open.bigmodel.cn, ZHIPUAI_API_KEY
    glm.configure(region="intl").chat("glm-4.7", thinking={"type": "enabled"})   # api.z.ai, ZAI_API_KEY
    request(model=..., tools=[llmroute.hosted.web_search(count=5)])    # GLM's built-in web_search tool

The built-in search returns its hits as a top-level ``web_search`` array next to ``choices``; the
Chat protocol surfaces them as the canonical provider-executed ``web_search`` tool-call + tool-result
(``{"sources": [{url, title}, ...], "queries": []}``); the hits as sent (``content``, ``media``,
``icon``, ``refer`` = the ``ref_N`` marker the answer may cite, ``publish_date``) are in the
result's ``provider_metadata["glm"]["web_search"]``, hit *i* behind source *i*. Thinking streams as
``reasoning_content``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from ..protocols import openai_chat
from ..protocols.openai_chat import ChatQuirks
from ..route.auth import bearer
from ..route.model import Model
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError, NoRouteError
from ..schema.options import GenerationOptions
from ..schema.tools import HostedTool
from ._facade import check_headers, check_text, make_model

__all__ = ["REGIONS", "GLM", "Region", "configure", "hosted_tool"]

Region = Literal["cn", "intl"]


class _RegionRow:
    __slots__ = ("base_url", "coding_url", "env", "headers", "search_engine")

    def __init__(
        self,
        base_url: str,
        coding_url: str,
        env: tuple[str, ...],
        search_engine: str,
        headers: dict[str, str],
    ) -> None:
        self.base_url = base_url
        self.coding_url = coding_url
        self.env = env
        self.search_engine = search_engine
        self.headers = headers


REGIONS: dict[str, _RegionRow] = {
    "cn": _RegionRow(
        "https://open.bigmodel.cn/api/paas/v4",
        "https://open.bigmodel.cn/api/coding/paas/v4",
        ("ZHIPUAI_API_KEY",),
        "search_std",
        {},
    ),
    "intl": _RegionRow(
        "https://api.z.ai/api/paas/v4",
        "https://api.z.ai/api/coding/paas/v4",
        ("ZAI_API_KEY",),
        "search-prime",
        {"Accept-Language": "en-US,en"},  # as Z.ai's own SDK sends
    ),
}


def hosted_tool(tool: HostedTool, *, search_engine: str = "search_std") -> dict[str, Any]:
    """``llmroute.hosted.web_search(...)`` -> GLM's ``{"type": "web_search", "web_search": {...}}``.

    Portable options map where GLM has an equivalent (one allowed domain -> ``search_domain_filter``,
    ``search_context_size`` -> ``content_size``); ``max_uses`` and ``user_location`` have none and are
    dropped; ``blocked_domains`` is refused. GLM's own keys (``search_engine``, ``count``,
    ``search_recency_filter``, ``search_prompt``, ...) pass through."""
    if tool.kind != "web_search":
        raise InvalidRequestError(f"glm: hosted tool {tool.kind!r} is not available; only web_search")
    opts = dict(tool.options)
    opts.pop("max_uses", None)
    opts.pop("user_location", None)
    if opts.pop("blocked_domains", None):
        raise InvalidRequestError(
            "glm: web_search cannot exclude domains; use allowed_domains with one domain"
        )
    allowed = opts.pop("allowed_domains", None)
    if allowed:
        if len(allowed) != 1:
            raise InvalidRequestError("glm: web_search filters on a single domain (search_domain_filter)")
        opts.setdefault("search_domain_filter", allowed[0])
    size = opts.pop("search_context_size", None)
    if size:
        opts.setdefault("content_size", "high" if size == "high" else "medium")
    spec: dict[str, Any] = {"enable": True, "search_engine": search_engine, "search_result": True}
    spec.update(opts)  # search_result: true makes GLM return the hits array
    return {"type": "web_search", "web_search": spec}


class GLM:
    """GLM (``configure`` is this class): ``.chat(id)``, also ``.model(id)``. ``region="cn"``
    (BigModel, ``ZHIPUAI_API_KEY``) or ``"intl"`` (Z.ai, ``ZAI_API_KEY``); ``coding=True`` for the
    coding plan's endpoint."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        region: Region = "cn",
        base_url: str | None = None,
        coding: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("glm", region=region, base_url=base_url)
        row = REGIONS.get(region)
        if row is None:
            raise NoRouteError(f"glm: unknown region {region!r}; use 'cn' (BigModel) or 'intl' (Z.ai)")
        self.region = region
        self.base_url = (base_url or (row.coding_url if coding else row.base_url)).rstrip("/")
        self.auth = bearer(api_key, *row.env, provider="glm")
        quirks = ChatQuirks(
            reasoning_fields=("reasoning_content",),
            send_reasoning=True,  # preserved thinking (clear_thinking: false) wants it back
            hosted_tools={"web_search": partial(hosted_tool, search_engine=row.search_engine)},
        )
        merged = {**row.headers, **(check_headers("glm", headers) or {})}
        self._chat = openai_chat.route(
            self.base_url, self.auth, quirks=quirks, name="glm-chat", headers=merged or None
        )

    def chat(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A GLM model. Extra keyword options become body fields (``thinking``, ``do_sample``, ...)."""
        return make_model(model_id, self._chat, "glm", generation, options)

    model = chat

    def __repr__(self) -> str:
        return f"GLM(region={self.region!r}, base_url={self.base_url!r})"


configure = GLM
