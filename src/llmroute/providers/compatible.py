"""OpenAI-compatible servers. Known families are rows of data; anything else takes ``base_url=``.

compatible.configure("groq").model("llama-3.3-70b-versatile")            # GROQ_API_KEY
compatible.configure(base_url="http://127.0.0.1:8080/v1").model("local")  # no key needed
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocols import openai_chat
from ..protocols.openai_chat import ChatQuirks
from ..route.auth import ApiKey, Auth, BearerAuth, NoAuth
from ..route.model import Model
from ..route.redact import Secret
from ..schema.errors import NoRouteError
from ..schema.options import GenerationOptions
from . import openrouter, xai
from ._facade import make_model

__all__ = ["FAMILIES", "Compatible", "Family", "configure"]


class Family(msgspec.Struct, frozen=True):
    name: str
    base_url: str
    env: tuple[str, ...]
    quirks: ChatQuirks = ChatQuirks()


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("deepseek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
        Family("groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
        Family(
            "togetherai",
            "https://api.together.xyz/v1",
            ("TOGETHER_API_KEY", "TOGETHERAI_API_KEY"),
            ChatQuirks(supports_top_k=True),
        ),
        Family(
            "fireworks",
            "https://api.fireworks.ai/inference/v1",
            ("FIREWORKS_API_KEY",),
            ChatQuirks(supports_top_k=True),
        ),
        Family("cerebras", "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",)),
        Family(
            "deepinfra",
            "https://api.deepinfra.com/v1/openai",
            ("DEEPINFRA_API_KEY",),
            ChatQuirks(supports_top_k=True),
        ),
        Family("baseten", "https://inference.baseten.co/v1", ("BASETEN_API_KEY",)),
        # Same rows as the dedicated facades (``providers.xai``, ``providers.openrouter``), which add
        # the provider's own options (plugins, app headers, ...).
        Family("xai", xai.DEFAULT_BASE_URL, ("XAI_API_KEY",), xai.QUIRKS),
        Family("openrouter", openrouter.DEFAULT_BASE_URL, ("OPENROUTER_API_KEY",), openrouter.QUIRKS),
    )
}


class Compatible:
    def __init__(
        self,
        family: Family | None,
        *,
        base_url: str | None,
        api_key: str | Secret | None,
        headers: dict[str, str] | None,
        quirks: ChatQuirks | None,
        name: str,
    ) -> None:
        self.name = name
        self.base_url = (base_url or (family.base_url if family else "")).rstrip("/")
        if not self.base_url:
            raise NoRouteError("compatible: pass a known family name or base_url=")
        auth: Auth
        if family is not None:
            auth = BearerAuth(ApiKey(api_key, family.env, name))
        elif api_key is not None:
            auth = BearerAuth(ApiKey(api_key, (), name))
        else:
            auth = NoAuth()  # local servers usually need no key
        self.route = openai_chat.route(
            self.base_url,
            auth,
            quirks=quirks or (family.quirks if family else ChatQuirks()),
            name=f"{name}-chat",
            headers=headers,
        )

    def model(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        return make_model(model_id, self.route, self.name, generation, options)

    chat = model

    def __repr__(self) -> str:
        return f"Compatible({self.name!r}, base_url={self.base_url!r})"


def configure(
    family: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | Secret | None = None,
    headers: dict[str, str] | None = None,
    quirks: ChatQuirks | None = None,
    name: str | None = None,
) -> Compatible:
    row = None
    if family is not None:
        row = FAMILIES.get(family)
        if row is None:
            known = ", ".join(sorted(FAMILIES))
            raise NoRouteError(
                f"unknown OpenAI-compatible family {family!r}; known: {known}; or pass base_url="
            )
    return Compatible(
        row,
        base_url=base_url,
        api_key=api_key,
        headers=headers,
        quirks=quirks,
        name=name or family or "compatible",
    )
