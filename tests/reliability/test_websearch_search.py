"""``GroundedSearch`` against a real HTTP server on 127.0.0.1: the exact requests each provider
gets (two-stage: only the search tool), retries (500 x3 then success, with 1/2/4 s backoff),
an HTML 502, malformed JSON, Code Assist with a local ``loadCodeAssist``, the ChatGPT Codex
backend, fallback order, every error type, and no secret in any message."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

import llmroute
from llmroute.cli import main
from llmroute.websearch.config import ConfigError
from llmroute.websearch.contract import check_citations
from llmroute.websearch.limits import SearchLimits
from llmroute.websearch.search import GroundedSearch

from .server import FaultServer, Reply, Stall

pytestmark = pytest.mark.anyio

KEY = "sk-test-secret-9f8e7d6c5b4a"
EIFFEL = "Der Eiffelturm ist 330 m hoch. Er wurde 1889 eröffnet 🗼. 東京タワーは333mです。"
GEMINI_BODY = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": EIFFEL}]},
            "finishReason": "STOP",
            "groundingMetadata": {
                "webSearchQueries": ["Eiffelturm Höhe", "東京タワー 高さ"],
                "groundingChunks": [
                    {"web": {"uri": "https://r.test/a", "title": "toureiffel.paris"}},
                    {"web": {"uri": "https://r.test/b", "title": "wikipedia.org"}},
                    {"web": {"uri": "https://r.test/c", "title": "tokyotower.co.jp"}},
                ],
                "groundingSupports": [
                    {"segment": {"endIndex": 30}, "groundingChunkIndices": [0]},
                    {"segment": {"startIndex": 31, "endIndex": 60}, "groundingChunkIndices": [1, 0]},
                    {"segment": {"startIndex": 61, "endIndex": 92}, "groundingChunkIndices": [2]},
                ],
            },
        }
    ],
    "usageMetadata": {"promptTokenCount": 21, "candidatesTokenCount": 38, "totalTokenCount": 59},
    "modelVersion": "gemini-2.5-flash",
}
GEMINI_TEXT = (
    "Der Eiffelturm ist 330 m hoch.[1] Er wurde 1889 eröffnet 🗼.[1][2] 東京タワーは333mです。[3]\n\n"
    "Sources:\n[1] toureiffel.paris (https://r.test/a)\n[2] wikipedia.org (https://r.test/b)\n"
    "[3] tokyotower.co.jp (https://r.test/c)"
)
TOKYO = "https://www.tokyotower.co.jp/"
ANTHROPIC_BODY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "東京タワー 高さ"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "東京タワー",
                    "url": TOKYO,
                    "encrypted_content": "E",
                    "page_age": None,
                }
            ],
        },
        {
            "type": "text",
            "text": "東京タワーの高さは333メートルです。",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": TOKYO,
                    "title": None,
                    "cited_text": "333m",
                    "encrypted_index": "Eo",
                }
            ],
        },
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 5, "server_tool_use": {"web_search_requests": 1}},
}


def json_reply(body: Any, status: int = 200) -> Reply:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Reply(status, {"content-type": "application/json"}, [data], chunked=False)


def html_reply(status: int) -> Reply:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
    return Reply(status, {"content-type": "text/html"}, [page], chunked=False)


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make(
    server: FaultServer, providers: list[str], options: dict[str, dict[str, Any]] | None = None, **kwargs: Any
) -> tuple[GroundedSearch, Sleeps]:
    sleeps = Sleeps()
    config = {
        "provider": {
            p: {"options": {"baseURL": server.base_url, **(options or {}).get(p, {})}} for p in providers
        }
    }
    kwargs.setdefault("env", {})
    search = GroundedSearch(providers, config=config, client=llmroute.Client(sleep=sleeps), **kwargs)
    return search, sleeps


def sent(server: FaultServer, n: int) -> dict[str, Any]:
    return json.loads(server.received[n].body)


async def test_gemini_500_three_times_then_success_with_exponential_backoff(server: FaultServer) -> None:
    server.add(
        *[json_reply({"error": {"code": 500, "message": "internal"}}, 500)] * 3, json_reply(GEMINI_BODY)
    )
    search, sleeps = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "  Eiffelturm  "})
    assert result.error is None and result.provider == "google"
    assert result.llm_content == 'Web search results for "Eiffelturm":\n\n' + GEMINI_TEXT
    assert len(sleeps.calls) == 3  # 1 s, 2 s, 4 s, each +/- 25 % jitter
    assert all(0.75 * base <= s <= 1.25 * base for s, base in zip(sleeps.calls, (1, 2, 4), strict=True))
    assert len(server.received) == 4
    request = server.received[3]
    assert request.path == "/v1/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    body = sent(server, 3)
    assert body["tools"] == [{"googleSearch": {}}]  # two-stage: the search tool only
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Eiffelturm"}]}]
    assert "web search assistant" in body["systemInstruction"]["parts"][0]["text"]
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": False, "thinkingBudget": 1024}


async def test_html_502_after_retries_is_a_search_error_with_status_and_no_secret(
    server: FaultServer,
) -> None:
    server.add(*[html_reply(502)] * 4)
    search, sleeps = make(server, ["google"], options={"google": {"apiKey": KEY}})
    async with search:
        result = await search.run({"query": "q"})
        assert result.error is not None and result.error.type == "GEMINI_WEB_SEARCH_FAILED"
        assert result.error.status == 502 and "502 Bad Gateway" in result.error.message
        assert "<html" not in result.error.message  # the page is named by its title, not pasted
        assert len(server.received) == 4 and len(sleeps.calls) == 3
        server.add(*[html_reply(502)] * 4)
        report = await search.report("q")
    assert report.startswith("## Search Error\n") and "Status: 502" in report
    assert KEY not in result.to_json() and KEY not in report


async def test_malformed_json_is_not_retried_and_is_reported(server: FaultServer) -> None:
    server.add(json_reply(b'{"candidates": [{"content": '))
    search, sleeps = make(server, ["anthropic"], env={"ANTHROPIC_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "ANTHROPIC_WEB_SEARCH_FAILED"
    assert len(server.received) == 1 and sleeps.calls == []
    assert json.loads(result.to_json())["error"]["type"] == "ANTHROPIC_WEB_SEARCH_FAILED"


async def test_fallback_skips_missing_auth_moves_past_a_failure_and_names_who_answered(
    server: FaultServer,
) -> None:
    server.add(
        json_reply({"error": {"message": f"Invalid key {KEY}", "code": 401}}, 401), json_reply(ANTHROPIC_BODY)
    )
    progress: list[str] = []
    search, _ = make(
        server,
        ["google", "openrouter", "anthropic"],
        env={"OPENROUTER_API_KEY": KEY, "ANTHROPIC_API_KEY": "sk-ant-other"},
        on_progress=progress.append,
    )
    async with search:
        result = await search.run({"query": "東京タワー"})
    assert result.provider == "anthropic" and result.error is None
    assert result.llm_content == (
        'LLM-grounded search results for "東京タワー":\n\n東京タワーの高さは333メートルです。[1]\n\n'
        f"Sources:\n[1] 東京タワー ({TOKYO})"
    )
    assert [r.path for r in server.received] == ["/v1/responses", "/v1/messages"]
    openrouter = sent(server, 0)
    assert openrouter["plugins"] == [{"id": "web", "max_results": 5}]
    assert "tools" not in openrouter and openrouter["max_output_tokens"] == 8192 and openrouter["input"]
    anthropic = sent(server, 1)
    assert anthropic["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]
    assert progress[0] == "google: no credentials, skipped" and progress[-1] == "anthropic: answered"
    assert any(line.startswith("openrouter: failed") for line in progress)
    assert all(KEY not in line for line in progress)


async def test_openrouter_responses_annotations_without_spans_list_sources_without_markers(
    server: FaultServer,
) -> None:
    text = "Le Mont-Blanc culmine à 4 805 m ([fr.wikipedia.org](https://fr.wikipedia.org/wiki/Mont_Blanc))."
    cited = [
        {
            "type": "url_citation",
            "url": "https://fr.wikipedia.org/wiki/Mont_Blanc",
            "title": "Mont Blanc — Wikipédia",
            "start_index": 32,
            "end_index": 94,
        },
        {
            "type": "url_citation",
            "url": "https://exa.test/hit",
            "title": None,
            "start_index": 0,
            "end_index": 0,
        },
        {
            "type": "url_citation",
            "url": "https://fr.wikipedia.org/wiki/Mont_Blanc",
            "title": "dup",
            "start_index": 32,
            "end_index": 94,
        },
    ]
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "openai/gpt-5-mini",
        "output": [
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": cited}],
            }
        ],
        "usage": {"input_tokens": 9, "output_tokens": 20, "total_tokens": 29},
    }
    server.add(json_reply(body))
    search, _ = make(server, ["openrouter"], env={"OPENROUTER_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "Mont Blanc"})
    assert result.llm_content == (
        'LLM-grounded search results for "Mont Blanc":\n\n'
        "Le Mont-Blanc culmine à 4 805 m ([fr.wikipedia.org](https://fr.wikipedia.org/wiki/Mont_Blanc))[1].\n\n"
        "Sources:\n[1] Mont Blanc — Wikipédia (https://fr.wikipedia.org/wiki/Mont_Blanc)\n[2] exa.test (https://exa.test/hit)"
    )
    assert [s.title for s in result.sources] == ["Mont Blanc — Wikipédia", "exa.test"]


async def test_the_last_failure_is_reported_when_every_provider_fails(server: FaultServer) -> None:
    server.add(
        json_reply({"error": {"message": "slow down"}}, 429), json_reply({"error": {"message": "nope"}}, 403)
    )
    search, _ = make(server, ["openai", "openrouter"], env={"OPENAI_API_KEY": KEY, "OPENROUTER_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None
    assert (result.error.type, result.error.status, result.error.provider) == (
        "OPENROUTER_WEB_SEARCH_FAILED",
        403,
        "openrouter",
    )
    assert "nope" in result.error.message


@pytest.mark.parametrize(("status", "title"), [(401, "## Authentication Error"), (429, "## Rate Limited")])
async def test_report_titles_auth_and_rate_limit_failures(
    server: FaultServer, status: int, title: str
) -> None:
    server.add(json_reply({"error": {"message": "denied"}}, status))
    search, _ = make(server, ["openai"], env={"OPENAI_API_KEY": KEY})
    async with search:
        report = await search.report("q")
    assert report.startswith(title + "\n")
    assert server.received[0].path == "/v1/responses"
    body = sent(server, 0)
    assert body["tools"] == [{"type": "web_search"}] and body["include"] == ["web_search_call.action.sources"]


async def test_invalid_arguments_send_nothing(server: FaultServer) -> None:
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        extra = await search.run({"query": "x", "foo": 1, "bar": 2})
        blank = await search.run({"query": "   "})
        missing = await search.run({})
        not_object = await search.run("x")
    assert json.loads(extra.to_json()) == {
        "llmContent": "Error: websearch_grounded only accepts a single 'query' field.\n\n"
        "Details: Unknown argument(s): foo, bar, only 'query' supported.",
        "returnDisplay": "websearch_grounded only accepts a single 'query' field.",  # the details: above
        "error": {
            "message": "websearch_grounded only accepts a single 'query' field.\n\n"
            "Details: Unknown argument(s): foo, bar, only 'query' supported.",
            "type": "INVALID_TOOL_ARGUMENTS",
        },
    }
    assert blank.error is not None and blank.error.type == "INVALID_QUERY"
    assert missing.error is not None and missing.error.type == "INVALID_QUERY"
    assert not_object.error is not None and not_object.error.type == "INVALID_TOOL_ARGUMENTS"
    assert not_object.return_display == "websearch_grounded only accepts a single 'query' field."
    assert "Details: arguments must be an object." in not_object.llm_content
    assert server.received == []


@pytest.mark.parametrize(
    ("provider", "kind", "hint"),
    [
        ("google", "MISSING_GEMINI_API_KEY", "GEMINI_API_KEY"),
        ("openai", "MISSING_OPENAI_AUTH", "OPENAI_API_KEY"),
        ("openrouter", "MISSING_OPENROUTER_API_KEY", "OPENROUTER_API_KEY"),
        ("anthropic", "MISSING_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    ],
)
async def test_missing_credentials_name_what_to_set(
    server: FaultServer, provider: str, kind: str, hint: str
) -> None:
    search, _ = make(server, [provider])
    async with search:
        result = await search.run({"query": "q"})
        report = await search.report("q")
    assert result.error is not None and result.error.type == kind and hint in result.error.message
    assert report.startswith("## No Providers Available\n")
    assert server.received == []


async def test_no_provider_with_credentials_lists_each(server: FaultServer) -> None:
    search, _ = make(server, ["google", "anthropic"])
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "NO_PROVIDERS_AVAILABLE"
    assert "GEMINI_API_KEY" in result.error.message and "ANTHROPIC_API_KEY" in result.error.message


# -- OAuth ---------------------------------------------------------------------------------------------


def root(server: FaultServer) -> str:
    return server.base_url.removesuffix("/v1")


async def test_code_assist_discovers_the_project_once_and_wraps_the_request(server: FaultServer) -> None:
    load = {"currentTier": {"id": "free-tier"}, "cloudaicompanionProject": "managed-7"}
    server.add(
        json_reply(load),
        json_reply({"response": GEMINI_BODY, "traceId": "t1"}),
        json_reply({"response": GEMINI_BODY}),
    )
    auth = {
        "google": {"type": "oauth", "access": "ya29.token-abc", "refresh": "1//r", "expires": 4102444800000}
    }
    search, _ = make(server, ["google"], options={"google": {"codeAssistEndpoint": root(server)}}, auth=auth)
    async with search:
        first = await search.run({"query": "Eiffelturm"})
        second = await search.run({"query": "Eiffelturm"})
    assert first.llm_content == second.llm_content == 'Web search results for "Eiffelturm":\n\n' + GEMINI_TEXT
    assert [r.path for r in server.received] == [
        "/v1internal:loadCodeAssist",
        "/v1internal:generateContent",
        "/v1internal:generateContent",
    ]
    assert all(r.headers["authorization"] == "Bearer ya29.token-abc" for r in server.received)
    assert sent(server, 0)["metadata"]["pluginType"] == "GEMINI"
    wrapped = sent(server, 1)
    assert (wrapped["model"], wrapped["project"]) == ("gemini-2.5-flash", "managed-7")
    assert wrapped["request"]["tools"] == [{"googleSearch": {}}]
    assert "model" not in wrapped["request"]


async def test_antigravity_variant_adds_its_envelope_fields(server: FaultServer) -> None:
    # loadCodeAssist is asked even with a configured project (it may name a managed one)
    server.add(json_reply({"currentTier": {"id": "standard-tier"}}), json_reply({"response": GEMINI_BODY}))
    auth = {"google": {"type": "oauth", "access": "ya29.x"}}
    options = {"codeAssistEndpoint": root(server), "projectId": "p-1", "antigravity": True}
    search, _ = make(
        server, ["google"], options={"google": options}, auth=auth, env={"GOOGLE_CLOUD_PROJECT": "ignored"}
    )
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is None
    body = sent(server, 1)
    assert body["project"] == "p-1" and body["userAgent"] == "antigravity"
    assert body["requestId"].startswith("search-") and body["request"]["sessionId"].startswith("search-")


async def test_code_assist_refreshes_an_expiring_token_first(server: FaultServer) -> None:
    server.add(
        json_reply({"access_token": "ya29.fresh", "expires_in": 3600}),
        json_reply({"cloudaicompanionProject": {"id": "m-1"}}),
        json_reply({"response": GEMINI_BODY}),
    )
    auth = {"google": {"type": "oauth", "access": "ya29.stale", "refresh": "1//r", "expires": 1000}}
    options = {"codeAssistEndpoint": root(server), "clientId": "cid", "tokenURL": root(server) + "/token"}
    search, _ = make(server, ["google"], options={"google": options}, auth=auth)
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is None
    assert server.received[0].path == "/token" and b"refresh_token=1%2F%2Fr" in server.received[0].body
    assert server.received[2].headers["authorization"] == "Bearer ya29.fresh"


async def test_code_assist_refreshes_a_refused_login_once_and_asks_again(server: FaultServer) -> None:
    server.add(
        json_reply({"cloudaicompanionProject": "m-1"}),
        json_reply(
            {
                "error": {
                    "code": 401,
                    "message": "Request had invalid authentication credentials.",
                    "status": "UNAUTHENTICATED",
                }
            },
            401,
        ),
        json_reply({"access_token": "ya29.renewed", "expires_in": 3600}),
        json_reply({"cloudaicompanionProject": "m-1"}),
        json_reply({"response": GEMINI_BODY}),
    )
    auth = {
        "google": {"type": "oauth", "access": "ya29.revoked", "refresh": "1//r", "expires": 4102444800000}
    }
    options = {"codeAssistEndpoint": root(server), "clientId": "cid", "tokenURL": root(server) + "/token"}
    progress: list[str] = []
    search, _ = make(server, ["google"], options={"google": options}, auth=auth, on_progress=progress.append)
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is None
    assert [r.path for r in server.received] == [
        "/v1internal:loadCodeAssist",
        "/v1internal:generateContent",
        "/token",
        "/v1internal:loadCodeAssist",  # the project is cached per token
        "/v1internal:generateContent",
    ]
    assert server.received[4].headers["authorization"] == "Bearer ya29.renewed"
    assert "google: login refused, refreshing it once" in progress


async def test_a_refused_api_key_is_not_retried(server: FaultServer) -> None:
    server.add(json_reply({"error": {"code": 401, "message": "API key not valid"}}, 401))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.status == 401 and len(server.received) == 1


def codex_token(account: str) -> str:
    claims = base64.urlsafe_b64encode(
        json.dumps({"https://api.openai.com/auth": {"chatgpt_account_id": account}}).encode()
    )
    return f"eyJhbGciOiJub25lIn0.{claims.rstrip(b'=').decode()}.sig"


def codex_stream(text: str, url: str) -> bytes:
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": []}
    annotation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": len(text),
        "url": url,
        "title": "Python",
    }
    events = [
        {"type": "response.created", "response": {"id": "r1", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": msg},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        },
        {
            "type": "response.output_text.annotation.added",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "annotation_index": 0,
            "annotation": annotation,
        },
        {
            "type": "response.output_text.done",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "text": text,
        },
        {
            "type": "response.completed",
            "response": {
                "id": "r1",
                "status": "completed",
                "output": [],
                "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
            },
        },
    ]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


async def test_chatgpt_codex_backend_streams_with_the_account_header_and_store_false(
    server: FaultServer,
) -> None:
    text = "Python 3.14 is out ([python.org](https://www.python.org/))"
    server.add(Reply(200, parts=[codex_stream(text, "https://www.python.org/")]))
    token = codex_token("acct-42")
    auth = {"openai": {"type": "oauth", "access": token, "refresh": "r", "expires": 4102444800000}}
    search, _ = make(
        server,
        ["openai"],
        options={"openai": {"codexBaseURL": server.base_url}},
        auth=auth,
        env={"OPENAI_API_KEY": "unused"},
    )
    async with search:
        result = await search.run({"query": "python"})
    assert result.error is None, result.error
    assert result.llm_content.endswith(f"{text}[1]\n\nSources:\n[1] Python (https://www.python.org/)")
    request = server.received[0]
    assert request.path == "/v1/responses"
    assert request.headers["chatgpt-account-id"] == "acct-42"
    assert request.headers["authorization"] == f"Bearer {token}"
    body = json.loads(request.body)
    assert body["store"] is False and body["stream"] is True and body["model"] == "gpt-5"
    assert body["tools"] == [{"type": "web_search"}] and body["instructions"]


async def test_chatgpt_login_without_account_id_is_an_oauth_failure(server: FaultServer) -> None:
    search, _ = make(server, ["openai"], auth={"openai": {"type": "oauth", "access": "opaque-token"}})
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "OPENAI_OAUTH_WEB_SEARCH_FAILED"
    assert "opaque-token" not in result.to_json() and server.received == []


async def test_a_refused_chatgpt_login_is_retried_with_the_one_the_auth_file_holds_now(
    server: FaultServer, tmp_path: Path
) -> None:
    text = "Python 3.14 is out ([python.org](https://www.python.org/))"
    refused = json_reply({"error": {"message": "token expired", "code": "token_expired"}}, 401)
    server.add(refused, Reply(200, parts=[codex_stream(text, "https://www.python.org/")]), refused)
    stale, renewed = codex_token("acct-1"), codex_token("acct-2")
    auth_file = tmp_path / "auth.json"
    auth_file.write_text(json.dumps({"openai": {"type": "oauth", "access": stale, "refresh": "r1"}}))
    progress: list[str] = []
    options = {"openai": {"codexBaseURL": server.base_url}}
    search, _ = make(server, ["openai"], options=options, auth=auth_file, on_progress=progress.append)
    # the user's own tool renews the login after the search has read the file
    auth_file.write_text(json.dumps({"openai": {"type": "oauth", "access": renewed, "refresh": "r2"}}))
    async with search:
        result = await search.run({"query": "python"})
        assert result.error is None, result.error
        assert [r.headers["authorization"] for r in server.received] == [
            f"Bearer {stale}",
            f"Bearer {renewed}",
        ]
        assert server.received[1].headers["chatgpt-account-id"] == "acct-2"
        assert "openai: login refused; the auth file has a newer one, using it" in progress
        # refused again with the file unchanged: reported, not retried, and no token in the report
        again = await search.run({"query": "python"})
    assert again.error is not None and again.error.type == "OPENAI_OAUTH_WEB_SEARCH_FAILED"
    assert again.error.status == 401 and len(server.received) == 3
    assert renewed not in again.to_json() and stale not in again.to_json()


# -- the tool in the core runtime -------------------------------------------------------------------


async def test_the_tool_runs_in_the_core_tool_runtime(server: FaultServer) -> None:
    search, _ = make(server, ["anthropic"], env={"ANTHROPIC_API_KEY": KEY})
    tool = search.tool
    assert tool.name == "websearch_grounded"
    assert tool.definition.input_schema["required"] == ["query"]
    server.add(json_reply(ANTHROPIC_BODY))
    async with search:
        value = await tool({"query": "東京タワー"})
        bad = await tool({"q": "x"})
    assert value["llmContent"].endswith(f"[1] 東京タワー ({TOKYO})")
    assert bad["error"]["type"] == "INVALID_TOOL_ARGUMENTS"


# -- CLI --------------------------------------------------------------------------------------------


def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], env: dict[str, str]) -> int:
    for name in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path))  # no opencode files of the machine's user
    monkeypatch.chdir(tmp_path)
    return main(argv)


def test_cli_search_prints_json_and_progress(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(json_reply(GEMINI_BODY))
    config = tmp_path / "opencode.jsonc"
    options = '"options": {"baseURL": "' + server.base_url + '",}'
    config.write_text('{// mine\n"provider": {"google": {' + options + "}}}")
    code = cli(
        monkeypatch,
        tmp_path,
        ["search", "Eiffelturm", "--provider", "google", "--format", "json"],
        {"GEMINI_API_KEY": KEY},
    )
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out)["llmContent"] == 'Web search results for "Eiffelturm":\n\n' + GEMINI_TEXT
    assert "llmroute search: google: searching with gemini-2.5-flash" in captured.err
    assert KEY not in captured.out + captured.err


def test_cli_search_markdown_failure_exits_1(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.add(json_reply({"error": {"message": "bad"}}, 400))
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps({"provider": {"anthropic": {"options": {"baseURL": server.base_url, "apiKey": KEY}}}})
    )
    code = cli(
        monkeypatch,
        tmp_path,
        ["search", "q", "--provider", "anthropic", "--config", str(config), "--quiet"],
        {},
    )
    captured = capsys.readouterr()
    assert code == 1 and captured.out.startswith("## Search Error\n") and captured.err == ""


def test_cli_search_without_credentials_names_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli(monkeypatch, tmp_path, ["search", "q", "--provider", "google", "--provider", "openrouter"], {})
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out.startswith("## No Providers Available\n")
    assert "GEMINI_API_KEY" in captured.err and "OPENROUTER_API_KEY" in captured.err
    assert cli(monkeypatch, tmp_path, ["search", "q", "--config", str(tmp_path / "nope.json")], {}) == 2
    assert "cannot be read" in capsys.readouterr().err


# -- retry override, deadlines, cancellation ------------------------------------------------------------


async def test_retry_argument_replaces_the_default_policy(server: FaultServer) -> None:
    server.add(json_reply({"error": {"message": "boom"}}, 500))
    search, sleeps = make(server, ["google"], env={"GEMINI_API_KEY": KEY}, retry=llmroute.RetryPolicy.none())
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.status == 500
    assert len(server.received) == 1 and sleeps.calls == []


async def test_a_deadline_is_a_reported_failure_and_the_next_provider_answers(server: FaultServer) -> None:
    server.add(Reply(200, {"content-type": "application/json"}, [Stall()]), json_reply(ANTHROPIC_BODY))
    search, _ = make(
        server,
        ["google", "anthropic"],
        env={"GEMINI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY},
        timeouts=llmroute.Timeouts(first_byte=0.3, idle=0.3, total=5),
    )
    async with search:
        result = await search.run({"query": "q"})
    assert result.provider == "anthropic" and result.error is None


async def test_cancellation_propagates_and_closes_the_connection(server: FaultServer) -> None:
    server.add(Reply(200, {"content-type": "application/json"}, [Stall()]))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    async with search:
        with anyio.move_on_after(0.3) as scope:
            await search.run({"query": "q"})
    assert scope.cancelled_caught
    with anyio.fail_after(5):
        while server.open_connections:  # noqa: ASYNC110 - the server lives in another thread
            await anyio.sleep(0.01)


async def test_the_tool_drives_a_real_tool_loop(server: FaultServer) -> None:
    """Main model (Chat) calls websearch_grounded; the search runs as its own two-stage call
    (Anthropic); the main model reads the JSON result and answers."""
    from llmroute.providers import openai

    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "websearch_grounded", "arguments": '{"query": "東京タワー"}'},
    }
    first = {
        "id": "c1",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
    }
    final = {
        "id": "c2",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "333 m [1]"}, "finish_reason": "stop"}
        ],
    }
    server.add(json_reply(first), json_reply(ANTHROPIC_BODY), json_reply(final))
    search, _ = make(server, ["anthropic"], env={"ANTHROPIC_API_KEY": KEY})
    main = openai.configure(api_key="sk-main", base_url=server.base_url).chat("gpt-4o-mini")
    request = llmroute.request(
        model=main,
        prompt="How tall is Tokyo Tower?",
        tools=[search.tool],
        generation=llmroute.GenerationOptions(stream=False),
    )
    async with search:
        response = await search.client.generate(
            request, tools=[search.tool], stop_when=llmroute.step_count_is(3)
        )
    assert response.text == "333 m [1]"
    assert [r.path for r in server.received] == [
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/chat/completions",
    ]
    assert [t["function"]["name"] for t in sent(server, 0)["tools"]] == ["websearch_grounded"]
    assert "tools" in sent(server, 1) and all(
        t["type"].startswith("web_search") for t in sent(server, 1)["tools"]
    )
    tool_message = sent(server, 2)["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"])["llmContent"].endswith(f"[1] 東京タワー ({TOKYO})")


def test_an_unknown_provider_is_refused_when_the_search_is_made() -> None:
    from llmroute.websearch.config import ConfigError

    with pytest.raises(ConfigError, match="unknown web search provider"):
        GroundedSearch(["google", "bing"], env={})


async def test_a_response_over_the_cap_is_cut_off_and_reported(server: FaultServer) -> None:
    server.add(json_reply({**GEMINI_BODY, "padding": "x" * 5000}))
    limits = SearchLimits(max_response_bytes=2000)
    search, sleeps = make(server, ["google"], env={"GEMINI_API_KEY": KEY}, limits=limits)
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "RESPONSE_TOO_LARGE"
    assert "2,000 bytes" in result.error.message
    assert len(server.received) == 1 and sleeps.calls == []


async def test_query_and_prompt_limits_send_nothing(server: FaultServer) -> None:
    search, _ = make(
        server,
        ["google"],
        env={"GEMINI_API_KEY": KEY},
        limits=SearchLimits(max_query_units=10, max_prompt_bytes=400),
    )
    async with search:
        long = await search.run({"query": "🗼" * 6})  # 12 UTF-16 units
        report = await search.report("x" * 11)
    assert long.error is not None and long.error.type == "QUERY_TOO_LONG"
    assert report.startswith("## Search Error\n") and "11 UTF-16 code units" in report
    assert server.received == []
    tight = GroundedSearch(["google"], env={"GEMINI_API_KEY": KEY}, limits=SearchLimits(max_prompt_bytes=50))
    assert (await tight.run({"query": "q"})).error.type == "PROMPT_TOO_LARGE"  # type: ignore[union-attr]
    await tight.aclose()


async def test_the_wall_clock_bounds_the_whole_search_fallback_included(server: FaultServer) -> None:
    stall = Reply(200, {"content-type": "application/json"}, [Stall()])
    server.add(stall, stall)
    search, _ = make(
        server,
        ["google", "anthropic"],
        env={"GEMINI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY},
        limits=SearchLimits(timeout=0.5),
        timeouts=llmroute.Timeouts(first_byte=0.4, idle=0.4),
    )
    async with search:
        with anyio.fail_after(5):
            result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "SEARCH_TIMEOUT"


def test_bad_arguments_are_config_errors_and_a_single_provider_string_is_one_provider() -> None:
    from llmroute.websearch.config import ConfigError

    with pytest.raises(ConfigError, match="config must be a mapping or a path, got int"):
        GroundedSearch(["google"], config=123, env={})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_results must be a positive int"):
        GroundedSearch(["google"], max_results=0, env={})
    assert GroundedSearch("google", env={}).providers == ("google",)


async def test_cited_style_links_only_grounded_urls(server: FaultServer) -> None:
    server.add(json_reply(GEMINI_BODY))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY}, style="cited")
    async with search:
        result = await search.run({"query": "Eiffelturm"})
    assert result.error is None and result.sources
    assert "## Sources" in result.llm_content
    grounded = {s.url for s in result.sources}
    linked = set(re.findall(r"\]\((https?://[^)\s]+)\)", result.llm_content))
    assert linked and linked <= grounded
    assert check_citations(result.llm_content, allowed_urls=grounded).ok


async def test_cited_style_refuses_an_answer_without_grounding(server: FaultServer) -> None:
    ungrounded = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Paris, surely."}]}, "finishReason": "STOP"}
        ]
    }
    server.add(json_reply(ungrounded))
    search, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY}, style="cited")
    async with search:
        result = await search.run({"query": "q"})
    assert result.error is not None and result.error.type == "UNGROUNDED_ANSWER"
    plain, _ = make(server, ["google"], env={"GEMINI_API_KEY": KEY})
    server.add(json_reply(ungrounded))
    async with plain:
        assert (await plain.run({"query": "q"})).error is None  # markers style shows it uncited


def test_unknown_style_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="style"):
        GroundedSearch(["google"], env={}, style="links")  # type: ignore[arg-type]
