"""What must round-trip through a client that speaks another dialect than the upstream: reasoning
(an Anthropic signature, a Responses ``encrypted_content``, a Gemini thought signature) and a tool
call's provider data, packed into the one opaque field each inbound dialect already hands back
untouched (an Anthropic thinking block's ``signature``, a Gemini part's ``thoughtSignature``).

A packed value is standard base64 of ``llmroute1`` and a NUL byte, then a small JSON object. It is
base64 because clients treat these fields as base64 (google-genai decodes ``thoughtSignature`` to
bytes and encodes it again), so a packed value survives them byte for byte; a provider's own
signature (base64 of its own bytes) never decodes to that prefix, so it passes through as it is
and a packed one is recognised on the way back in. It is not secret (a provider's signatures are
not either), and the provider still verifies its own signature inside it.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

from ..schema.content import ReasoningPart
from ..schema.events import ReasoningEnd

__all__ = ["Carried", "of_reasoning", "pack", "restored", "unpack"]

_MAGIC = b"llmroute1\x00"


class Carried(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a packed value holds: a reasoning block's round-trip fields, or a tool call's."""

    signature: str | None = None
    """The provider's own signature over the reasoning (Anthropic, Gemini)."""
    encrypted: str | None = None
    """Reasoning the provider returned encrypted (Responses, Anthropic redacted thinking)."""
    provider_metadata: dict[str, Any] | None = None
    """The reasoning's or the call's provider metadata, by namespace."""
    call: str | None = None
    """Set when this carries a tool call's metadata: that call's id (no reasoning of its own)."""
    text: str | None = None
    """The reasoning text, when the dialect carrying it has no place of its own for it."""
    before: tuple[Carried, ...] = ()
    """The reasoning that came before a tool call, carried on the call (for clients that drop
    reasoning parts from the history they send back)."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Carried).decode


def pack(carried: Carried) -> str:
    return base64.b64encode(_MAGIC + _encode(carried)).decode("ascii")


def unpack(value: str | None) -> Carried | None:
    """The packed value's contents; ``None`` for a native signature (or anything not packed here)."""
    if not value or len(value) < 16:
        return None
    # either base64 alphabet, padded or not: google-genai sends bytes back URL-safe
    standard = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        raw = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    if not raw.startswith(_MAGIC):
        return None
    try:
        return _decode(raw[len(_MAGIC) :])
    except (msgspec.DecodeError, ValueError):
        return None  # damaged on the way: treated as no signature, as a provider would


def of_reasoning(end: ReasoningEnd, native: str, *, bare: bool = False) -> str | None:
    """The signature a dialect whose own provider is ``native`` (a provider_metadata namespace)
    shows for a finished reasoning block: the upstream's own signature as it is when the upstream is
    that provider (its metadata only under ``native``, or none at all when ``bare``: Anthropic's
    signatures come without metadata), else everything packed; ``None`` when there is nothing."""
    meta = end.provider_metadata
    if end.signature is None and end.encrypted is None and not meta:
        return None
    own = set(meta) == {native} if meta else bare
    if own and end.encrypted is None:
        return end.signature
    return pack(Carried(end.signature, end.encrypted, meta))


def restored(carried: Carried, text: str) -> ReasoningPart:
    """The reasoning part a packed value came from (``text``: the block's own text, unless packed)."""
    return ReasoningPart(
        carried.text if carried.text is not None else text,
        carried.signature,
        carried.encrypted,
        carried.provider_metadata,
    )
