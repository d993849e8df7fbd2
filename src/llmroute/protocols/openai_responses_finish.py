"""How an OpenAI Responses response ends: its status and the finish reason it means."""

from __future__ import annotations

from ..schema.errors import InvalidProviderOutputError
from ..schema.events import FinishReason

__all__ = ["finish_reason", "refuse_unfinished"]

_NAME = "openai-responses"  # ``openai_responses.NAME`` (that module imports this one)

# A Response in one of these states holds no finished answer (what is there stays in ``partial``).
_UNFINISHED = {
    "queued": "it waits to run in the background; fetch it later with GET /responses/{id}",
    "in_progress": "it still runs in the background; fetch it later with GET /responses/{id}",
    "cancelled": "it was cancelled before it completed",
}

_INCOMPLETE: dict[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content-filter"}


def refuse_unfinished(response_id: str | None, status: str) -> None:
    """A terminal event or whole body whose status says the answer is not there yet (or never
    will be) is a typed error naming that status, never a ``stop`` finish."""
    why = _UNFINISHED.get(status)
    if why is not None:
        raise InvalidProviderOutputError(
            f"{_NAME}: the response ({response_id}) is {status}, not finished: {why}",
            code=f"response_{status}",
        )


def finish_reason(status: str, incomplete: str | None, refused: bool, client_calls: int) -> FinishReason:
    if status == "incomplete":
        return _INCOMPLETE.get(incomplete or "", "unknown")
    if refused:
        return "content-filter"
    return "tool-calls" if client_calls else "stop"
