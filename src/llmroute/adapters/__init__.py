"""Orchestration frameworks on llmroute: one adapter module per framework, each imported only when
used (``import llmroute`` never loads a framework).

- ``llmroute.adapters.pydantic_ai``: ``LLMRouteModel``, a ``pydantic_ai.models.Model``
  (extra ``llmroute[pydantic-ai]``);
- ``llmroute.adapters.openai_agents``: ``LLMRouteAgentsModel`` and ``LLMRouteModelProvider``, an
  ``agents.Model`` and ``agents.ModelProvider`` (extra ``llmroute[agents]``);
- ``llmroute.adapters.langchain``: ``ChatLLMRoute``, a LangChain ``BaseChatModel``
  (extra ``llmroute[langchain]``).

Each wraps any llmroute ``Model`` or ``Router`` and maps the framework's messages, tools and
settings onto one ``LLMRequest``, and llmroute's events back into the framework's, one for one.
"""
