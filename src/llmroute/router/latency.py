"""The ``latency`` strategy's estimator: time to the first event per target, a time-decayed mean
kept in this process, with the calls still waiting for their first event counted, and a small
share of calls sent elsewhere to keep every estimate fresh.

- The sample is the time from sending the request (the last attempt's, so the target's own
  retries and the caller's queueing before it do not count) to the first event.
- The mean decays with time, not with the sample count: a sample ``dt`` seconds after the last one
  weighs ``1 - exp(-dt / DECAY)`` (at least ``MIN_WEIGHT``), so a mean nobody refreshed for a while
  gives way to the next sample at once, and a busy target's mean still follows a change.
- A target's score is its mean, or the age of its oldest call still waiting for a first event when
  that is over ``PENDING_SLACK`` times the mean: a target that went slow is seen as slow while its
  calls are still waiting (and the ordinary spread of a busy target's calls, or a loaded event
  loop's lag, which every target shares, is not). A target never measured scores the best mean
  among the others, or its oldest waiting call's age (not zero, which herded every concurrent
  caller onto the unmeasured one).
- ``EXPLORE`` of the calls go to a random target of the priority (by weight), the rest to the
  lowest score.
"""

from __future__ import annotations

import math

__all__ = ["DECAY", "EXPLORE", "Latency"]

DECAY = 10.0  # seconds over which an old mean's weight falls to 1/e
MIN_WEIGHT = 0.1  # the least a new sample weighs
EXPLORE = 0.05  # share of calls sent to a random target instead of the fastest
PENDING_SLACK = 2.0  # a waiting call older than this many means says the target went slow


class Latency:
    """One target's estimator (monotonic seconds)."""

    __slots__ = ("_next", "mean", "pending", "updated")

    def __init__(self) -> None:
        self.mean: float | None = None
        self.updated = 0.0
        self.pending: dict[int, float] = {}  # call -> when it was sent, until its first event
        self._next = 0

    def sent(self, now: float) -> int:
        self._next += 1
        self.pending[self._next] = now
        return self._next

    def answered(self, call: int, now: float) -> None:
        """The call's first event arrived: its time folds into the mean."""
        start = self.pending.pop(call, None)
        if start is None:
            return
        sample = now - start
        if self.mean is None:
            self.mean = sample
        else:
            weight = max(MIN_WEIGHT, 1.0 - math.exp(-(now - self.updated) / DECAY))
            self.mean += weight * (sample - self.mean)
        self.updated = now

    def ended(self, call: int) -> None:
        """The call ended without a first event (failed, cancelled): it is no longer waiting."""
        self.pending.pop(call, None)

    def score(self, now: float, prior: float) -> float:
        mean = self.mean
        if self.pending:
            waited = now - next(iter(self.pending.values()))
            if mean is None:
                return max(prior, waited)
            if waited > PENDING_SLACK * mean:
                return waited
        return prior if mean is None else mean
