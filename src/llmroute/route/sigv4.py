"""AWS Signature Version 4 over the exact final body bytes and URL, with botocore's signer and
botocore's credential resolution.

botocore is an optional extra (``llmroute[bedrock]``) and is imported lazily: building a SigV4
route only checks that it is installed; the first request imports it and resolves credentials in a
worker thread (the default chain may read files or call IMDS/STS). After that, static credentials
sign on the event loop (hashing and HMACs, microseconds); refreshable credentials go back to a
thread only when botocore says a refresh is due.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import anyio.to_thread

from ..schema.errors import AuthenticationError, NoRouteError
from .prepared import PreparedRequest
from .redact import Secret, quiet_signing

__all__ = ["AwsCredentials", "SigV4Auth", "profile_region", "require_botocore"]

_ENV_HINT = (
    "pass access_key_id=/secret_access_key= (or profile=), set AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary keys), or set AWS_PROFILE"
)


def _installed() -> bool:
    try:
        return importlib.util.find_spec("botocore") is not None
    except (ImportError, ValueError):
        return False


def require_botocore(what: str = "AWS SigV4 signing") -> None:
    """``NoRouteError`` naming the extra when botocore is not installed (imports nothing)."""
    if not _installed():
        raise NoRouteError(f"{what} needs botocore: pip install 'llmroute[bedrock]'")


def profile_region(profile: str | None = None) -> str | None:
    """The ``region`` botocore reads for ``profile`` (else ``AWS_PROFILE`` / default) from the AWS
    config file; ``None`` when botocore is not installed or no region is set there."""
    if not _installed():
        return None
    session_module = _botocore("botocore.session")
    boto_error: type[Exception] = _botocore("botocore.exceptions").BotoCoreError
    try:
        value = session_module.Session(profile=profile).get_config_variable("region")
    except boto_error:  # e.g. a profile missing from the config files
        return None
    return value if isinstance(value, str) and value else None


class AwsCredentials:
    """Where AWS credentials come from: explicit keys, else botocore's chain (environment
    ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` or
    ``profile`` in the shared config/credentials files, SSO, container and instance roles).

    ``get()`` returns botocore frozen credentials. Resolution runs once, in a worker thread; later
    calls are synchronous unless botocore's refreshable credentials are due for a refresh."""

    __slots__ = ("_access_key_id", "_creds", "_profile", "_secret_access_key", "_session_token")

    def __init__(
        self,
        access_key_id: str | None = None,
        secret_access_key: str | Secret | None = None,
        session_token: str | Secret | None = None,
        profile: str | None = None,
    ) -> None:
        if (access_key_id is None) != (secret_access_key is None):
            raise AuthenticationError(
                "AWS credentials: access_key_id and secret_access_key must be given together", kind="missing"
            )
        self._access_key_id = access_key_id
        self._secret_access_key = (
            Secret(secret_access_key) if isinstance(secret_access_key, str) else secret_access_key
        )
        self._session_token = Secret(session_token) if isinstance(session_token, str) else session_token
        self._profile = profile
        self._creds: Any = None  # botocore Credentials / RefreshableCredentials once resolved

    @property
    def source(self) -> str:
        if self._access_key_id is not None:
            return "explicit"
        if self._profile:
            return f"profile {self._profile!r}"
        return "default chain"

    async def get(self) -> Any:
        creds = self._creds
        if creds is None:
            creds = await anyio.to_thread.run_sync(self._resolve)
            self._creds = creds
        elif _refresh_due(creds):
            return await anyio.to_thread.run_sync(_frozen, creds)
        return _frozen(creds)

    def _resolve(self) -> Any:
        if self._access_key_id is not None:
            credentials = _botocore("botocore.credentials")
            assert self._secret_access_key is not None
            token = self._session_token.reveal() if self._session_token is not None else None
            return credentials.Credentials(
                self._access_key_id, self._secret_access_key.reveal(), token, method="explicit"
            )
        session_module = _botocore("botocore.session")
        boto_error: type[Exception] = _botocore("botocore.exceptions").BotoCoreError
        try:
            session = session_module.Session(profile=self._profile)
            creds = session.get_credentials()
            if creds is not None:
                creds.get_frozen_credentials()  # first refresh of deferred (SSO, process) credentials
        except boto_error as exc:
            raise AuthenticationError(
                f"AWS credentials ({self.source}) could not be loaded: {type(exc).__name__}", kind="missing"
            ) from None
        if creds is None:
            raise AuthenticationError(f"no AWS credentials found: {_ENV_HINT}", kind="missing")
        return creds

    def __repr__(self) -> str:
        return f"AwsCredentials({self.source})"


def _refresh_due(creds: Any) -> bool:
    refresh_needed = getattr(creds, "refresh_needed", None)
    return bool(refresh_needed()) if refresh_needed is not None else False


def _frozen(creds: Any) -> Any:
    try:
        frozen = creds.get_frozen_credentials()
    except Exception as exc:
        raise AuthenticationError(
            f"AWS credentials could not be refreshed: {type(exc).__name__}", kind="expired"
        ) from None
    if not frozen.access_key or not frozen.secret_key:
        raise AuthenticationError(f"no AWS credentials found: {_ENV_HINT}", kind="missing")
    return frozen


class SigV4Auth:
    """Signs each prepared request (method, URL, signable headers, body bytes) for ``service`` in
    ``region``. Adds ``x-amz-date``, ``authorization`` and, for temporary keys,
    ``x-amz-security-token``; the signature and token are registered as secrets for redaction."""

    __slots__ = ("credentials", "region", "service")

    def __init__(
        self, service: str = "bedrock", region: str = "", credentials: AwsCredentials | None = None
    ) -> None:
        require_botocore()
        if not region:
            raise NoRouteError("AWS SigV4 signing needs a region")
        self.service = service
        self.region = region
        self.credentials = credentials or AwsCredentials()

    async def apply(self, request: PreparedRequest) -> PreparedRequest:
        creds = await self.credentials.get()
        signed = sign(request, creds, self.service, self.region)
        auth = signed["Authorization"]
        request.headers["x-amz-date"] = signed["X-Amz-Date"]
        request.headers["authorization"] = auth
        secrets = [auth.rsplit("Signature=", 1)[-1]]
        token = signed.get("X-Amz-Security-Token")
        if token:
            request.headers["x-amz-security-token"] = token
            secrets.append(token)
        request.secrets = (*request.secrets, *secrets)
        return request

    def __repr__(self) -> str:
        return (
            f"SigV4Auth(service={self.service!r}, region={self.region!r}, credentials={self.credentials!r})"
        )


def sign(request: PreparedRequest, frozen_credentials: Any, service: str, region: str) -> dict[str, str]:
    """The headers botocore's ``SigV4Auth`` adds for this exact request."""
    auth, awsrequest = _botocore("botocore.auth"), _botocore("botocore.awsrequest")
    # AWSRequest copies the headers; add_auth replaces any earlier Authorization / X-Amz-Date
    aws = awsrequest.AWSRequest(
        method=request.method, url=request.url, data=request.body, headers=request.headers
    )
    with quiet_signing():
        auth.SigV4Auth(frozen_credentials, service, region).add_auth(aws)
    wanted = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
    return {name: str(aws.headers[name]) for name in wanted if name in aws.headers}


def _botocore(module: str) -> Any:
    """A botocore module, imported on first use (typed ``Any``: botocore ships no stubs)."""
    return importlib.import_module(module)
