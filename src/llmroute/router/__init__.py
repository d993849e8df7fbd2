"""Routes across models: ``Router`` over ``Target``s (fallback by priority, weights, least in-flight,
lowest latency), with cooldowns, half-open probes and rate-limit memory in ``llmroute.state``
(in-process, or Redis shared by many processes), and session affinity that keeps a prompt cache
warm (``Affinity``). See docs/routing.md and docs/caching.md."""

from .affinity import Affinity
from .history import NAMESPACE
from .limits import estimate_tokens
from .router import Router, Strategy
from .target import Cooldown, Target

__all__ = ["NAMESPACE", "Affinity", "Cooldown", "Router", "Strategy", "Target", "estimate_tokens"]
