"""Write ``cassettes/embeddings/``: the embedding answers the tests decode, from the providers'
documented examples (the corpus holds one embedding recording, OpenAI's, in ``cassettes/vercel-ai``).

Each file's ``llmroute_metadata`` names the page whose example it follows and what was changed: the
documentation elides the vectors, so each holds short vectors written for the test, distinct per
input so the order is checked. Run from the repository root: ``python scripts/embedding_examples.py``.
"""

import base64
import json
import struct
from pathlib import Path

from llmroute.testing import Cassette
from llmroute.testing.cassette import Interaction, RecordedRequest, RecordedResponse

OUT = str(Path(__file__).resolve().parents[1] / "cassettes" / "embeddings") + "/"


def save(name, url, req, resp, source, note, model, headers=None, count=None):
    body = json.dumps(resp, indent=2).encode() + b"\n"
    h = {"content-type": ["application/json"], **(headers or {})}
    c = Cassette(
        [
            Interaction(
                RecordedRequest(
                    "POST",
                    url,
                    {"content-type": ["application/json"]},
                    json.dumps(req, separators=(",", ":")).encode(),
                ),
                RecordedResponse(200, h, body),
            )
        ],
        {
            "source": source,
            "kind": "documented example",
            "model": model,
            "inputs": count,
            "changes": note,
            "licence": "the provider's published API reference (an example response, quoted for interoperability)",
        },
    )
    c.save(OUT + name + ".yaml")


V = [
    [0.0123, -0.0456, 0.0789, -0.0101, 0.0202, -0.0303, 0.0404, -0.0505],
    [-0.0612, 0.0334, -0.0159, 0.0721, -0.0088, 0.0467, -0.0293, 0.0115],
    [0.0051, 0.0092, -0.0673, 0.0248, 0.0310, -0.0127, 0.0586, -0.0441],
]
T = ["What is the meaning of life?", "How much wood would a woodchuck chuck?", "How does the brain work?"]
ELIDED = "the documentation elides the vectors ([0.0123, ...]); these 8-float vectors are written for the test, distinct per input so order is checked"

save(
    "gemini-batch-embed-contents",
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents",
    {"requests": [{"model": "models/gemini-embedding-001", "content": {"parts": [{"text": t}]}} for t in T]},
    {"embeddings": [{"values": v} for v in V]},
    "https://ai.google.dev/api/embeddings#method:-models.batchembedcontents (BatchEmbedContentsResponse: embeddings[].values)",
    ELIDED,
    "gemini-embedding-001",
    count=3,
)
save(
    "vertex-predict",
    "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/publishers/google/models/text-embedding-005:predict",
    {"instances": [{"content": t, "task_type": "RETRIEVAL_DOCUMENT"} for t in T[:2]]},
    {
        "predictions": [
            {"embeddings": {"statistics": {"truncated": False, "token_count": n}, "values": v}}
            for v, n in zip(V[:2], (7, 9), strict=True)
        ],
        "metadata": {"billableCharacterCount": 60},
    },
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api (response body: predictions[].embeddings.{statistics, values}, metadata.billableCharacterCount)",
    ELIDED,
    "text-embedding-005",
    count=2,
)
save(
    "bedrock-titan-v2",
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke",
    {"inputText": T[0], "dimensions": 8},
    {"embedding": V[0], "inputTextTokenCount": 7, "embeddingsByType": {"float": V[0]}},
    "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html (response: embedding, inputTextTokenCount, embeddingsByType)",
    ELIDED,
    "amazon.titan-embed-text-v2:0",
    headers={"x-amzn-bedrock-input-token-count": ["7"]},
    count=1,
)
save(
    "bedrock-cohere-v3",
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/cohere.embed-english-v3/invoke",
    {"texts": T[:2], "input_type": "search_document"},
    {
        "embeddings": V[:2],
        "id": "6c1f1b05-1f2b-4a59-9a3b-6d0b0e0e5d61",
        "response_type": "embeddings_floats",
        "texts": [t.lower() for t in T[:2]],
    },
    "https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html (response: embeddings, id, response_type, texts; token counts in the X-Amzn-Bedrock-Input-Token-Count header)",
    ELIDED,
    "cohere.embed-english-v3",
    headers={"x-amzn-bedrock-input-token-count": ["16"]},
    count=2,
)
save(
    "cohere-v2-embed",
    "https://api.cohere.com/v2/embed",
    {"model": "embed-v4.0", "texts": T, "input_type": "search_document", "embedding_types": ["float"]},
    {
        "id": "da6e531f-54c6-4a73-bf92-f60566d8d753",
        "embeddings": {"float": V},
        "texts": T,
        "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 24}},
        "response_type": "embeddings_by_type",
    },
    "https://docs.cohere.com/reference/embed (v2 response: id, embeddings.float, texts, meta.billed_units.input_tokens, response_type)",
    ELIDED,
    "embed-v4.0",
    count=3,
)
save(
    "voyage-embeddings",
    "https://api.voyageai.com/v1/embeddings",
    {"input": T[:2], "model": "voyage-3.5", "input_type": "document"},
    {
        "object": "list",
        "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(V[:2])],
        "model": "voyage-3.5",
        "usage": {"total_tokens": 18},
    },
    "https://docs.voyageai.com/reference/embeddings-api (response: object, data[].{object, embedding, index}, model, usage.total_tokens)",
    ELIDED,
    "voyage-3.5",
    count=2,
)
save(
    "mistral-embeddings",
    "https://api.mistral.ai/v1/embeddings",
    {"model": "mistral-embed", "input": T[:2]},
    {
        "id": "cmpl-e5cc70bb28c444948073e77776eb30ef",
        "object": "list",
        "data": [{"object": "embedding", "embedding": v, "index": i} for i, v in enumerate(V[:2])],
        "model": "mistral-embed",
        "usage": {"prompt_tokens": 15, "total_tokens": 15, "completion_tokens": 0},
    },
    "https://docs.mistral.ai/api/endpoint/embeddings (EmbeddingResponse: id, object, data[].{object, embedding, index}, model, usage)",
    ELIDED,
    "mistral-embed",
    count=2,
)
# OpenAI's base64 answer: the recorded vectors (cassettes/vercel-ai/openai/embedding) in the form the API sends
# for encoding_format=base64, out of index order as the API may send them
rec = [
    [0.0057293195, -0.012727811, 0.020042092, -0.013437585, 0.022833068],
    [-0.037104916, -0.05178114, -0.008340587, 0.001164541, -0.0035253682],
]
save(
    "openai-base64",
    "https://api.openai.com/v1/embeddings",
    {
        "model": "text-embedding-3-small",
        "input": ["sunny day at the beach", "rainy day in the city"],
        "encoding_format": "base64",
    },
    {
        "object": "list",
        "data": [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(struct.pack("<5f", *rec[i])).decode(),
            }
            for i in (1, 0)
        ],
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 12, "total_tokens": 12},
    },
    "https://platform.openai.com/docs/api-reference/embeddings/create (encoding_format: base64) with the vectors of cassettes/vercel-ai/openai/embedding/openai-embedding.json.yaml",
    "the recorded float vectors packed as little-endian float32 and base64-encoded, as the API answers encoding_format=base64; data listed in reverse index order",
    "text-embedding-3-small",
    count=2,
)
