"""``client.embed`` in process: the compact vectors, bad input, the option matrix of every
embedding route (lowered, warned or refused, never silent), slicing, errors and the router."""

from __future__ import annotations

import base64
import itertools
import json
import struct
from array import array
from decimal import Decimal
from typing import Any

import httpx
import msgspec
import numpy as np
import pytest

import llmroute
from llmroute import Embeddings, InvalidRequestError, NoRouteError
from llmroute.providers import azure, bedrock, cohere, compatible, google, openai, vertex, voyage
from llmroute.route.embed_executor import slices
from llmroute.schema.embedding import INPUT_TYPES

pytestmark = pytest.mark.anyio


def _vectors(rows: list[list[float]]) -> Embeddings:
    return Embeddings(array("f", [x for row in rows for x in row]), len(rows[0]))


# -- Embeddings --------------------------------------------------------------------------------


def test_embeddings_hold_one_buffer_and_hand_out_rows() -> None:
    vectors = _vectors([[1, 2, 3], [4, 5, 6]])
    assert (len(vectors), vectors.dimensions, vectors.nbytes) == (2, 3, 24)
    row = vectors[1]
    assert row == array("f", [4, 5, 6]) and vectors[-1] == row
    assert vectors[0:1].tolist() == [[1, 2, 3]] and vectors[::-1].tolist() == [[4, 5, 6], [1, 2, 3]]
    assert len(vectors[5:]) == 0 and [r.tolist() for r in vectors] == [[1, 2, 3], [4, 5, 6]]
    row[0] = 9.0  # a row is its own array: the call's vectors stay as the provider sent them
    assert vectors.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert vectors.tobytes() == struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    with pytest.raises(IndexError, match="vector index 2 out of range"):
        vectors[2]
    with pytest.raises(BufferError):  # the buffer keeps its shape: no vector half appended
        vectors.data.append(1.0)
    assert repr(vectors) == "Embeddings(2 x 3 float32)"


def test_to_numpy_wraps_the_buffer_without_a_copy() -> None:
    vectors = _vectors([[1, 2], [3, 4], [5, 6]])
    matrix = vectors.to_numpy()
    assert matrix.shape == (3, 2) and matrix.dtype == np.float32
    assert np.shares_memory(matrix, np.frombuffer(vectors.data, dtype=np.float32))
    matrix[2, 1] = 7.0
    assert vectors[2].tolist() == [5, 7]


def test_embeddings_refuse_a_buffer_that_is_not_whole_vectors() -> None:
    with pytest.raises(ValueError, match="not whole vectors"):
        Embeddings(array("f", [1, 2, 3]), 2)
    with pytest.raises(TypeError, match="array\\('f'\\)"):
        Embeddings(array("d", [1, 2]), 2)  # type: ignore[arg-type]
    assert len(Embeddings(array("f"), 0)) == 0


# -- bad input ---------------------------------------------------------------------------------


MODEL = openai.configure(api_key="sk-test").embedding("text-embedding-3-small")


@pytest.mark.parametrize(
    ("inputs", "param", "message"),
    [
        ([], "inputs", "nothing to embed"),
        (b"bytes", "inputs", "got bytes"),
        (42, "inputs", "got int"),
        (["ok", 3], "inputs[1]", "expected a string, got int"),
        (["ok", ""], "inputs[1]", "empty string"),
        (["ok", "ok", "bad \ud800 half"], "inputs[2]", "lone surrogate"),
    ],
)
async def test_bad_inputs_are_named_before_anything_is_sent(inputs: Any, param: str, message: str) -> None:
    async with llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(_never))) as client:
        with pytest.raises(InvalidRequestError, match=message) as caught:
            await client.embed(MODEL, inputs)
    assert caught.value.param == param


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"dimensions": 0}, "dimensions"),
        ({"dimensions": True}, "dimensions"),
        ({"dimensions": "256"}, "dimensions"),
        ({"input_type": "search_query"}, "input_type"),
        ({"max_concurrency": 0}, "max_concurrency"),
    ],
)
async def test_bad_options_are_named(options: dict[str, Any], param: str) -> None:
    async with llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(_never))) as client:
        with pytest.raises(InvalidRequestError) as caught:
            await client.embed(MODEL, ["a"], **options)
    assert caught.value.param == param


async def test_a_chat_model_is_not_an_embedding_model() -> None:
    chat = openai.configure(api_key="sk-test").chat("gpt-4o-mini")
    async with llmroute.Client() as client:
        with pytest.raises(NoRouteError, match=r"chat model: .*\.embedding\(MODEL_ID\)"):
            await client.embed(chat, ["a"])  # type: ignore[arg-type]


def test_facades_check_their_embedding_arguments() -> None:
    with pytest.raises(InvalidRequestError, match="dimensions: must be a positive int"):
        openai.configure(api_key="k").embedding("text-embedding-3-small", dimensions=-1)
    with pytest.raises(InvalidRequestError, match="model id is required"):
        voyage.configure(api_key="k").embedding("")
    with pytest.raises(InvalidRequestError, match="model id is required"):
        bedrock.configure(region="us-east-1", api_key="k").embedding(None)  # type: ignore[arg-type]
    with pytest.raises(NoRouteError, match=r"groq serves no embeddings API; families that do: .*mistral"):
        compatible.configure("groq", api_key="k").embedding("any")


def _never(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"nothing should be sent: {request.url}")


# -- the option matrix: every option on every embedding route is lowered, warned or refused ------

ROUTES = {
    "openai": lambda: openai.configure(api_key="k").embedding("text-embedding-3-small"),
    "azure": lambda: azure.configure("r", api_key="k").embedding("d"),
    "gemini": lambda: google.configure(api_key="k").embedding("gemini-embedding-001"),
    "vertex": lambda: vertex.configure(project="p", location="l", access_token="t").embedding(
        "text-embedding-005"
    ),
    "titan-v2": lambda: bedrock.configure(region="us-east-1", api_key="k").embedding(
        "amazon.titan-embed-text-v2:0"
    ),
    "titan-v1": lambda: bedrock.configure(region="us-east-1", api_key="k").embedding(
        "amazon.titan-embed-text-v1"
    ),
    "bedrock-cohere-v3": lambda: bedrock.configure(region="us-east-1", api_key="k").embedding(
        "cohere.embed-english-v3"
    ),
    "bedrock-cohere-v4": lambda: bedrock.configure(region="us-east-1", api_key="k").embedding(
        "cohere.embed-v4:0"
    ),
    "cohere": lambda: cohere.configure(api_key="k").embedding("embed-v4.0"),
    "voyage": lambda: voyage.configure(api_key="k").embedding("voyage-3.5"),
    "mistral": lambda: compatible.configure("mistral", api_key="k").embedding("mistral-embed"),
    "togetherai": lambda: compatible.configure("togetherai", api_key="k").embedding("m"),
    "fireworks": lambda: compatible.configure("fireworks", api_key="k").embedding("m"),
    "deepinfra": lambda: compatible.configure("deepinfra", api_key="k").embedding("m"),
    "ollama": lambda: compatible.configure("ollama").embedding("m"),
    "compatible": lambda: compatible.configure(base_url="http://127.0.0.1:1/v1").embedding("m"),
}
OPTIONS: list[tuple[str, Any]] = [("dimensions", 77), *[("input_type", kind) for kind in INPUT_TYPES]]
# where each option is lowered to: the wire word the body must carry
WORDS = {
    ("input_type", "query"): {"RETRIEVAL_QUERY", "search_query", "query"},
    ("input_type", "document"): {"RETRIEVAL_DOCUMENT", "search_document", "document"},
    ("input_type", "classification"): {"CLASSIFICATION", "classification"},
    ("input_type", "clustering"): {"CLUSTERING", "clustering"},
    ("input_type", "similarity"): {"SEMANTIC_SIMILARITY"},
}


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]  # pyright: ignore[reportUnknownVariableType]
    return [value]


@pytest.mark.parametrize(("option", "value"), OPTIONS, ids=[f"{o}={v}" for o, v in OPTIONS])
@pytest.mark.parametrize("route", sorted(ROUTES))
async def test_every_option_is_lowered_warned_or_refused(route: str, option: str, value: Any) -> None:
    model = ROUTES[route]()
    plain = msgspec.json.decode((await _prepare(model))[0].body)
    try:
        (prepared, *_) = await _prepare(model, **{option: value})
    except InvalidRequestError as exc:  # refused: named, with the route
        assert exc.param is not None and option in exc.param and model.route.name in str(exc)
        return
    body = msgspec.json.decode(prepared.body)
    if prepared.warnings:  # warned: named, and the body is the one without the option
        (warning,) = prepared.warnings
        assert option in warning.option and warning.route == model.route.name
        assert body == plain
        return
    leaves = _leaves(body)  # lowered: the body carries it
    words = WORDS.get((option, value), {value})
    assert body != plain or option == "input_type", f"{route}: {option}={value!r} went nowhere"
    assert words & set(leaves), f"{route}: {option}={value!r} is not in {body}"


async def _prepare(model: Any, **options: Any) -> list[llmroute.PreparedRequest]:
    async with llmroute.Client() as client:
        return await client.prepare_embed(model, ["a"], **options)


async def test_model_defaults_apply_and_the_call_wins() -> None:
    model = voyage.configure(api_key="k").embedding("voyage-3.5", dimensions=256, input_type="document")
    (default,) = await _prepare(model)
    (override,) = await _prepare(model, dimensions=1024, input_type="query")
    assert msgspec.json.decode(default.body)["output_dimension"] == 256
    assert msgspec.json.decode(default.body)["input_type"] == "document"
    assert msgspec.json.decode(override.body)["output_dimension"] == 1024
    assert msgspec.json.decode(override.body)["input_type"] == "query"


async def test_options_may_add_fields_but_not_replace_one() -> None:
    model = openai.configure(api_key="k").embedding("text-embedding-3-small", input=["smuggled"])
    with pytest.raises(InvalidRequestError, match="input clash"):
        await _prepare(model)


# -- slicing -------------------------------------------------------------------------------------


def test_slices_keep_order_and_both_caps() -> None:
    assert slices(["a"] * 5, 2, None) == [(0, 2), (2, 4), (4, 5)]
    # bytes, not characters: "éé" is 4 bytes in UTF-8, so "é" (2 more) passes a 5-byte cap
    assert slices(["éé", "é", "a", "aaaa"], 10, 5) == [(0, 1), (1, 3), (3, 4)]
    assert slices(["x" * 50, "y"], 10, 10) == [(0, 1), (1, 2)]  # too large alone: sent alone
    inputs = [str(i) for i in range(10_000)]
    cut = slices(inputs, 2048, 300_000)
    assert [b - a for a, b in cut] == [2048, 2048, 2048, 2048, 1808]
    assert cut[0][0] == 0 and all(a == b for (_, a), (b, _) in itertools.pairwise(cut))


async def test_providers_one_input_a_request_are_sliced_one_by_one() -> None:
    titan = bedrock.configure(region="us-east-1", api_key="k").embedding("amazon.titan-embed-text-v2:0")
    gemini_vertex = vertex.configure(project="p", location="l", access_token="t").embedding(
        "gemini-embedding-001"
    )
    cohere_model = cohere.configure(api_key="k").embedding("embed-v4.0")
    assert len(await _prepare_n(titan, 5)) == 5
    assert len(await _prepare_n(gemini_vertex, 3)) == 3
    assert [len(json.loads(p.body)["texts"]) for p in await _prepare_n(cohere_model, 200)] == [96, 96, 8]


async def _prepare_n(model: Any, n: int) -> list[llmroute.PreparedRequest]:
    async with llmroute.Client() as client:
        return await client.prepare_embed(model, [f"t{i}" for i in range(n)])


# -- answers that are wrong in shape -------------------------------------------------------------


def _openai_answer(rows: list[list[float]], indices: list[int] | None = None) -> httpx.Response:
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": base64.b64encode(struct.pack(f"<{len(r)}f", *r)).decode(),
        }
        for i, r in zip(indices or range(len(rows)), rows, strict=True)
    ]
    return httpx.Response(
        200, json={"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 3}}
    )


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda: _openai_answer([[1, 2]]), "1 vectors for 2 inputs"),
        (lambda: _openai_answer([[1, 2], [3]]), "vector 1 has 1 dimensions, vector 0 has 2"),
        (lambda: _openai_answer([[1, 2], [3, 4]], [0, 0]), "index 0 is out of range or repeated"),
        (lambda: _openai_answer([[1, 2], [3, 4]], [0, 5]), "index 5 is out of range"),
        (lambda: httpx.Response(200, json={"data": "nope"}), "openai-embeddings: an unexpected"),
        (lambda: httpx.Response(200, content=b"{not json"), "openai-embeddings: an unexpected"),
    ],
)
async def test_a_malformed_answer_is_a_typed_error(answer: Any, message: str) -> None:
    transport = httpx.MockTransport(lambda request: answer())
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        with pytest.raises(llmroute.InvalidProviderOutputError, match=message) as caught:
            await client.embed(MODEL, ["a", "b"])
    assert caught.value.embed_slice == (0, 2)


async def test_a_refused_request_is_its_typed_error_naming_the_slice() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "t2048" in body["input"]:
            return httpx.Response(
                400, json={"error": {"message": "'$.input' is invalid", "type": "invalid_request_error"}}
            )
        return _openai_answer([[1.0, float(t[1:])] for t in body["input"]])

    transport = httpx.MockTransport(refuse)
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        with pytest.raises(InvalidRequestError) as caught:
            await client.embed(MODEL, [f"t{i}" for i in range(5000)], max_concurrency=1)
    error = caught.value
    assert error.embed_slice == (2048, 4096)
    assert str(error).startswith("inputs[2048:4096] (request 2 of 3): ")
    assert error.http is not None and error.http.status == 400
    assert error.usage == llmroute.Usage(input_tokens=3)  # the first slice completed and was billed


# -- routers of embedding models -----------------------------------------------------------------


def _failing(status: int) -> httpx.MockTransport:
    return httpx.MockTransport(
        lambda r: httpx.Response(status, json={"error": {"message": "down", "type": "server_error"}})
    )


async def test_a_router_falls_back_and_every_vector_comes_from_one_target() -> None:
    seen: list[str] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        if request.url.host == "primary.test":
            return httpx.Response(503, json={"error": {"message": "overloaded", "type": "server_error"}})
        rows = [[2.0, float(i)] for i, _ in enumerate(json.loads(request.content)["input"])]
        return _openai_answer(rows)

    primary = openai.configure(api_key="k", base_url="https://primary.test/v1").embedding(
        "text-embedding-3-small"
    )
    backup = azure.configure(base_url="https://backup.test", api_key="k").embedding("emb-small")
    router = llmroute.Router([primary, backup], name="emb")
    transport = httpx.MockTransport(upstream)
    async with llmroute.Client(
        http=httpx.AsyncClient(transport=transport), retry=llmroute.RetryPolicy.none()
    ) as client:
        response = await client.embed(router, [f"t{i}" for i in range(3000)])
    assert response.target == "azure:emb-small" and response.model == "emb-small"
    assert [(a.target, a.error, a.status) for a in response.attempts] == [
        ("openai:text-embedding-3-small", "ProviderInternalError", 503)
    ]
    assert {row[0] for row in response.vectors.tolist()} == {2.0}  # no vector from the primary
    assert response.vectors[2999].tolist() == [2.0, float(3000 - 2048 - 1)]


async def test_a_router_moves_past_a_target_that_cannot_honour_the_call() -> None:
    titan_v1 = bedrock.configure(region="us-east-1", api_key="k").embedding("amazon.titan-embed-text-v1")
    titan_v2 = bedrock.configure(region="us-east-1", api_key="k").embedding("amazon.titan-embed-text-v2:0")
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, json={"embedding": [0.5] * 256, "inputTextTokenCount": 2})
    )
    router = llmroute.Router([titan_v1, titan_v2])
    async with llmroute.Client(http=httpx.AsyncClient(transport=transport)) as client:
        response = await client.embed(router, ["a"], dimensions=256)
    assert response.target == "bedrock:amazon.titan-embed-text-v2:0" and response.dimensions == 256
    assert (
        response.attempts[0].error == "InvalidRequestError" and "dimensions" in response.attempts[0].message
    )


async def test_prepare_embed_shows_one_models_requests() -> None:
    async with llmroute.Client() as client:
        with pytest.raises(NoRouteError, match=r"router\.embedding_models\(\)"):
            await client.prepare_embed(llmroute.Router([MODEL]), ["a"])  # type: ignore[arg-type]


async def test_routers_hold_one_kind_of_model() -> None:
    chat = openai.configure(api_key="k").chat("gpt-4o-mini")
    with pytest.raises(InvalidRequestError, match="mixes chat models and embedding models"):
        llmroute.Router([chat, MODEL])
    embedder = llmroute.Router([MODEL])
    chatter = llmroute.Router([chat])
    async with llmroute.Client(http=httpx.AsyncClient(transport=httpx.MockTransport(_never))) as client:
        with pytest.raises(NoRouteError, match="holds chat models"):
            await client.embed(chatter, ["a"])
        with pytest.raises(NoRouteError, match="holds embedding models"):
            await client.generate(llmroute.request(model=embedder, prompt="hi"))


async def test_a_router_with_every_target_failing_raises_the_last_error() -> None:
    router = llmroute.Router([MODEL, MODEL.with_(id="text-embedding-3-large")])
    async with llmroute.Client(
        http=httpx.AsyncClient(transport=_failing(500)), retry=llmroute.RetryPolicy.none()
    ) as client:
        with pytest.raises(llmroute.ProviderInternalError) as caught:
            await client.embed(router, ["a"])
    assert caught.value.route_target == "openai:text-embedding-3-large"
    assert [a.target for a in caught.value.route_attempts] == ["openai:text-embedding-3-small"]


# -- the sync client and the cost ----------------------------------------------------------------


def test_sync_client_embeds() -> None:
    transport = httpx.MockTransport(lambda r: _openai_answer([[1.0, 2.0], [3.0, 4.0]]))
    with llmroute.SyncClient(http=httpx.AsyncClient(transport=transport)) as client:
        response = client.embed(MODEL, ["a", "b"])
    assert response.vectors.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    cost = response.cost  # the catalog's price of text-embedding-3-small: $0.02 per million tokens
    assert cost is not None and cost.total == Decimal("0.00000006")


def test_an_unknown_price_is_none_never_a_guess() -> None:
    response = llmroute.EmbeddingResponse(vectors=_vectors([[1.0]]), model="no-such-model", provider="openai")
    assert response.cost is None
    priced = msgspec.structs.replace(response, usage=llmroute.Usage(input_tokens=10))
    assert priced.cost is None
