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

from typing import Any

from ..protocols import openai_responses
from ..protocols.openai_chat import ChatQuirks
from ..protocols.openai_responses import ResponsesQuirks
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.options import GenerationOptions
from ._facade import make_model
from ._family import Compatible, Family

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
RESPONSES_QUIRKS = ResponsesQuirks(hosted_custom_tools=True, hosted_kinds=("x_search",))


class XAI(Compatible):
    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(FAMILY, base_url=base_url, api_key=api_key, headers=headers, quirks=None, name="xai")
        self.headers = headers
        self._responses: Route | None = None

    def chat(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Grok model. Extra keyword options become body fields (``reasoning_effort``, ...)."""
        return super().model(model_id, generation=generation, **options)

    def responses(
        self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A Grok model over xAI's Responses API (server-side tools reported as hosted calls)."""
        if self._responses is None:
            self._responses = openai_responses.route(
                self.base_url, self.auth, name="xai-responses", quirks=RESPONSES_QUIRKS, headers=self.headers
            )
        return make_model(model_id, self._responses, "xai", generation, options)

    def model(self, model_id: str, **kwargs: Any) -> Model:
        return self.chat(model_id, **kwargs)

    def __repr__(self) -> str:
        return f"XAI(base_url={self.base_url!r})"


def configure(
    api_key: str | Secret | None = None,
    *,
    base_url: str | None = None,
    headers: dict[str, str] | None = None,
) -> XAI:
    return XAI(api_key, base_url=base_url, headers=headers)
