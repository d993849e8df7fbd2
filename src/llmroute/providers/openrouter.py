"""OpenRouter: one key, many upstream models, over Chat Completions (and the beta Responses API).

    openrouter.configure(app_name="my-app").chat("anthropic/claude-sonnet-4.5")   # OPENROUTER_API_KEY
    request(model=..., tools=[llmroute.hosted.web_search(max_results=3)])           # openrouter:web_search
    openrouter.configure().chat("openai/gpt-4o-mini", web={"engine": "exa"})        # legacy web plugin
    openrouter.configure().chat("openai/gpt-4o-mini", online=True)                   # ``:online`` suffix

Streams carry OpenRouter's extensions, handled by the Chat protocol: ``reasoning`` /
``reasoning_details`` (signatures and encrypted reasoning kept on reasoning-end and sent back on the
next turn), ``url_citation`` annotations as citations, ``{"error": ...}`` chunks after HTTP 200 as
typed errors, and usage with ``cost`` (in ``usage.provider_metadata``) and web-search counts.
"""

from __future__ import annotations

from typing import Any, cast

from ..protocols.openai_chat import ChatQuirks
from ..route.model import Model
from ..route.redact import Secret
from ..schema.errors import InvalidRequestError
from ..schema.options import GenerationOptions
from ..schema.tools import HostedTool
from ._facade import check_headers, check_text
from ._family import Family, FamilyWithResponses

__all__ = ["DEFAULT_BASE_URL", "FAMILY", "QUIRKS", "OpenRouter", "configure", "hosted_tool"]


def hosted_tool(tool: HostedTool) -> dict[str, Any]:
    """``llmroute.hosted.web_search(...)`` -> the ``openrouter:web_search`` server tool (the current
    form; the ``web`` plugin is deprecated upstream and available through ``chat(web=...)``)."""
    if tool.kind != "web_search":
        raise InvalidRequestError(f"openrouter: hosted tool {tool.kind!r} is not available; only web_search")
    parameters = dict(tool.options)
    blocked = parameters.pop("blocked_domains", None)
    if blocked:
        parameters["excluded_domains"] = list(blocked)
    if parameters.get("allowed_domains") and parameters.get("excluded_domains"):
        raise InvalidRequestError("openrouter: web_search takes allowed_domains or blocked_domains, not both")
    entry: dict[str, Any] = {"type": "openrouter:web_search"}
    if parameters:
        entry["parameters"] = parameters
    return entry


QUIRKS = ChatQuirks(
    reasoning_fields=("reasoning", "reasoning_content"),
    hosted_tools={"web_search": hosted_tool},
    send_reasoning_details=True,
)
# The row ``compatible.configure("openrouter")`` uses too (Chat only, without the options below).
FAMILY = Family("openrouter", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",), QUIRKS)
DEFAULT_BASE_URL = FAMILY.base_url


class OpenRouter(FamilyWithResponses):
    """OpenRouter (``configure`` is this class): ``.chat(id)`` (also ``.model(id)``) and
    ``.responses(id)``. The key defaults to ``OPENROUTER_API_KEY``; ``app_name``/``app_url`` are
    sent for attribution on openrouter.ai."""

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        app_name: str | None = None,
        app_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text("openrouter", app_name=app_name, app_url=app_url)
        extra = check_headers("openrouter", headers) or {}
        if app_url:
            extra["HTTP-Referer"] = app_url  # app attribution on openrouter.ai
        if app_name:
            extra["X-Title"] = app_name
        super().__init__(
            FAMILY, base_url=base_url, api_key=api_key, headers=extra or None, quirks=None, name="openrouter"
        )

    def chat(
        self,
        model_id: str,
        *,
        web: bool | dict[str, Any] | None = None,
        online: bool = False,
        usage_accounting: bool | None = None,
        generation: GenerationOptions | None = None,
        **options: Any,
    ) -> Model:
        """A model over Chat Completions, OpenRouter's primary, fully featured API (also ``model``).
        ``web``: the ``web`` plugin (``True`` or its options: engine, max_results, search_prompt,
        include_domains, ...); ``online``: the ``:online`` model suffix. ``usage_accounting=True``
        sends the legacy ``usage: {include: true}`` (usage and cost are now always reported). Other
        keyword options become body fields (``reasoning``, ``provider``, ``models``, ``transforms``, ...).
        ``responses(...)`` is OpenRouter's (beta) Responses API."""
        if online and not model_id.endswith(":online"):
            model_id = f"{model_id}:online"
        if not isinstance(cast(object, web), bool | dict | None):
            raise InvalidRequestError(
                f"openrouter: web must be True or the plugin's options as a dict, got {type(web).__name__}",
                param="web",
                provider="openrouter",
            )
        if web:
            plugin = {"id": "web", **(web if isinstance(web, dict) else {})}
            options["plugins"] = [*options.get("plugins", ()), plugin]
        if usage_accounting:
            options["usage"] = {**options.get("usage", {}), "include": True}
        return super().chat(model_id, generation=generation, **options)

    model = chat


configure = OpenRouter
