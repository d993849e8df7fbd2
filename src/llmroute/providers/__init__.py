"""Provider facades. Import the one you need: ``from llmroute.providers import openai``.

Each facade configures credentials and endpoints once and hands out ``Model`` values. Nothing here
is imported by ``import llmroute``.
"""
