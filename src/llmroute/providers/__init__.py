"""Provider facades. Import the one you need: ``from llmroute.providers import openai``.

Each facade configures credentials and endpoints once and hands out ``Model`` values: a module's
``configure`` is its class (``openai.configure is openai.OpenAI``), and ``.model(id)`` is the
provider's recommended API beside the constructors named for its protocols. Nothing here is
imported by ``import llmroute``.
"""
