"""Embedding protocols, one module per wire family: ``openai`` (OpenAI, Azure and the compatible
servers, by quirks), ``voyage`` (OpenAI's shape with Voyage's fields), ``gemini``
(``batchEmbedContents``), ``vertex`` (``predict``), ``bedrock`` (Titan and Cohere through
``InvokeModel``) and ``cohere`` (``/v2/embed``). Each holds its body and answer Structs,
``build_body``, ``decode``, its ``EmbeddingProtocol`` value(s) and ``route``; the provider facades'
``.embedding(id)`` build the routes. See docs/embeddings.md."""
