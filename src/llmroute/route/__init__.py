"""Route pieces: Protocol x Endpoint x Auth x Framing, transports, the executor and the Client."""

from .auth import ApiKey, Auth, HeaderAuth, NoAuth, TokenProviderAuth, bearer, header
from .client import Client
from .endpoint import Endpoint
from .model import Model, Route
from .policy import RetryPolicy, Timeouts
from .prepared import PreparedRequest
from .protocol import Protocol, StreamState
from .redact import Secret
from .stream import EventStream
from .sync import SyncClient, SyncEventStream
from .transport import HttpTransport, Transport, Wire

__all__ = [
    "ApiKey",
    "Auth",
    "Client",
    "Endpoint",
    "EventStream",
    "HeaderAuth",
    "HttpTransport",
    "Model",
    "NoAuth",
    "PreparedRequest",
    "Protocol",
    "RetryPolicy",
    "Route",
    "Secret",
    "StreamState",
    "SyncClient",
    "SyncEventStream",
    "TokenProviderAuth",
    "Timeouts",
    "Transport",
    "Wire",
    "bearer",
    "header",
]
