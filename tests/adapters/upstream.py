"""Fake upstreams for the adapter suites: a real HTTP server on 127.0.0.1 that answers each llmroute
protocol (Chat via OpenRouter, Responses, Anthropic Messages, Gemini, Bedrock Converse) with a
scripted ``Reply``, in the wire shapes of the recordings under ``cassettes/`` (the encoders build on
``tests/conformance/stream_generators``, which is held to those recordings).

A reply is text (with citations), thinking (signed, or encrypted), client tool calls and a hosted
web search (call, sources, cited text), with usage (cache read/write, reasoning tokens), or an HTTP
error. ``Upstream.replies`` is a queue, or a function from the request to a reply (the "brain" the
LangChain standard suite needs); ``Upstream.requests`` is every request body received, so tests
check what went back upstream (signatures, tool results).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import llmroute
from llmroute.providers import anthropic, bedrock, google, openai, openrouter
from tests.conformance.stream_generators import (
    _Seq,
    bedrock_body,
    chat_body,
    chat_chunk,
    gemini_body,
    message_item,
    response,
    sse_body,
)

__all__ = ["PROTOCOLS", "Call", "Cite", "Reply", "Search", "Text", "Think", "Upstream"]

PROTOCOLS = ("chat", "responses", "anthropic", "gemini", "bedrock")
"""The five protocols every adapter feature runs on (Chat through OpenRouter, whose Chat has a
hosted web search and signed reasoning)."""

KEY = "sk-test-0123456789abcdef"


@dataclass(frozen=True)
class Cite:
    url: str
    title: str
    start: int
    end: int
    cited_text: str = ""


@dataclass(frozen=True)
class Text:
    text: str
    cites: tuple[Cite, ...] = ()


@dataclass(frozen=True)
class Think:
    text: str
    signature: str = "EqQBCkgIBxABGAIsig"


@dataclass(frozen=True)
class Call:
    name: str
    args: dict[str, Any]
    id: str = "call_1"


@dataclass(frozen=True)
class Search:
    query: str
    sources: tuple[tuple[str, str], ...]  # (url, title)
    id: str = "srvtoolu_1"


Part = Text | Think | Call | Search


@dataclass
class Reply:
    parts: tuple[Part, ...] = ()
    input_tokens: int = 20
    output_tokens: int = 10
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    status: int = 200
    error: str = ""  # an HTTP error's message (status >= 400)
    drip: float = 0.0  # seconds between chunks; with ``hang`` the body never ends
    hang: bool = False

    @property
    def calls(self) -> list[Call]:
        return [p for p in self.parts if isinstance(p, Call)]


def text(value: str, **usage: int) -> Reply:
    return Reply((Text(value),), **usage)


# -- models pointed at the upstream ----------------------------------------------------------------------


def model(protocol: str, origin: str) -> llmroute.Model:
    """A model of ``protocol`` whose route goes to ``origin``."""
    if protocol == "chat":
        return openrouter.configure(api_key=KEY, base_url=f"{origin}/api/v1").chat(
            "anthropic/claude-sonnet-4.5"
        )
    if protocol == "responses":
        return openai.configure(api_key=KEY, base_url=f"{origin}/v1").responses("gpt-5.5")
    if protocol == "anthropic":
        return anthropic.configure(api_key=KEY, base_url=f"{origin}/v1").messages("claude-sonnet-4-5")
    if protocol == "gemini":
        return google.configure(api_key=KEY, base_url=f"{origin}/v1beta").gemini("gemini-2.5-flash")
    if protocol == "bedrock":
        return bedrock.configure(
            region="us-east-1",
            access_key_id="AKIDEXAMPLE",
            secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            base_url=origin,
        ).converse("anthropic.claude-sonnet-4-5-v1:0")
    raise ValueError(protocol)


def protocol_of(path: str) -> str:
    if "/chat/completions" in path:
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/messages"):
        return "anthropic"
    if "generatecontent" in path.lower():
        return "gemini"
    if "/converse" in path:
        return "bedrock"
    raise ValueError(f"no protocol serves {path}")


# -- encoders --------------------------------------------------------------------------------------------


def encode(protocol: str, reply: Reply) -> tuple[str, list[bytes]]:
    """The content type and the body chunks of ``reply`` in ``protocol``'s stream shape."""
    return _ENCODERS[protocol](reply)


def _chat(reply: Reply) -> tuple[str, list[bytes]]:
    chunks: list[dict[str, Any] | str] = [chat_chunk({"role": "assistant", "content": ""})]
    index = 0
    searches = 0
    position = 0
    for part in reply.parts:
        if isinstance(part, Text):
            chunks.append(chat_chunk({"content": part.text}))
            if part.cites:
                notes = [
                    {
                        "type": "url_citation",
                        "url_citation": {
                            "url": c.url,
                            "title": c.title,
                            "content": c.cited_text,
                            "start_index": position + c.start,
                            "end_index": position + c.end,
                        },
                    }
                    for c in part.cites
                ]
                chunks.append(chat_chunk({"content": "", "annotations": notes}))
            position += len(part.text)
        elif isinstance(part, Think):
            detail = {
                "type": "reasoning.text",
                "text": part.text,
                "format": "anthropic-claude-v1",
                "index": 0,
            }
            chunks.append(
                chat_chunk({"content": None, "reasoning": part.text, "reasoning_details": [detail]})
            )
            chunks.append(
                chat_chunk(
                    {
                        "content": None,
                        "reasoning_details": [
                            {
                                "type": "reasoning.text",
                                "signature": part.signature,
                                "format": "anthropic-claude-v1",
                                "index": 0,
                            }
                        ],
                    }
                )
            )
        elif isinstance(part, Call):
            args = json.dumps(part.args)
            first = {"index": index, "id": part.id, "type": "function"}
            chunks.append(
                chat_chunk({"tool_calls": [{**first, "function": {"name": part.name, "arguments": ""}}]})
            )
            cut = len(args) // 2
            for piece in (args[:cut], args[cut:]):
                chunks.append(
                    chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
            index += 1
        else:
            searches += 1  # the web plugin shows a search only by the citations it leaves
    chunks.append(chat_chunk({}, "tool_calls" if reply.calls else "stop"))
    usage: dict[str, Any] = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cache_read, "cache_write_tokens": reply.cache_write},
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning},
        "cost": 0.00042,
    }
    if searches:
        usage["server_tool_use"] = {"web_search_requests": searches}
    chunks += [chat_chunk(None, usage=usage), "[DONE]"]
    return "text/event-stream", [chat_body([c]) for c in chunks]


def _responses(reply: Reply) -> tuple[str, list[bytes]]:
    seq = _Seq()
    seq.add("response.created", response=response("in_progress"))
    output: list[dict[str, Any]] = []
    for n, part in enumerate(reply.parts):
        if isinstance(part, Text):
            item_id = f"msg_{n:04d}"
            seq.add("response.output_item.added", item=message_item(item_id, "in_progress"), output_index=n)
            blank = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            where = {"content_index": 0, "item_id": item_id, "output_index": n}
            seq.add("response.content_part.added", **where, part=blank)
            seq.add("response.output_text.delta", **where, delta=part.text, logprobs=[])
            notes = [
                {
                    "type": "url_citation",
                    "start_index": c.start,
                    "end_index": c.end,
                    "url": c.url,
                    "title": c.title,
                }
                for c in part.cites
            ]
            for i, note in enumerate(notes):
                seq.add("response.output_text.annotation.added", **where, annotation_index=i, annotation=note)
            seq.add("response.output_text.done", **where, logprobs=[], text=part.text)
            done_part = {**blank, "text": part.text, "annotations": notes}
            seq.add("response.content_part.done", **where, part=done_part)
            item = {**message_item(item_id, "completed", part.text), "content": [done_part]}
            seq.add("response.output_item.done", item=item, output_index=n)
        elif isinstance(part, Think):
            item_id = f"rs_{n:04d}"
            opened = {"id": item_id, "type": "reasoning", "encrypted_content": part.signature, "summary": []}
            seq.add("response.output_item.added", item=opened, output_index=n)
            where = {"item_id": item_id, "output_index": n, "summary_index": 0}
            seq.add(
                "response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""}
            )
            seq.add("response.reasoning_summary_text.delta", **where, delta=part.text)
            seq.add("response.reasoning_summary_text.done", **where, text=part.text)
            seq.add(
                "response.reasoning_summary_part.done",
                **where,
                part={"type": "summary_text", "text": part.text},
            )
            item = {**opened, "summary": [{"type": "summary_text", "text": part.text}]}
            seq.add("response.output_item.done", item=item, output_index=n)
        elif isinstance(part, Call):
            item_id = f"fc_{n:04d}"
            args = json.dumps(part.args)
            opened = {
                "id": item_id,
                "type": "function_call",
                "status": "in_progress",
                "arguments": "",
                "call_id": part.id,
                "name": part.name,
            }
            seq.add("response.output_item.added", item=opened, output_index=n)
            seq.add("response.function_call_arguments.delta", delta=args, item_id=item_id, output_index=n)
            seq.add("response.function_call_arguments.done", arguments=args, item_id=item_id, output_index=n)
            item = {**opened, "status": "completed", "arguments": args}
            seq.add("response.output_item.done", item=item, output_index=n)
        else:
            item_id = part.id if part.id.startswith("ws_") else f"ws_{n:04d}"
            opened = {"id": item_id, "type": "web_search_call", "status": "in_progress"}
            seq.add("response.output_item.added", item=opened, output_index=n)
            seq.add("response.web_search_call.in_progress", item_id=item_id, output_index=n)
            seq.add("response.web_search_call.searching", item_id=item_id, output_index=n)
            seq.add("response.web_search_call.completed", item_id=item_id, output_index=n)
            action = {
                "type": "search",
                "query": part.query,
                "sources": [{"type": "url", "url": url} for url, _ in part.sources],
            }
            item = {**opened, "status": "completed", "action": action}
            seq.add("response.output_item.done", item=item, output_index=n)
        output.append(seq.events[-1]["item"])
    done = response("completed")
    done["output"] = output
    done["usage"] = {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cache_read},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    seq.add("response.completed", response=done)
    return "text/event-stream", [sse_body([e]) for e in seq.events]


def _anthropic(reply: Reply) -> tuple[str, list[bytes]]:
    usage = {
        "input_tokens": reply.input_tokens - reply.cache_read - reply.cache_write,
        "cache_read_input_tokens": reply.cache_read,
        "cache_creation_input_tokens": reply.cache_write,
        "output_tokens": 1,
    }
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**message, "usage": usage}}]
    searches = 0
    i = 0
    for part in reply.parts:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if isinstance(part, Text):
            deltas: list[dict[str, Any]] = [{"type": "text_delta", "text": part.text}]
            for c in part.cites:
                citation = {
                    "type": "web_search_result_location",
                    "url": c.url,
                    "title": c.title,
                    "cited_text": c.cited_text,
                    "encrypted_index": "EpABCioIAhgB",
                }
                deltas.append({"type": "citations_delta", "citation": citation})
            blocks.append(({"type": "text", "text": ""}, deltas))
        elif isinstance(part, Think):
            deltas = [
                {"type": "thinking_delta", "thinking": part.text},
                {"type": "signature_delta", "signature": part.signature},
            ]
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        elif isinstance(part, Call):
            args = json.dumps(part.args)
            block = {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
            blocks.append((block, [{"type": "input_json_delta", "partial_json": args}]))
        else:
            searches += 1
            block = {"type": "server_tool_use", "id": part.id, "name": "web_search", "input": {}}
            query = json.dumps({"query": part.query})
            blocks.append((block, [{"type": "input_json_delta", "partial_json": query}]))
            results = [
                {
                    "type": "web_search_result",
                    "url": url,
                    "title": title,
                    "encrypted_content": "EqgfCioIARgB",
                    "page_age": None,
                }
                for url, title in part.sources
            ]
            blocks.append(
                ({"type": "web_search_tool_result", "tool_use_id": part.id, "content": results}, [])
            )
        for block, deltas in blocks:
            events.append({"type": "content_block_start", "index": i, "content_block": block})
            events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
            events.append({"type": "content_block_stop", "index": i})
            i += 1
    end_usage: dict[str, Any] = {"output_tokens": reply.output_tokens}
    if searches:
        end_usage["server_tool_use"] = {"web_search_requests": searches}
    stop = "tool_use" if reply.calls else "end_turn"
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": end_usage}
    )
    events.append({"type": "message_stop"})
    return "text/event-stream", [sse_body([e]) for e in events]


def _gemini(reply: Reply) -> tuple[str, list[bytes]]:
    chunks: list[dict[str, Any]] = []
    grounding: dict[str, Any] | None = None
    position = 0  # UTF-8 bytes, as Gemini counts
    for part in reply.parts:
        if isinstance(part, Text):
            chunks.append({"text": part.text})
            if part.cites and grounding is not None:
                urls = [c["web"]["uri"] for c in grounding["groundingChunks"]]
                for c in part.cites:
                    start = position + len(part.text[: c.start].encode())
                    end = position + len(part.text[: c.end].encode())
                    segment = {"startIndex": start, "endIndex": end, "text": part.text[c.start : c.end]}
                    grounding["groundingSupports"].append(
                        {"segment": segment, "groundingChunkIndices": [urls.index(c.url)]}
                    )
            position += len(part.text.encode())
        elif isinstance(part, Think):
            chunks.append({"text": part.text, "thought": True, "thoughtSignature": part.signature})
        elif isinstance(part, Call):
            call = {"name": part.name, "args": part.args, "id": part.id}
            chunks.append({"functionCall": call, "thoughtSignature": "CiQBsig"})
        else:
            grounding = {
                "webSearchQueries": [part.query],
                "groundingChunks": [{"web": {"uri": url, "title": title}} for url, title in part.sources],
                "groundingSupports": [],
            }
    bodies: list[dict[str, Any]] = [
        {
            "candidates": [{"content": {"parts": [p], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-2.5-flash",
            "responseId": "7CPuaa_aIcWb_uMP1Ia0wQ8",
        }
        for p in chunks
    ] or [{"candidates": [{"content": {"parts": [], "role": "model"}, "index": 0}], "responseId": "r"}]
    last = bodies[-1]["candidates"][0]
    last["finishReason"] = "STOP"
    if grounding is not None:
        last["groundingMetadata"] = grounding
    bodies[-1]["usageMetadata"] = {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens - reply.reasoning,
        "thoughtsTokenCount": reply.reasoning,
        "cachedContentTokenCount": reply.cache_read,
        "totalTokenCount": reply.input_tokens + reply.output_tokens,
    }
    return "text/event-stream", [gemini_body([b]) for b in bodies]


def _bedrock(reply: Reply) -> tuple[str, list[bytes]]:
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"p": "abcdefgh", "role": "assistant"})]
    for i, part in enumerate(reply.parts):
        if isinstance(part, Call):
            start = {"toolUse": {"name": part.name, "toolUseId": part.id}}
            events.append(("contentBlockStart", {"contentBlockIndex": i, "p": "abcd", "start": start}))
            deltas: list[dict[str, Any]] = [{"toolUse": {"input": json.dumps(part.args)}}]
        elif isinstance(part, Text):
            deltas = [{"text": part.text}]
        elif isinstance(part, Think):
            deltas = [
                {"reasoningContent": {"text": part.text}},
                {"reasoningContent": {"signature": part.signature}},
            ]
        else:
            raise ValueError("Bedrock Converse has no hosted web search")
        events += [("contentBlockDelta", {"contentBlockIndex": i, "delta": d, "p": "abc"}) for d in deltas]
        events.append(("contentBlockStop", {"contentBlockIndex": i, "p": "abcdefghijklmnopqrstuv"}))
    events.append(("messageStop", {"p": "abcd", "stopReason": "tool_use" if reply.calls else "end_turn"}))
    usage = {
        "inputTokens": reply.input_tokens - reply.cache_read - reply.cache_write,
        "outputTokens": reply.output_tokens,
        "cacheReadInputTokens": reply.cache_read,
        "cacheWriteInputTokens": reply.cache_write,
        "totalTokens": reply.input_tokens + reply.output_tokens,
    }
    events.append(("metadata", {"metrics": {"latencyMs": 468}, "p": "abcdefghijklmnop", "usage": usage}))
    return "application/vnd.amazon.eventstream", [bedrock_body([e]) for e in events]


_ENCODERS: dict[str, Callable[[Reply], tuple[str, list[bytes]]]] = {
    "chat": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


def _error_body(protocol: str, status: int, message: str) -> bytes:
    if protocol == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "invalid_request_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    if protocol == "gemini":
        state = {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT"}.get(status, "INTERNAL")
        return json.dumps({"error": {"code": status, "message": message, "status": state}}).encode()
    if protocol == "bedrock":
        return json.dumps({"message": message}).encode()
    code = {429: "rate_limit_exceeded"}.get(status)
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}}).encode()


# -- the server -------------------------------------------------------------------------------------------

Brain = Callable[[str, dict[str, Any]], Reply]


@dataclass
class Received:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict[str, str])

    @property
    def protocol(self) -> str:
        return protocol_of(self.path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body: dict[str, Any] = json.loads(raw or b"{}")
        upstream = self.server.upstream
        received = Received(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        upstream.requests.append(received)
        if self.path.endswith("/count_tokens") or ":countTokens" in self.path:
            return self._send(
                200, "application/json", [json.dumps({"input_tokens": 42, "totalTokens": 42}).encode()]
            )
        protocol = received.protocol
        reply = upstream.next_reply(self.path, body)
        if reply.status >= 400:
            error = _error_body(protocol, reply.status, reply.error or "scripted failure")
            headers = {"retry-after": "0"} if reply.status == 429 else {}
            if protocol == "bedrock":
                headers["x-amzn-errortype"] = (
                    "ThrottlingException" if reply.status == 429 else "ValidationException"
                )
            return self._send(reply.status, "application/json", [error], headers)
        kind, chunks = encode(protocol, reply)
        self._send(200, kind, chunks, drip=reply.drip, hang=reply.hang)

    def _send(
        self,
        status: int,
        kind: str,
        chunks: list[bytes],
        headers: dict[str, str] | None = None,
        *,
        drip: float = 0.0,
        hang: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                if drip:
                    time.sleep(drip)
            while hang and not self.server.upstream.stopping.is_set():
                self.wfile.write(b"1\r\n\n\r\n")  # a blank line keeps the SSE stream open
                self.wfile.flush()
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.server.upstream.disconnected.set()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: Upstream


class Upstream:
    """``with Upstream(replies) as up:`` serves on ``up.origin``; ``up.model(protocol)`` is a
    model pointed at it. ``replies``: a list answered in order, or a ``Brain``."""

    def __init__(self, replies: list[Reply] | Brain | None = None) -> None:
        self.replies = replies if replies is not None else []
        self.requests: list[Received] = []
        self.disconnected = threading.Event()
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.upstream = self
        # a short poll: shutdown() waits for the loop to notice, and tests start many servers
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._lock = threading.Lock()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def model(self, protocol: str) -> llmroute.Model:
        return model(protocol, self.origin)

    def next_reply(self, path: str, body: dict[str, Any]) -> Reply:
        if callable(self.replies):
            return self.replies(path, body)
        with self._lock:
            if not self.replies:
                return Reply(status=500, error="the fake upstream has no reply left")
            return self.replies.pop(0)

    def __enter__(self) -> Upstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
