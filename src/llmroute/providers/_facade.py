"""What every facade shares: checking its arguments, reading the vendor SDK's variables, and
turning keyword defaults into a ``Model``; and what the three Gemini facades share."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, cast

from ..route.auth import HeaderAuth, TokenProviderAuth, bearer
from ..route.embedding import EmbeddingModel, EmbeddingRoute
from ..route.model import Model, Route
from ..route.redact import Secret
from ..schema.embedding import InputType
from ..schema.errors import AuthenticationError, InvalidRequestError
from ..schema.options import GenerationOptions
from ..schema.validate import check_generation, check_json

__all__ = [
    "AccessToken",
    "GeminiFacade",
    "bare_model_id",
    "check_callable",
    "check_headers",
    "check_model_id",
    "check_text",
    "env_base_url",
    "EmbeddingFacade",
    "env_default",
    "make_model",
    "token_auth",
]


def _wrong(provider: str, param: str, expected: str, value: object) -> InvalidRequestError:
    # The type, never the value: a misplaced key must not end up in a message or a log.
    return InvalidRequestError(
        f"{provider}: {param} must be {expected}, got {type(value).__name__}", param=param, provider=provider
    )


def check_text(provider: str, **arguments: object) -> None:
    """Each argument is a ``str`` or ``None``, else a ``InvalidRequestError`` naming it."""
    for param, value in arguments.items():
        if value is not None and not isinstance(value, str):
            raise _wrong(provider, param, "a string", value)


def check_callable(provider: str, param: str, value: object) -> None:
    if value is not None and not callable(value):
        raise _wrong(provider, param, "an async callable returning a token", value)


def check_headers(provider: str, headers: object) -> dict[str, str] | None:
    """A copy of ``headers`` (``None`` when empty) once every name and value is a string."""
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise _wrong(provider, "headers", "a dict of header names to values", headers)
    for name, value in cast(Mapping[object, object], headers).items():
        if not isinstance(name, str):
            raise _wrong(provider, "headers", "a dict with string names", name)
        if not isinstance(value, str):
            raise _wrong(provider, f"headers[{name!r}]", "a string", value)
    return dict(cast(Mapping[str, str], headers)) or None


def env_default(explicit: str | None, *names: str) -> str | None:
    """An explicit argument wins; else the first of the vendor SDK's variables that is set (and
    not blank)."""
    if explicit is not None:
        return explicit
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def env_base_url(explicit: str | None, name: str, default: str, *, suffix: str = "") -> str:
    """``base_url=``, else the SDK's variable (its SDK adds ``suffix``, e.g. ``/v1``, itself, so it
    is added when missing), else ``default``."""
    if explicit is not None:
        return explicit.rstrip("/")
    value = env_default(None, name)
    if value is None:
        return default
    value = value.rstrip("/")
    return value if not suffix or value.endswith(suffix) else value + suffix


def check_model_id(provider: str, model_id: object) -> None:
    if not isinstance(model_id, str) or not model_id.strip():
        got = f", got {type(model_id).__name__}" if not isinstance(model_id, str) else ""
        raise InvalidRequestError(
            f"{provider}: a model id is required (a non-empty string{got})", param="model", provider=provider
        )


def make_model(
    model_id: str,
    route: Route,
    provider: str,
    generation: GenerationOptions | None = None,
    options: dict[str, Any] | None = None,
) -> Model:
    check_model_id(provider, model_id)
    check_generation(generation)
    for name, value in (options or {}).items():
        check_json(value, name, f"{provider}: option {name!r}")
    return Model(
        id=model_id,
        route=route,
        provider=provider,
        defaults=generation,
        provider_options={provider: options} if options else None,
    )


class EmbeddingFacade:
    """What every facade with embedding models shares: ``.embedding(id, ...)``, the one way an
    ``EmbeddingModel`` is built. A facade says only where an id goes (``_embedding_route``)."""

    def embedding(
        self,
        model_id: str,
        *,
        dimensions: int | None = None,
        input_type: InputType | None = None,
        **options: Any,
    ) -> EmbeddingModel:
        """An embedding model for ``client.embed``. ``dimensions`` and ``input_type`` are defaults
        each call may override; keyword options are the provider's body fields for every call
        (they may add fields, never replace one the call builds). What each provider does with
        them: docs/embeddings.md."""
        provider, route, model_id = self._embedding_route(model_id)
        for name, value in options.items():
            check_json(value, name, f"{provider}: option {name!r}")
        return EmbeddingModel(
            id=model_id,
            route=route,
            provider=provider,
            dimensions=dimensions,
            input_type=input_type,
            options=options or None,
        )

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        """``(provider, route, id)`` for ``model_id`` (checked: ``check_model_id``)."""
        raise NotImplementedError


# The Gemini facades (google, google.code_assist, vertex) ---------------------------------------

AccessToken = str | Secret | Callable[[], Awaitable[str]]
_GENERATION_FIELDS = frozenset(GenerationOptions.__struct_fields__)


class GeminiFacade:
    """The Gemini protocol behind one route: ``google``, ``google.code_assist`` and ``vertex``."""

    provider: ClassVar[str] = "google"  # the provider-options namespace
    _route: Route

    def gemini(self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any) -> Model:
        """A Gemini model. Keyword options are Google provider options (see the module doc)."""
        misplaced = sorted(_GENERATION_FIELDS.intersection(options))
        if misplaced:  # Gemini would get them as unknown top-level body fields and answer HTTP 400
            name = misplaced[0]
            raise InvalidRequestError(
                f"{self.provider}: {name} is a generation option here: pass "
                f"generation=llmroute.GenerationOptions({name}=...)",
                param=name,
                provider=self.provider,
            )
        return make_model(bare_model_id(model_id), self._route, self.provider, generation, options)

    model = gemini


def bare_model_id(model_id: str) -> str:
    """``models/gemini-2.5-flash`` -> ``gemini-2.5-flash`` (the path adds ``models/`` itself)."""
    return model_id.removeprefix("models/") if isinstance(cast(object, model_id), str) else model_id


def token_auth(access_token: AccessToken | None, provider: str) -> HeaderAuth | TokenProviderAuth:
    """Bearer auth from a fixed token or an async callable that returns a fresh one per request."""
    if access_token is None or access_token == "":
        raise AuthenticationError(
            f"{provider}: pass access_token= (a token string or an async callable returning a fresh token)",
            kind="missing",
            provider=provider,
        )
    if callable(access_token):
        return TokenProviderAuth(access_token)
    if not isinstance(cast(object, access_token), str | Secret):
        raise InvalidRequestError(
            f"{provider}: access_token must be a token string or an async callable returning one, "
            f"got {type(access_token).__name__}",
            param="access_token",
            provider=provider,
        )
    return bearer(access_token, provider=provider)
