"""Embedding routes: ``EmbeddingProtocol`` x ``Endpoint`` x ``Auth``, the ``EmbeddingModel`` on one,
and what one embedding request is compiled into (``prepare_embedding``).

An embedding call is not a stream of events: each request is one JSON body in, one out. So an
embedding protocol is two functions (``build_body`` for a slice of the inputs, ``decode`` for the
answer) plus what the API allows per request (``max_inputs``, ``max_bytes``) and its declared gaps
(``support``: an option it leaves out with a ``RequestWarning``, or refuses). The Endpoint and the
Auth are the chat routes' own pieces (API keys, SigV4, OAuth tokens). The calls run in
``route.embed_executor``; nothing here imports httpx.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .._version import __version__
from ..schema.embedding import INPUT_TYPES, EmbeddingResponse, InputType
from ..schema.errors import InvalidProviderOutputError, InvalidRequestError
from ..schema.notices import RequestWarning
from ..schema.usage import Usage
from .auth import Auth
from .endpoint import Endpoint
from .prepared import PreparedRequest
from .support import Support, refusal

if TYPE_CHECKING:
    from ..catalog.info import ModelInfo
    from .transport import TransportKind

__all__ = [
    "BuildBody",
    "DecodeAnswer",
    "Decoded",
    "EmbedOptions",
    "EmbeddingGroup",
    "EmbeddingModel",
    "EmbeddingProtocol",
    "EmbeddingRoute",
    "Row",
    "pack",
    "prepare_embedding",
    "resolve_options",
]

_encoder = msgspec.json.Encoder()
_USER_AGENT = f"llmroute/{__version__}"
_LITTLE = sys.byteorder == "little"

Row = Sequence[float] | bytes
"""One decoded vector: floats from JSON, or little-endian float32 bytes (a base64 answer)."""
BuildBody = Callable[[Sequence[str], "EmbedOptions", "EmbeddingModel"], Any]
"""An embedding protocol's ``build_body``: one slice of the inputs -> its request body."""
DecodeAnswer = Callable[[bytes, Mapping[str, str], int], "Decoded"]
"""An embedding protocol's ``decode``: an answer's body, headers and input count -> ``Decoded``."""


class EmbedOptions(msgspec.Struct, frozen=True):
    """The options one embedding call sends (after the route's ``support`` has applied)."""

    dimensions: int | None = None
    """Floats per vector the caller asked for (``None``: the model's own)."""
    input_type: InputType | None = None
    """What the vectors are for (``None``: not said)."""


class Decoded(msgspec.Struct, frozen=True):
    """One answer, decoded: its vectors in input order and what it reported."""

    vectors: array[float]
    """The answer's vectors, one after another."""
    dimensions: int
    """Floats per vector."""
    usage: Usage | None = None
    """The request's input tokens, when the provider reports them."""
    model: str | None = None
    """The model the provider says answered."""


class EmbeddingProtocol(msgspec.Struct, frozen=True):
    """One API's embedding request and answer. ``build_body(inputs, options, model)`` returns the
    body (a Struct or dict) for one slice of the inputs; ``decode(body, headers, count)`` reads the
    answer to a slice of ``count`` inputs into ``Decoded`` (``pack`` checks count and shape)."""

    name: str
    """Named in errors, warnings and telemetry (``openai-embeddings``, ``gemini-embeddings``)."""
    build_body: BuildBody
    """The request body for one slice of the inputs."""
    decode: DecodeAnswer
    """The answer's vectors and usage; ``InvalidProviderOutputError`` for a wrong shape."""
    max_inputs: int
    """The most inputs the API takes in one request (its documented maximum)."""
    max_bytes: int | None = None
    """The most UTF-8 bytes of input one request may carry, where the API caps tokens per
    request: every token is at least one byte, so a slice under it is under the token cap."""
    support: Support = Support()
    """Options the API has no field for: ``dimensions``, ``input_type`` or one value of it
    (``input_type.clustering``), left out with a warning (``unsent``) or refused."""

    def with_(self, **changes: Any) -> EmbeddingProtocol:
        return msgspec.structs.replace(self, **changes)


class EmbeddingRoute(msgspec.Struct, frozen=True):
    """EmbeddingProtocol x Endpoint x Auth, as a chat ``Route`` without framing (one body back)."""

    name: str
    """Named in errors, warnings, logs and telemetry (``openai-embeddings``, ``azure-embeddings``)."""
    protocol: EmbeddingProtocol
    """The wire format of the request and the answer."""
    endpoint: Endpoint
    """Where requests go; the path may hold ``{model}``."""
    auth: Auth
    """How requests are signed: an API key header, a bearer token, SigV4, OAuth tokens."""
    transport: TransportKind | None = None
    """The kind of transport that moves requests (``None``: the client's HTTP)."""
    headers: Mapping[str, str] | None = None
    """Extra headers every request carries."""

    def with_(self, **changes: Any) -> EmbeddingRoute:
        return msgspec.structs.replace(self, **changes)

    def __repr__(self) -> str:
        from .redact import redact_headers

        headers = redact_headers(self.headers) if self.headers else None
        return (
            f"EmbeddingRoute(name={self.name!r}, protocol={self.protocol.name!r}, "
            f"endpoint={self.endpoint!r}, auth={self.auth!r}, headers={headers!r})"
        )


class EmbeddingModel(msgspec.Struct, frozen=True):
    """An embedding model id on a route (a facade's ``.embedding(id)``): hand it to
    ``client.embed(model, inputs)``."""

    id: str
    """The provider's model id (``text-embedding-3-small``), sent as is."""
    route: EmbeddingRoute
    """How calls reach the provider."""
    provider: str
    """The provider's name: prices and telemetry key on it."""
    dimensions: int | None = None
    """Floats per vector for every call (``None``: the model's own); a call's own wins."""
    input_type: InputType | None = None
    """What the vectors are for, for every call; a call's own wins."""
    options: Mapping[str, Any] | None = None
    """Provider body fields for every call (``truncate``, ``normalize``, ...); they may add fields,
    never replace one built from the call."""

    def __post_init__(self) -> None:
        check_dimensions(self.dimensions, "dimensions")
        check_input_type(self.input_type, "input_type")

    def with_(self, **changes: Any) -> EmbeddingModel:
        return msgspec.structs.replace(self, **changes)

    @property
    def info(self) -> ModelInfo | None:
        """What ``llmroute.catalog`` knows about this model (prices); ``None`` when it does not."""
        from ..catalog import lookup

        return lookup(self.provider, self.id)

    def __repr__(self) -> str:
        return f"EmbeddingModel({self.provider}:{self.id} via {self.route.name})"


class EmbeddingGroup(ABC):
    """A value used like an ``EmbeddingModel`` that picks one per call (``llmroute.Router`` over
    embedding models); it runs the call on one of them through ``route.embed_executor``."""

    @abstractmethod
    def embedding_models(self) -> tuple[EmbeddingModel, ...]:
        """Every model the group may send to, in its preferred order."""

    @abstractmethod
    async def run_embed(
        self,
        ctx: Any,
        inputs: tuple[str, ...],
        dimensions: int | None,
        input_type: InputType | None,
        limit: int,
    ) -> EmbeddingResponse:
        """The whole call (every slice) on one model of the group's choosing."""


# -- options ------------------------------------------------------------------------------------


def check_dimensions(value: object, param: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidRequestError(f"{param}: must be a positive int (or None), got {value!r}", param=param)


def check_input_type(value: object, param: str) -> None:
    if value is not None and value not in INPUT_TYPES:
        raise InvalidRequestError(
            f"{param}: expected one of {', '.join(map(repr, INPUT_TYPES))} (or None), got {value!r}",
            param=param,
        )


def resolve_options(
    model: EmbeddingModel, dimensions: int | None, input_type: InputType | None
) -> tuple[EmbedOptions, tuple[RequestWarning, ...]]:
    """The call's options over the model's, checked, then the route's ``support`` applied: an
    option it has no field for is left out with a ``RequestWarning`` or refused."""
    check_dimensions(dimensions, "dimensions")
    check_input_type(input_type, "input_type")
    dimensions = dimensions if dimensions is not None else model.dimensions
    input_type = input_type if input_type is not None else model.input_type
    route, support = model.route.name, model.route.protocol.support
    warnings: list[RequestWarning] = []
    if dimensions is not None and "dimensions" in support.refused:
        raise refusal(route, "dimensions", support.refused["dimensions"])
    if input_type is not None:
        for option in (f"input_type.{input_type}", "input_type"):
            if option in support.refused:
                raise refusal(route, f"input_type={input_type!r}", support.refused[option])
            if option in support.unsent:
                warnings.append(RequestWarning(f"input_type={input_type!r}", route, support.unsent[option]))
                input_type = None
                break
    return EmbedOptions(dimensions, input_type), tuple(warnings)


# -- one request --------------------------------------------------------------------------------


async def prepare_embedding(
    model: EmbeddingModel, inputs: Sequence[str], options: EmbedOptions
) -> PreparedRequest:
    """One slice of the inputs compiled into the exact request (no I/O beyond credentials)."""
    route = model.route
    body = route.protocol.build_body(inputs, options, model)
    url = route.endpoint.url(model.id, stream=False)
    headers = {"content-type": "application/json", "accept": "application/json", "user-agent": _USER_AGENT}
    if route.headers:
        headers.update({k.lower(): v for k, v in route.headers.items()})
    return await route.auth.apply(PreparedRequest("POST", url, headers, _encoder.encode(body)))


def pack(rows: Sequence[Row], count: int, protocol: str, **decoded: Any) -> Decoded:
    """``rows`` as one buffer, once they are ``count`` vectors of one length: an answer with a
    vector missing, extra, or of another length is an ``InvalidProviderOutputError``, never a
    batch whose order or shape is off."""
    if len(rows) != count:
        raise InvalidProviderOutputError(
            f"{protocol}: {len(rows)} vectors for {count} inputs", code="bad_shape"
        )
    out: array[float] = array("f")
    dimensions = -1
    for i, row in enumerate(rows):
        n = len(row) // 4 if isinstance(row, bytes) else len(row)
        if isinstance(row, bytes) and len(row) % 4:
            raise InvalidProviderOutputError(
                f"{protocol}: vector {i} is {len(row)} bytes, not whole float32s", code="bad_shape"
            )
        if dimensions < 0:
            dimensions = n
        if n != dimensions or not n:
            raise InvalidProviderOutputError(
                f"{protocol}: vector {i} has {n} dimensions, vector 0 has {dimensions}", code="bad_shape"
            )
        if isinstance(row, bytes):
            out.frombytes(row)
        else:
            out.extend(row)
    if not _LITTLE and rows and isinstance(rows[0], bytes):
        out.byteswap()  # the wire's float32 are little-endian
    return Decoded(out, max(dimensions, 0), **decoded)
