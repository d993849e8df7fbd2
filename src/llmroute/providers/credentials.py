"""Token providers backed by the platforms' own credential libraries (optional extras).

    vertex.configure()                                   # ADC when google-auth is installed
    vertex.configure(access_token=credentials.google_adc(scopes=[...]))
    azure.configure("my-resource")                       # Entra ID when azure-identity is installed
    azure.configure("my-resource", token_provider=credentials.azure_identity(my_credential))

Each returns an async callable giving a fresh access token per request (``TokenProviderAuth``).
Blocking refreshes run in a worker thread; tokens are cached by the libraries themselves.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from ..route.auth import TokenProvider
from ..schema.errors import AuthenticationError, NoRouteError

__all__ = [
    "AZURE_SCOPE",
    "GOOGLE_SCOPE",
    "GoogleADC",
    "azure_identity",
    "google_adc",
    "has_azure_identity",
    "has_google_auth",
]

GOOGLE_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def has_google_auth() -> bool:
    return _installed("google.auth")


def has_azure_identity() -> bool:
    return _installed("azure.identity")


def _require(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise NoRouteError(f"{module} is not installed: pip install 'llmroute[{extra}]'") from None


class _NeverRaised(Exception):
    pass


def _error_class(module: str, name: str) -> type[BaseException]:
    """An optional library's exception class, or one nothing raises when it is not installed."""
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return _NeverRaised
    return found if isinstance(found, type) and issubclass(found, BaseException) else _NeverRaised


class GoogleADC:
    """Google Application Default Credentials (``google.auth.default``): the environment's service
    account, ``gcloud auth application-default login``, or the metadata server. ``project`` is the
    project those credentials name, if any. Call it for a fresh token."""

    def __init__(self, scopes: Sequence[str] = (GOOGLE_SCOPE,)) -> None:
        auth = _require("google.auth", "vertex")
        self._request_module = _require("google.auth.transport.requests", "vertex")
        self._errors: type[BaseException] = _require("google.auth.exceptions", "vertex").GoogleAuthError
        try:
            self._credentials, project = auth.default(scopes=list(scopes))
        except self._errors as exc:
            raise AuthenticationError(
                "google: no Application Default Credentials found "
                f"({type(exc).__name__}); run 'gcloud auth application-default login', set "
                "GOOGLE_APPLICATION_CREDENTIALS, or pass access_token=",
                kind="missing",
                provider="google",
            ) from None
        self.project: str | None = project or None
        self._lock = anyio.Lock()

    async def __call__(self) -> str:
        async with self._lock:  # one refresh at a time; the others reuse its token
            if not self._credentials.valid:
                request = self._request_module.Request()
                try:
                    await anyio.to_thread.run_sync(self._credentials.refresh, request)
                except self._errors as exc:
                    # the library's message may quote the token endpoint's answer: only its type
                    raise AuthenticationError(
                        f"google: Application Default Credentials could not be refreshed ({type(exc).__name__}); "
                        "run 'gcloud auth application-default login' again",
                        kind="expired",
                        provider="google",
                    ) from None
        return str(self._credentials.token)

    def __repr__(self) -> str:
        return f"GoogleADC(project={self.project!r})"


def google_adc(scopes: Sequence[str] = (GOOGLE_SCOPE,)) -> GoogleADC:
    """A token provider from Application Default Credentials (extra ``llmroute[vertex]``)."""
    return GoogleADC(scopes)


def azure_identity(credential: Any = None, *, scope: str = AZURE_SCOPE) -> TokenProvider:
    """A token provider from an azure-identity credential (``DefaultAzureCredential()`` when none is
    given; extra ``llmroute[azure]``). Sync and ``azure.identity.aio`` credentials both work."""
    if credential is None:
        credential = _require("azure.identity", "azure").DefaultAzureCredential()
    get_token = credential.get_token
    refused = _error_class("azure.core.exceptions", "ClientAuthenticationError")

    async def token() -> str:
        try:
            if inspect.iscoroutinefunction(get_token):
                access = await get_token(scope)
            else:
                access = await anyio.to_thread.run_sync(get_token, scope)
        except refused as exc:
            # azure-identity's message lists every credential it tried: only the type is kept
            raise AuthenticationError(
                f"azure: no Entra ID token ({type(exc).__name__}); run 'az login', set the "
                "AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET variables, or pass api_key=",
                kind="missing",
                provider="azure",
            ) from None
        return str(access.token)

    return token
