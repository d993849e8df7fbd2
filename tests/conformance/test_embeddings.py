"""Every embedding protocol against its published spec: the request it sends (method, path, auth,
body field by field) and the answers it decodes (the corpus's OpenAI recording; the other APIs'
documented examples, ``cassettes/embeddings``), to the right vectors, order and usage under any
split of the body bytes."""

from __future__ import annotations

import importlib
import json
import pkgutil
import struct
from typing import Any

import httpx
import msgspec
import pytest

import llmroute
import llmroute.protocols.embeddings
from llmroute.providers import azure, bedrock, cohere, compatible, google, openai, vertex, voyage
from llmroute.providers.registry import EMBEDDINGS, EmbeddingEntry
from llmroute.route.embedding import EmbeddingModel, EmbeddingProtocol
from llmroute.testing import Cassette, Chunking, ReplayTransport

from ..helpers import CASSETTES

ORIGIN = "https://upstream.test"


def _answer(entry: EmbeddingEntry) -> Cassette:
    return Cassette.load(CASSETTES / entry.answer)


def _floats(values: list[float]) -> list[float]:
    """``values`` as float32 round-trips them (what the vectors hold)."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def _expected_vectors(name: str, body: bytes) -> list[list[float]]:
    """The answer's vectors in input order, read from its JSON by hand (not by the decoder)."""
    data: Any = json.loads(body)
    if name in ("openai-embeddings", "voyage-embeddings"):
        return [d["embedding"] for d in sorted(data["data"], key=lambda d: d["index"])]
    if name == "gemini-embeddings":
        return [e["values"] for e in data["embeddings"]]
    if name == "vertex-embeddings":
        return [p["embeddings"]["values"] for p in data["predictions"]]
    if name == "bedrock-titan-embeddings":
        return [data["embedding"]]
    if name == "bedrock-cohere-embeddings":
        return data["embeddings"]
    assert name == "cohere-embeddings"
    return data["embeddings"]["float"]


# the usage each answer reports, read from the provider's documented field
USAGE = {
    "openai-embeddings": 12,  # usage.prompt_tokens
    "gemini-embeddings": None,  # batchEmbedContents reports no tokens
    "vertex-embeddings": 16,  # sum of predictions[].embeddings.statistics.token_count
    "bedrock-titan-embeddings": 7,  # inputTextTokenCount
    "bedrock-cohere-embeddings": 16,  # the X-Amzn-Bedrock-Input-Token-Count header
    "cohere-embeddings": 24,  # meta.billed_units.input_tokens
    "voyage-embeddings": 18,  # usage.total_tokens
}


def test_every_embedding_module_is_registered() -> None:
    package = llmroute.protocols.embeddings
    names = {
        value.name
        for info in pkgutil.iter_modules(package.__path__)
        for value in vars(importlib.import_module(f"{package.__name__}.{info.name}")).values()
        if isinstance(value, EmbeddingProtocol)
    }
    registered = {entry.name for entry in EMBEDDINGS}
    assert names == registered, "embedding protocols missing from llmroute/providers/registry.py EMBEDDINGS"
    assert set(USAGE) == registered


@pytest.mark.parametrize("entry", EMBEDDINGS, ids=lambda e: e.name)
@pytest.mark.parametrize("chunking", [Chunking.whole(), Chunking.bytewise(), Chunking.random(7, 13)], ids=str)
@pytest.mark.anyio
async def test_each_answer_decodes_to_its_vectors_in_order(entry: EmbeddingEntry, chunking: Chunking) -> None:
    cassette = _answer(entry)
    body = cassette.interactions[0].response.body
    transport = ReplayTransport(cassette, chunking, check_url=False)
    model = entry.sample(ORIGIN)
    inputs = [f"text {i}" for i in range(entry.inputs)]
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.embed(model, inputs)
    expected = [_floats(v) for v in _expected_vectors(entry.name, body)]
    assert len(response.vectors) == entry.inputs and response.dimensions == entry.dimensions
    assert response.vectors.tolist() == expected
    assert [row.tolist() for row in response.vectors] == expected
    tokens = USAGE[entry.name]
    assert response.usage == (llmroute.Usage(input_tokens=tokens) if tokens is not None else None)
    assert response.requests == 1 and response.model == model.id and response.provider == model.provider


@pytest.mark.anyio
async def test_openai_base64_answers_decode_to_the_recorded_floats() -> None:
    # the same vectors as the float recording, base64 float32 and listed in reverse index order
    floats = Cassette.load(CASSETTES / "vercel-ai/openai/embedding/openai-embedding.json.yaml")
    b64 = Cassette.load(CASSETTES / "embeddings/openai-base64.yaml")
    model = openai.configure(api_key="sk-test").embedding("text-embedding-3-small")
    out = []
    for cassette in (floats, b64):
        async with llmroute.Client(http=httpx.AsyncClient(transport=ReplayTransport(cassette))) as client:
            out.append(await client.embed(model, ["sunny day at the beach", "rainy day in the city"]))
    assert out[0].vectors == out[1].vectors
    assert out[1].vectors[0].tolist() == _floats(
        [0.0057293195, -0.012727811, 0.020042092, -0.013437585, 0.022833068]
    )


# -- requests against each API's reference --------------------------------------------------------


def _inputs(n: int) -> list[str]:
    return [f"input {i}" for i in range(n)]


async def _prepared(model: EmbeddingModel, n: int = 2, **options: Any) -> list[llmroute.PreparedRequest]:
    async with llmroute.Client() as client:
        return await client.prepare_embed(model, _inputs(n), **options)


# (model, options, URL, the auth header and its value, the exact body)
REQUESTS: list[tuple[str, Any, dict[str, Any], str, tuple[str, str], dict[str, Any]]] = [
    (
        "openai",  # platform.openai.com/docs/api-reference/embeddings/create
        lambda: openai.configure(api_key="sk-test").embedding("text-embedding-3-small"),
        {"dimensions": 256},
        "https://api.openai.com/v1/embeddings",
        ("authorization", "Bearer sk-test"),
        {
            "model": "text-embedding-3-small",
            "input": _inputs(2),
            "encoding_format": "base64",
            "dimensions": 256,
        },
    ),
    (
        "azure",  # learn.microsoft.com/azure/ai-services/openai/reference#embeddings
        lambda: azure.configure("res", api_key="az-key", api_version="2024-10-21").embedding("emb-prod"),
        {},
        "https://res.openai.azure.com/openai/deployments/emb-prod/embeddings?api-version=2024-10-21",
        ("api-key", "az-key"),
        {"model": "emb-prod", "input": _inputs(2), "encoding_format": "base64"},
    ),
    (
        "gemini",  # ai.google.dev/api/embeddings#method:-models.batchembedcontents
        lambda: google.configure(api_key="g-key").embedding("models/gemini-embedding-001"),
        {"dimensions": 768, "input_type": "query"},
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents",
        ("x-goog-api-key", "g-key"),
        {
            "requests": [
                {
                    "model": "models/gemini-embedding-001",
                    "content": {"parts": [{"text": text}]},
                    "taskType": "RETRIEVAL_QUERY",
                    "outputDimensionality": 768,
                }
                for text in _inputs(2)
            ]
        },
    ),
    (
        "vertex",  # cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api
        lambda: vertex.configure(project="proj", location="us-central1", access_token="ya29.t").embedding(
            "text-embedding-005", autoTruncate=False
        ),
        {"dimensions": 256, "input_type": "document"},
        "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/publishers/google"
        "/models/text-embedding-005:predict",
        ("authorization", "Bearer ya29.t"),
        {
            "instances": [{"content": text, "task_type": "RETRIEVAL_DOCUMENT"} for text in _inputs(2)],
            "parameters": {"outputDimensionality": 256, "autoTruncate": False},
        },
    ),
    (
        "bedrock-titan",  # docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html
        lambda: bedrock.configure(region="us-west-2", api_key="br-key").embedding(
            "amazon.titan-embed-text-v2:0", normalize=True
        ),
        {"dimensions": 512},
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke",
        ("authorization", "Bearer br-key"),
        {"inputText": "input 0", "dimensions": 512, "normalize": True},
    ),
    (
        "bedrock-cohere",  # docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html
        lambda: bedrock.configure(region="us-east-1", api_key="br-key").embedding(
            "cohere.embed-multilingual-v3", truncate="END"
        ),
        {"input_type": "clustering"},
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/cohere.embed-multilingual-v3/invoke",
        ("authorization", "Bearer br-key"),
        {"texts": _inputs(2), "input_type": "clustering", "truncate": "END"},
    ),
    (
        "cohere",  # docs.cohere.com/reference/embed
        lambda: cohere.configure(api_key="co-key").embedding("embed-v4.0"),
        {"dimensions": 1024},
        "https://api.cohere.com/v2/embed",
        ("authorization", "Bearer co-key"),
        {
            "model": "embed-v4.0",
            "texts": _inputs(2),
            "input_type": "search_document",  # required by v3+: the corpus side when none is said
            "embedding_types": ["float"],
            "output_dimension": 1024,
        },
    ),
    (
        "voyage",  # docs.voyageai.com/reference/embeddings-api
        lambda: voyage.configure(api_key="pa-key").embedding("voyage-3.5", truncation=False),
        {"dimensions": 512, "input_type": "query"},
        "https://api.voyageai.com/v1/embeddings",
        ("authorization", "Bearer pa-key"),
        {
            "model": "voyage-3.5",
            "input": _inputs(2),
            "encoding_format": "base64",
            "output_dimension": 512,
            "input_type": "query",
            "truncation": False,
        },
    ),
    (
        "mistral",  # docs.mistral.ai/api/endpoint/embeddings
        lambda: compatible.configure("mistral", api_key="m-key").embedding("codestral-embed"),
        {"dimensions": 256},
        "https://api.mistral.ai/v1/embeddings",
        ("authorization", "Bearer m-key"),
        {
            "model": "codestral-embed",
            "input": _inputs(2),
            "encoding_format": "base64",
            "output_dimension": 256,
        },
    ),
    (
        "togetherai",  # docs.together.ai/reference/embeddings-2: model and input
        lambda: compatible.configure("togetherai", api_key="t-key").embedding("BAAI/bge-large-en-v1.5"),
        {},
        "https://api.together.xyz/v1/embeddings",
        ("authorization", "Bearer t-key"),
        {"model": "BAAI/bge-large-en-v1.5", "input": _inputs(2)},
    ),
    (
        "fireworks",  # docs.fireworks.ai/api-reference/creates-an-embedding-vector-representing-the-input-text
        lambda: compatible.configure("fireworks", api_key="fw-key").embedding(
            "nomic-ai/nomic-embed-text-v1.5"
        ),
        {"dimensions": 128},
        "https://api.fireworks.ai/inference/v1/embeddings",
        ("authorization", "Bearer fw-key"),
        {"model": "nomic-ai/nomic-embed-text-v1.5", "input": _inputs(2), "dimensions": 128},
    ),
    (
        "ollama",  # github.com/ollama/ollama/blob/main/docs/openai.md#v1embeddings
        lambda: compatible.configure("ollama").embedding("nomic-embed-text"),
        {},
        "http://localhost:11434/v1/embeddings",
        ("authorization", None),
        {"model": "nomic-embed-text", "input": _inputs(2)},
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "options", "url", "auth", "body"), REQUESTS, ids=[r[0] for r in REQUESTS]
)
@pytest.mark.anyio
async def test_each_request_is_the_apis_own(
    name: str,
    make: Any,
    options: dict[str, Any],
    url: str,
    auth: tuple[str, str | None],
    body: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    (prepared, *_) = await _prepared(make(), **options)
    assert (prepared.method, prepared.url) == ("POST", url)
    assert prepared.headers.get(auth[0]) == auth[1]
    assert prepared.headers["content-type"] == "application/json"
    assert msgspec.json.decode(prepared.body) == body
    assert prepared.warnings == ()


@pytest.mark.anyio
async def test_bedrock_sigv4_signs_the_exact_embedding_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    facade = bedrock.configure(region="us-east-1", access_key_id="AKIDEXAMPLE", secret_access_key="secret")
    (prepared,) = await _prepared(facade.embedding("cohere.embed-english-v3"))
    assert prepared.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "x-amz-date" in prepared.headers
    assert msgspec.json.decode(prepared.body)["texts"] == _inputs(2)


@pytest.mark.anyio
async def test_vertex_oauth_tokens_are_asked_per_request() -> None:
    tokens = iter(["tok-1", "tok-2"])

    async def token() -> str:
        return next(tokens)

    model = vertex.configure(project="p", location="global", access_token=token).embedding(
        "gemini-embedding-001"
    )
    prepared = await _prepared(model)  # gemini-embedding-001: one instance a request
    assert [p.headers["authorization"] for p in prepared] == ["Bearer tok-1", "Bearer tok-2"]
    assert prepared[0].url.startswith("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")
    assert [msgspec.json.decode(p.body)["instances"] for p in prepared] == [
        [{"content": "input 0"}],
        [{"content": "input 1"}],
    ]


def test_registry_samples_reach_their_origin() -> None:
    for entry in EMBEDDINGS:
        model = entry.sample("http://127.0.0.1:9")
        assert model.route.protocol.name == entry.name
        assert model.route.endpoint.url(model.id, stream=False).startswith("http://127.0.0.1:9/"), entry.name
