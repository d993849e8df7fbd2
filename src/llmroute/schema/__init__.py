"""The canonical data model. Imports nothing from the rest of the package."""

from . import content, errors, events, options, request, response, tools, usage
from .content import *  # noqa: F403
from .errors import *  # noqa: F403
from .events import *  # noqa: F403
from .options import *  # noqa: F403
from .request import *  # noqa: F403
from .response import *  # noqa: F403
from .tools import *  # noqa: F403
from .usage import *  # noqa: F403

__all__ = [
    *content.__all__,
    *errors.__all__,
    *events.__all__,
    *options.__all__,
    *request.__all__,
    *response.__all__,
    *tools.__all__,
    *usage.__all__,
]
