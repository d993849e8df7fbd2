"""xAI (Grok) over Chat Completions: ``xai.configure().chat("grok-4")``; the key defaults to ``XAI_API_KEY``.

Grok reasoning models stream their thinking as ``reasoning_content`` (reasoning blocks). Live Search
(``search_parameters``) has been retired upstream (HTTP 410), so hosted tools are refused here.
"""

from __future__ import annotations

from typing import Any

from ..protocols import openai_chat
from ..protocols.openai_chat import ChatQuirks
from ..route.auth import ApiKey, BearerAuth
from ..route.model import Model
from ..route.redact import Secret
from ..schema.options import GenerationOptions
from ._facade import make_model

__all__ = ["DEFAULT_BASE_URL", "QUIRKS", "XAI", "configure"]

DEFAULT_BASE_URL = "https://api.x.ai/v1"
QUIRKS = ChatQuirks(reasoning_fields=("reasoning_content", "reasoning"))


class XAI:
    def __init__(
        self,
        api_key: str | Secret | None = None,
        *,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.auth = BearerAuth(ApiKey(api_key, ("XAI_API_KEY",), "xai"))
        self._chat = openai_chat.route(
            self.base_url, self.auth, quirks=QUIRKS, name="xai-chat", headers=headers
        )

    def chat(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Grok model. Extra keyword options become body fields (``reasoning_effort``, ...)."""
        return make_model(model_id, self._chat, "xai", generation, options)

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
