"""An OpenAI-compatible family (a row of data: name, base URL, key variables, Chat quirks) and the
facade built from one. Shared by ``compatible`` and the facades that own their rows (``xai``,
``openrouter``), without an import cycle between them."""

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
from ._facade import make_model

__all__ = ["Compatible", "Family"]


class Family(msgspec.Struct, frozen=True):
    name: str
    base_url: str
    env: tuple[str, ...]
    quirks: ChatQuirks = ChatQuirks()


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
        self.auth = auth
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
