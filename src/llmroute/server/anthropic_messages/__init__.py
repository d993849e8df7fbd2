"""Anthropic Messages (``POST /v1/messages``, ``/v1/messages/count_tokens``) on the gateway's side of
the wire: ``wire`` (the request bodies), ``decode`` (a body -> an ``LLMRequest``, every field
lowered, carried to an Anthropic upstream, reported or refused) and ``render`` (a run's events ->
the streamed events and the whole ``message``, Anthropic's error shape)."""

from __future__ import annotations
