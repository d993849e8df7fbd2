"""AWS Bedrock: ``bedrock.configure(region="us-east-1").converse("us.amazon.nova-micro-v1:0")``.

Auth: a Bedrock API key (``api_key=`` or ``AWS_BEARER_TOKEN_BEDROCK``) is sent as a bearer token;
otherwise requests are SigV4-signed with botocore credentials (explicit keys, the environment,
``profile``/``AWS_PROFILE``, the default chain). Region: ``region=`` -> ``AWS_REGION`` ->
``AWS_DEFAULT_REGION`` -> the profile's ``region`` in the AWS config file (with botocore). SigV4 needs
the ``llmroute[bedrock]`` extra (botocore).
"""

from __future__ import annotations

import base64
import binascii
import os
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import msgspec

from ..framing.eventstream import EventStreamFraming, EventStreamMessage
from ..framing.sse import SSEEvent
from ..protocols import bedrock_converse
from ..protocols.embeddings import bedrock as bedrock_embeddings
from ..route.auth import Auth, bearer
from ..route.classify import from_exception_frame
from ..route.embedding import EmbeddingRoute
from ..route.endpoint import Endpoint
from ..route.model import Model, Route
from ..route.prepared import PreparedRequest
from ..route.protocol import Protocol
from ..route.redact import Secret
from ..route.sigv4 import AwsCredentials, SigV4Auth, profile_region
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError, NoRouteError
from ..schema.options import GenerationOptions
from ._facade import EmbeddingFacade, check_headers, check_model_id, check_text, make_model

__all__ = [
    "ANTHROPIC_VERSION",
    "API_KEY_ENV",
    "Bedrock",
    "BedrockAuth",
    "anthropic_protocol",
    "configure",
    "resolve_region",
    "unwrap_chunk",
]

API_KEY_ENV = "AWS_BEARER_TOKEN_BEDROCK"
ANTHROPIC_VERSION = "bedrock-2023-05-31"
PROVIDER = "bedrock"


def resolve_region(region: str | None = None, profile: str | None = None) -> str:
    """``region`` -> ``AWS_REGION`` -> ``AWS_DEFAULT_REGION`` -> the ``region`` of ``profile`` (or
    ``AWS_PROFILE``/default) in the AWS config file, read with botocore when it is installed."""
    value = (
        region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or profile_region(profile)
    )
    if not value:
        raise NoRouteError(
            "bedrock: no AWS region: pass region=..., set AWS_REGION (or AWS_DEFAULT_REGION), "
            "or set region in the AWS profile's config"
        )
    return value


class BedrockAuth:
    """Bearer with a Bedrock API key (``api_key=``, or ``AWS_BEARER_TOKEN_BEDROCK`` unless explicit
    AWS credentials were given), SigV4 otherwise; decided once, when configured (SigV4 fails here,
    naming the extra, without botocore)."""

    __slots__ = ("_auth", "_bearer", "_credentials", "_region")

    def __init__(
        self,
        region: str,
        *,
        api_key: str | Secret | None = None,
        credentials: AwsCredentials | None = None,
        explicit_sigv4: bool = False,
    ) -> None:
        self._region = region
        self._credentials = credentials or AwsCredentials()
        bearer_auth = bearer(api_key, API_KEY_ENV, provider=PROVIDER)
        self._bearer = api_key is not None or (not explicit_sigv4 and bearer_auth.key.peek() is not None)
        self._auth: Auth = bearer_auth if self._bearer else SigV4Auth(PROVIDER, region, self._credentials)

    def uses_bearer(self) -> bool:
        return self._bearer

    async def apply(self, request: PreparedRequest) -> PreparedRequest:
        return await self._auth.apply(request)

    def __repr__(self) -> str:
        mode = "api key" if self._bearer else repr(self._credentials)
        return f"BedrockAuth(region={self._region!r}, {mode})"


# Anthropic Messages on Bedrock: the Anthropic protocol inside Bedrock's envelope -----------------


class _Chunk(msgspec.Struct):
    bytes: str = ""


_chunk_decoder = msgspec.json.Decoder(_Chunk)
_PING = SSEEvent(b'{"type":"ping"}')


def unwrap_chunk(frame: EventStreamMessage) -> SSEEvent:
    """An ``invoke-with-response-stream`` message -> the Anthropic SSE event it carries (the
    ``chunk`` payload's base64 ``bytes``); exception messages raise their typed error."""
    if frame.message_type != "event":
        raise from_exception_frame(frame)
    if frame.event_type != "chunk":
        return _PING  # nothing for the inner protocol
    try:
        chunk = _chunk_decoder.decode(frame.payload)
        return SSEEvent(base64.b64decode(chunk.bytes, validate=True))
    except (msgspec.DecodeError, binascii.Error) as exc:
        raise InvalidProviderOutputError(
            f"bedrock: malformed invoke-with-response-stream chunk: {exc}",
            raw=frame.payload[:500].decode("utf-8", "replace"),
        ) from None


if TYPE_CHECKING:
    from ..protocols.anthropic_messages.state import AnthropicState

AnthropicOnBedrock: TypeAlias = "Protocol[dict[str, Any], EventStreamMessage, AnthropicState]"
"""Messages' body in Bedrock's envelope, frames unwrapped from event-stream ``chunk`` messages."""

_anthropic: AnthropicOnBedrock | None = None


def anthropic_protocol() -> AnthropicOnBedrock:
    """Anthropic Messages x Bedrock: body without ``model``/``stream`` plus ``anthropic_version``,
    frames unwrapped from event-stream ``chunk`` messages. A composition, not a new protocol."""
    global _anthropic
    if _anthropic is None:
        from ..protocols import anthropic_messages

        wrapped = anthropic_messages.PROTOCOL.wrapped(
            "bedrock-anthropic-messages", anthropic_messages.envelope(ANTHROPIC_VERSION), unwrap_chunk
        )
        # Bedrock has no MCP connector: hosted ``mcp`` tools (and ``mcp_servers``) are refused
        _anthropic = msgspec.structs.replace(
            wrapped,
            accept=bedrock_converse.ACCEPT,
            hosted_kinds=wrapped.hosted_kinds - {"mcp"},
            support=wrapped.support.with_(
                refused={"provider_options.mcp_servers": "Bedrock has no MCP connector"}
            ),
        )
    return _anthropic


class Bedrock(EmbeddingFacade):
    """AWS Bedrock (``configure`` is this class): ``.converse(id)`` (also ``.model(id)``),
    ``.anthropic(id)`` for Claude's native Messages API and ``.embedding(id)`` through
    ``InvokeModel`` (Amazon Titan, one text a request; Cohere Embed, 96; picked by the id). Region and auth: see the module doc."""

    def __init__(
        self,
        region: str | None = None,
        *,
        access_key_id: str | None = None,
        secret_access_key: str | Secret | None = None,
        session_token: str | Secret | None = None,
        profile: str | None = None,
        api_key: str | Secret | None = None,
        base_url: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        check_text(PROVIDER, region=region, access_key_id=access_key_id, profile=profile, base_url=base_url)
        for param, secret in (("secret_access_key", secret_access_key), ("session_token", session_token)):
            if not isinstance(cast(object, secret), str | Secret | None):
                raise InvalidRequestError(
                    f"bedrock: {param} must be a str or llmroute.Secret, got {type(secret).__name__}",
                    param=param,
                    provider=PROVIDER,
                )
        self.region = resolve_region(region, profile)
        self.base_url = base_url
        self.headers = check_headers(PROVIDER, headers)
        explicit = access_key_id is not None or secret_access_key is not None or profile is not None
        credentials = AwsCredentials(access_key_id, secret_access_key, session_token, profile)
        self.auth = BedrockAuth(
            self.region, api_key=api_key, credentials=credentials, explicit_sigv4=explicit and api_key is None
        )
        self._converse = bedrock_converse.route(
            bedrock_converse.runtime_url(self.region, base_url), self.auth, headers=self.headers
        )

    @property
    def converse_route(self) -> Route:
        return self._converse

    def converse(
        self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A Converse model. Keyword options go to the ``bedrock`` provider-options namespace: Converse
        top-level fields (``guardrailConfig``, ``performanceConfig``, ``requestMetadata``, ...) are
        sent as such; anything else (``thinking``, ``reasoningConfig``, ...) goes into
        ``additionalModelRequestFields``."""
        return make_model(model_id, self._converse, PROVIDER, generation, options)

    def anthropic(
        self, model_id: str, *, generation: GenerationOptions | None = None, **options: Any
    ) -> Model:
        """A Claude model through Bedrock's native Anthropic Messages API
        (``/model/{id}/invoke-with-response-stream``; ``/model/{id}/invoke`` with ``stream=False``).
        Keyword options are Anthropic body fields (``thinking``, ``anthropic_beta``, ...)."""
        return make_model(model_id, self._anthropic, PROVIDER, generation, options)

    model = converse  # the recommended API

    def _embedding_route(self, model_id: str) -> tuple[str, EmbeddingRoute, str]:
        check_model_id(PROVIDER, model_id)
        route = bedrock_embeddings.route(
            bedrock_converse.runtime_url(self.region, self.base_url),
            self.auth,
            bedrock_embeddings.protocol_for(model_id),
            headers=self.headers,
        )
        return PROVIDER, route, model_id

    @cached_property
    def _anthropic(self) -> Route:
        from ..protocols import anthropic_messages

        endpoint = Endpoint(
            bedrock_converse.runtime_url(self.region, self.base_url),
            "/model/{model}/invoke-with-response-stream",
            whole_path="/model/{model}/invoke",
        )
        return anthropic_messages.route(
            endpoint,
            self.auth,
            framing=EventStreamFraming(),
            protocol=anthropic_protocol(),
            name="bedrock-anthropic-messages",
            headers=self.headers,
        )

    def __repr__(self) -> str:
        return f"Bedrock(region={self.region!r}, auth={self.auth!r})"


configure = Bedrock
