"""Session affinity: which target holds a session's warm prompt cache, and why a call missed it.

A session is named by ``LLMRequest.session``, else ``cache.key``, else (``Affinity(prefix=True)``)
a hash of its stable prefix: system, tools and the first user message, which a tool loop and a
chat's later turns repeat. Its **record** lives in the router's shared state under
``router:<namespace>:pin:<router>:<digest>`` (the digest of the name, so neither a session id nor
a prompt is stored): the target that served it, when, what the cache held after that call (read +
written), and a 32-bit hash of each request region (``tools``, ``system[i]``, ``messages[i]``).
The record is the pin while it is younger than the cache's lifetime (``Affinity.ttl``, else
``CachePolicy.ttl``, else five minutes); it is kept twice as long so a lapse can be named.

The miss (``explain``): a call that reads less than the session's previous call left in the
cache, by the first of: the session was idle past the lifetime (``ttl``), another target served
it (``target``), a region before the cached end changed (``changed``, the first such region), else
the provider missed with the same prefix (``provider``).
"""

from __future__ import annotations

import base64
import hashlib
import struct
import time
import zlib
from typing import cast

import msgspec

from ..schema.cache import CacheMiss, MissReason, ttl_seconds
from ..schema.errors import InvalidRequestError
from ..schema.request import LLMRequest
from ..schema.usage import Usage

__all__ = ["Affinity", "Record", "Session", "Sessions", "check_affinity", "explain", "now"]

_encode = msgspec.json.Encoder().encode
_NOT_JSON = (TypeError, ValueError, RecursionError, msgspec.EncodeError)


def now() -> float:
    """The wall clock sessions' records are kept by (a test can set it:
    ``monkeypatch.setattr(llmroute.router.affinity, "now", ...)``)."""
    return time.time()


class Affinity(msgspec.Struct, frozen=True):
    """``Router(affinity=Affinity(...))`` (or ``affinity=True`` for these defaults): keep each
    session on the target that served it, so its prompt cache stays warm. The pin moves only
    when that target cannot take a call (it fails, cools down, is rate-limited or at its cap);
    the move is an ``Attempt`` with ``pinned=True`` and the next target is the one whose cold
    call costs least among equally weighted ones. First calls of sessions follow the weights."""

    prefix: bool = True
    """Name a session without ``LLMRequest.session`` or ``cache.key`` by a hash of its stable
    prefix (system, tools, first user message). ``False``: such calls are routed as without
    affinity. (Identical first turns of different conversations are then one session: they
    share a cacheable prefix anyway.)"""
    ttl: float | None = None
    """Seconds a pin lives after the session's last call; ``None``: the request's ``CachePolicy.ttl``
    (``5m``, ``1h``, ``24h``), else five minutes (the providers' default cache lifetime)."""
    explain: bool = True
    """Keep a 32-bit hash per request region in the session's record, so a call that reads less
    from the cache than the previous one left says why (``StepFinish.cache_miss``)."""


def check_affinity(value: object) -> Affinity | None:
    """``Router(affinity=)``: ``True`` / ``False`` / ``None`` or an ``Affinity``."""
    if value is None or value is False:
        return None
    if value is True:
        return Affinity()
    if not isinstance(value, Affinity):
        raise InvalidRequestError(
            f"affinity: expected True, False or llmroute.router.Affinity(...), got {type(value).__name__}",
            param="affinity",
        )
    ttl = cast(object, value.ttl)
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0):
        raise InvalidRequestError(
            f"affinity.ttl: must be a number of seconds > 0, got {ttl!r}", param="affinity.ttl"
        )
    return value


# a request's regions: the tools' hash, each system part's, each message's
Regions = tuple[int, tuple[int, ...], tuple[int, ...]]


class Record:
    """A session's record as stored: the pin (``target`` at ``at``) and what the cache held."""

    __slots__ = ("at", "held", "regions", "target")

    def __init__(self, target: str, at: float, held: int, regions: Regions | None) -> None:
        self.target = target
        self.at = at  # wall clock
        self.held = held  # tokens the cache held after the call (read + written); -1: unknown
        self.regions = regions

    def encode(self) -> str:
        regions = ""
        if self.regions is not None:
            tools, system, messages = self.regions
            packed = struct.pack(
                f"<{2 + len(system) + len(messages)}I", tools, len(system), *system, *messages
            )
            regions = base64.b64encode(packed).decode()
        return f"{self.target}\n{self.at!r}\n{self.held}\n{regions}"

    @staticmethod
    def decode(value: str | None) -> Record | None:
        if not value:
            return None
        try:
            target, at, held, regions = value.split("\n", 3)
            parsed: Regions | None = None
            if regions:
                packed = base64.b64decode(regions, validate=True)
                hashes = struct.unpack(f"<{len(packed) // 4}I", packed)
                count = hashes[1]
                if len(hashes) < 2 + count:
                    return None
                parsed = (hashes[0], hashes[2 : 2 + count], hashes[2 + count :])
            return Record(target, float(at), int(held), parsed)
        except (ValueError, IndexError, struct.error):  # another version's, or damaged: no record
            return None


class Session:
    """One routed call's session: its state key, lifetime, the request's region hashes and the
    session's previous record."""

    __slots__ = ("key", "looked", "previous", "regions", "request", "ttl")

    def __init__(self, key: str, ttl: float, request: LLMRequest) -> None:
        self.key = key
        self.looked = False  # its record was read (once per call)
        self.ttl = ttl
        self.request = request
        self.regions: Regions | None = None
        self.previous: Record | None = None

    def pinned(self, now: float) -> str | None:
        """The target the session is pinned to now (``None``: no pin, or it lapsed)."""
        record = self.previous
        if record is None or now - record.at > self.ttl:
            return None
        return record.target

    def record(self, target: str, now: float, usage: Usage | None) -> Record:
        held = -1
        if usage is not None and (
            usage.cache_read_tokens is not None or usage.cache_write_tokens is not None
        ):
            held = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
        return Record(target, now, held, self.regions)


def _region_hash(value: object) -> int:
    return zlib.crc32(_encode(value))


class _Seen:
    """What this process last wrote for a session: the value (to skip decoding it again) and the
    request's own tuples (a tool loop's next step repeats their objects: their hashes are reused)."""

    __slots__ = ("record", "request", "value")

    def __init__(self, value: str, record: Record, request: LLMRequest) -> None:
        self.value = value
        self.record = record
        self.request = request


_SEEN = 256  # sessions this process remembers the last write of (oldest dropped first)


class Sessions:
    """A router's sessions: naming a call's session, reading and writing its record, and the
    region hashes, reusing this process's last write of a session where a tool loop's next
    step repeats it (by identity: the objects a frozen request holds)."""

    __slots__ = ("affinity", "prefix", "seen", "stable")

    def __init__(self, affinity: Affinity, prefix: str) -> None:
        self.affinity = affinity
        self.prefix = prefix
        self.seen: dict[str, _Seen] = {}
        self.stable: tuple[object, object, object, str] | None = None  # the last prefix digest

    def open(self, request: LLMRequest) -> Session | None:
        """The session ``request`` belongs to (``None``: it names none and prefix sessions are off)."""
        affinity = self.affinity
        cache = request.cache
        name = request.session or (cache.key if cache is not None else None)
        if name is not None:
            digest = hashlib.blake2b(name.encode(), digest_size=12, person=b"session").hexdigest()
        elif affinity.prefix:
            first = next((m for m in request.messages if m.role == "user"), None)
            stable = self.stable
            if (
                stable is not None
                and stable[0] is request.tools
                and stable[1] is request.system
                and stable[2] is first
            ):
                digest = stable[3]
            else:
                try:
                    hasher = hashlib.blake2b(digest_size=12, person=b"prefix")
                    hasher.update(_encode(request.tools))
                    hasher.update(_encode(request.system))
                    hasher.update(_encode(first))
                except _NOT_JSON:  # a value with no JSON form: prepare() will name it
                    return None
                digest = hasher.hexdigest()
                self.stable = (request.tools, request.system, first, digest)
        else:
            return None
        ttl = (
            affinity.ttl
            if affinity.ttl is not None
            else ttl_seconds(cache.ttl if cache is not None else None)
        )
        return Session(self.prefix + digest, ttl, request)

    def read(self, session: Session, value: str | None) -> None:
        """The session's record as the shared state holds it; its region hashes when explaining."""
        session.looked = True
        seen = self.seen.get(session.key)
        if seen is not None and value is not None and value == seen.value:
            session.previous = seen.record
        else:
            session.previous = Record.decode(value)
        if self.affinity.explain:
            try:
                session.regions = _regions(session.request, seen.request if seen is not None else None, seen)
            except _NOT_JSON:
                session.regions = None

    def wrote(self, session: Session, value: str, record: Record) -> None:
        seen = self.seen
        seen.pop(session.key, None)
        seen[session.key] = _Seen(value, record, session.request)
        if len(seen) > _SEEN:
            del seen[next(iter(seen))]


def _regions(request: LLMRequest, before: LLMRequest | None, seen: _Seen | None) -> Regions:
    """Each region's hash; those of objects the session's previous request (this process's last
    write) held too are taken from its record."""
    old = seen.record.regions if seen is not None else None
    if before is None or old is None:
        return (
            _region_hash(request.tools) if request.tools else 0,
            tuple(_region_hash(p) for p in request.system),
            tuple(_region_hash(m) for m in request.messages),
        )
    tools = old[0] if request.tools is before.tools else (_region_hash(request.tools) if request.tools else 0)
    system = old[1] if request.system is before.system else tuple(_region_hash(p) for p in request.system)
    known, hashes = before.messages, old[2]
    messages = tuple(
        hashes[i] if i < len(known) and i < len(hashes) and m is known[i] else _region_hash(m)
        for i, m in enumerate(request.messages)
    )
    return tools, system, messages


def _first_change(before: Regions, now: Regions) -> str | None:
    """The first region of ``before`` that ``now`` does not repeat (order: tools, system, messages)."""
    if before[0] != now[0]:
        return "tools"
    for name, old, new in (("system", before[1], now[1]), ("messages", before[2], now[2])):
        for i, h in enumerate(old):
            if i >= len(new) or new[i] != h:
                return f"{name}[{i}]"
        if name == "system" and len(new) > len(old):
            return f"system[{len(old)}]"  # a system part added before the conversation
    return None


def explain(session: Session, target: str, usage: Usage | None, now: float) -> CacheMiss | None:
    """Why this call read less from the cache than the session's previous call left there
    (``None``: it did not, or nothing is known to compare)."""
    previous = session.previous
    if previous is None or previous.held <= 0 or usage is None or usage.input_tokens is None:
        return None
    read = usage.cache_read_tokens or 0
    if read >= previous.held:
        return None
    idle = now - previous.at

    def miss(reason: MissReason, message: str, region: str | None = None) -> CacheMiss:
        return CacheMiss(reason, message, region, previous.held, read, idle, previous.target, target)

    if idle > session.ttl:
        return miss(
            "ttl", f"the session was idle {idle:.0f}s, longer than its cache lives ({session.ttl:.0f}s)"
        )
    if previous.target != target:
        return miss(
            "target",
            f"the session moved from {previous.target} to {target}; its prefix is cached on {previous.target}",
        )
    if session.regions is not None and previous.regions is not None:
        region = _first_change(previous.regions, session.regions)
        if region is not None:
            return miss(
                "changed",
                f"{region} changed since the session's previous call; the cache holds only what comes before it",
                region,
            )
    return miss(
        "provider",
        f"the prefix was unchanged and {target} read {read} of the {previous.held} tokens it cached "
        "(evicted early, or served by another of its cache servers)",
    )
