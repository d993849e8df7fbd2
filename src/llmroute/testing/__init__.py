"""Test helpers for llmroute and for users' own tests: cassettes, re-chunking replay, recording.

Needs the ``test`` extra (PyYAML; vcrpy for recording).
"""

from .cassette import (
    Cassette,
    CassetteSecretError,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    find_secrets,
)
from .invariants import event_order_problems
from .recording import RECORD_ENV, recording_enabled, use_cassette
from .replay import Chunking, RechunkTransport, ReplayTransport

__all__ = [
    "RECORD_ENV",
    "Cassette",
    "CassetteSecretError",
    "Chunking",
    "Interaction",
    "RechunkTransport",
    "RecordedRequest",
    "RecordedResponse",
    "ReplayTransport",
    "event_order_problems",
    "find_secrets",
    "recording_enabled",
    "use_cassette",
]
