"""Route pieces: Protocol x Endpoint x Auth x Framing, policy and the prepared request.

Nothing here imports httpx, so protocol modules (which import these pieces) stay light. The
transports and the executor live in `route.transport` / `route.executor`; the Client is
`llmroute.client`.
"""

from .auth import ApiKey, Auth, HeaderAuth, NoAuth, TokenProviderAuth, bearer, header
from .endpoint import Endpoint
from .model import Model, Route
from .policy import RetryPolicy, Timeouts
from .prepared import PreparedRequest
from .protocol import AnyProtocol, Protocol, StreamState
from .redact import Secret

__all__ = [
    "ApiKey",
    "Auth",
    "Endpoint",
    "HeaderAuth",
    "Model",
    "NoAuth",
    "PreparedRequest",
    "AnyProtocol",
    "Protocol",
    "RetryPolicy",
    "Route",
    "Secret",
    "StreamState",
    "TokenProviderAuth",
    "Timeouts",
    "bearer",
    "header",
]
