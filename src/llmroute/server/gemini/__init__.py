"""Gemini ``generateContent`` / ``streamGenerateContent`` / ``countTokens`` on the gateway's side of
the wire: ``wire`` (the request bodies), ``decode`` (a body -> an ``LLMRequest``) and ``render`` (a
run's events -> the streamed chunks and the whole response, Gemini's error shape)."""

from __future__ import annotations
