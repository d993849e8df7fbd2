"""xAI (Grok): ``xai.configure().chat("grok-4")`` over Chat Completions, ``.responses("grok-4")`` over
xAI's Responses API; the key defaults to ``XAI_API_KEY``.

Grok reasoning models stream their thinking as ``reasoning_content`` (reasoning blocks); its ``completion_tokens`` leave reasoning out, so output usage adds it. Live Search
(``search_parameters``) has been retired upstream (HTTP 410), so hosted tools are refused on Chat.
On Responses xAI runs its server-side tools (``hosted.web_search()``, ``hosted.x_search()``,
``hosted.code_execution()``, ...) and reports its x_search family as ``custom_tool_call`` items
(``x_search_call`` when not streamed): hosted calls named as sent (``x_keyword_search``, ...).
The facade is the ``xai`` OpenAI-compatible family row (also ``compatible.configure("xai")``).
"""

from __future__ import annotations

from ..protocols.openai_chat import ChatQuirks
from ..protocols.openai_responses import ResponsesQuirks
from ..route.redact import Secret
from ._family import Family, FamilyWithResponses

__all__ = ["DEFAULT_BASE_URL", "FAMILY", "QUIRKS", "RESPONSES_QUIRKS", "XAI", "configure"]

FAMILY = Family(
    "xai",
    "https://api.x.ai/v1",
    ("XAI_API_KEY",),
    # xAI counts reasoning apart: prompt + completion + reasoning = total
    ChatQuirks(reasoning_fields=("reasoning_content", "reasoning"), completion_has_reasoning=False),
)
DEFAULT_BASE_URL = FAMILY.base_url
QUIRKS = FAMILY.quirks
# xAI's server-side tools: web_search, x_search, code_execution, collections (file_search), remote MCP
# (docs.x.ai/docs/guides/tools/overview) and image_generation (recorded); no hosted ``shell``.
# Each is billed per call (docs.x.ai "Tools Pricing"): web and X search, code execution, collections.
RESPONSES_QUIRKS = ResponsesQuirks(
    hosted_custom_tools=True,
    hosted_kinds=("x_search",),
    hosted_remove=("shell",),
    billed_items=(
        ("file_search_call", "file_search"),
        ("x_search_call", "x_search"),
        ("code_interpreter_call", "code_execution"),
    ),
    web_search_every_call=True,
)


class XAI(FamilyWithResponses):
    """xAI (``configure`` is this class): Grok over Chat Completions (``.chat(id)``, also
    ``.model(id)``) and xAI's Responses API (``.responses(id)``: server-side tools reported as
    hosted calls). Extra keyword options become body fields (``reasoning_effort``, ...)."""

    responses_quirks = RESPONSES_QUIRKS

    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(FAMILY, base_url=base_url, api_key=api_key, headers=headers, quirks=None, name="xai")


configure = XAI
