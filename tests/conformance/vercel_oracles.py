"""What a recorded response must fold to, read from its own bytes: one small oracle per wire format.

Independent of llmroute's parsers by construction: plain ``json`` over the response body, a dozen
lines of SSE splitting, a struct-level AWS event-stream reader. Each oracle encodes the contract
(DESIGN §4 and issue 13) in the wire's own terms: inclusive usage decided by the provider's own
arithmetic (``total`` tells whether reasoning is inside the output count), hosted (provider-executed)
versus client-executed tools, finish reasons, and the typed error a response must raise. Shapes an
oracle does not know raise ``UnknownShape``, so a new fixture forces a decision instead of being
checked against nothing.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec

__all__ = ["Expected", "UnknownShape", "expect", "http_error"]


class UnknownShape(Exception):
    """The oracle has no rule for a wire shape in this fixture."""


class Expected(msgspec.Struct, kw_only=True):
    """One response, as the contract says it must come out of ``Client.generate``.

    ``calls`` are client tool calls ``(id, name, input)`` (id ``None`` where the wire has none);
    ``hosted`` provider-executed calls ``(id, name)`` and ``hosted_results`` their result ids;
    ``citations`` ``(url, title)``; ``usage`` inclusive ``input``/``output`` plus ``reasoning`` and
    ``cache_read`` when the provider reports them; ``finish`` None where the contract leaves it open;
    ``approvals`` ids of approval requests that must reach the caller as events; ``error`` the
    ``LLMError`` subclass name the response must raise, with ``error_text`` in its message."""

    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str | None, str, Any]] = msgspec.field(default_factory=list)
    hosted: list[tuple[str, str]] = msgspec.field(default_factory=list)
    hosted_results: list[str] = msgspec.field(default_factory=list)
    citations: list[tuple[str | None, str | None]] = msgspec.field(default_factory=list)
    finish: str | None = "stop"
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    approvals: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
    error_text: str | None = None
    retry_after: float | None = None


# -- framing ---------------------------------------------------------------------------------------


def sse_data(body: bytes) -> list[str]:
    """The ``data`` of every SSE event (line endings normalised; comments and ``event:`` ignored)."""
    out: list[str] = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            out.append("\n".join(data))
    return out


def eventstream(body: bytes) -> list[tuple[dict[str, str], bytes]]:
    """AWS event-stream frames as (string headers, payload): prelude, headers, payload, CRC."""
    frames: list[tuple[dict[str, str], bytes]] = []
    pos = 0
    while pos < len(body):
        total, header_len = struct.unpack_from(">II", body, pos)
        headers: dict[str, str] = {}
        h, end = pos + 12, pos + 12 + header_len
        while h < end:
            name_len = body[h]
            name = body[h + 1 : h + 1 + name_len].decode()
            h += 1 + name_len
            if body[h] != 7:  # only string headers appear in Bedrock streams
                raise UnknownShape(f"event-stream header type {body[h]}")
            (value_len,) = struct.unpack_from(">H", body, h + 1)
            headers[name] = body[h + 3 : h + 3 + value_len].decode()
            h += 3 + value_len
        frames.append((headers, body[end : pos + total - 4]))
        pos += total
    return frames


def _json_events(texts: list[str]) -> list[Any] | None:
    """Every event decoded, or None when one is not JSON (the response must then fail, typed)."""
    try:
        return [json.loads(t) for t in texts]
    except ValueError:
        return None


_MALFORMED = Expected(finish=None, error="InvalidProviderOutputError")


# -- errors ---------------------------------------------------------------------------------------


def _retry_delay(error: Any) -> float | None:
    for detail in error.get("details") or () if isinstance(error, dict) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            return float(delay[:-1])
    return None


def error_class(error: dict[str, Any], status: int | None = None) -> str:
    """The error class a provider error must map to: quota (billing) vs rate limit (a retry delay
    means a short window), invalid request, overload; otherwise any ``LLMError``."""
    text = json.dumps(error).lower()
    if status == 429 or re.search(r"quota|rate_limit|resource_exhausted|throttl", text):
        if _retry_delay(error) is None and "quota" in text:
            return "QuotaExceededError"
        return "RateLimitError"
    if status == 400 or "invalid_request" in text:
        return "InvalidRequestError"
    if "overloaded" in text or (status or 0) >= 500:
        return "ProviderInternalError"
    return "LLMError"


def http_error(status: int, body: bytes) -> Expected:
    """An HTTP error response: its typed error, message and retry delay."""
    error = json.loads(body).get("error") or {}
    return Expected(
        finish=None,
        error=error_class(error, status),
        error_text=error.get("message"),
        retry_after=_retry_delay(error),
    )


# -- usage arithmetic ----------------------------------------------------------------------------


def _output(output: int | None, reasoning: int | None, total: int | None, inputs: int | None) -> int | None:
    """Inclusive output: some providers (xAI Chat) leave reasoning out of the output count, which
    their own ``total`` shows (input + output + reasoning = total)."""
    if output is None or not reasoning or total is None or inputs is None:
        return output
    if inputs + output + reasoning == total and inputs + output != total:
        return output + reasoning
    return output


def _usage(
    inputs: int | None, output: int | None, reasoning: int | None, cache_read: int | None
) -> dict[str, int]:
    out = {"input": inputs, "output": output, "reasoning": reasoning, "cache_read": cache_read}
    return {k: v for k, v in out.items() if v is not None}


def _finish(table: dict[str, str], reason: str | None, calls: list[Any]) -> str:
    """The provider's reason mapped (a reason the table lacks is a decision to make, not "unknown");
    a "stop" after client tool calls is a tool-call finish (the caller has work to do)."""
    if reason is not None and reason not in table:
        raise UnknownShape(f"finish reason {reason!r}")
    mapped = table[reason] if reason is not None else "unknown"
    return "tool-calls" if mapped == "stop" and calls else mapped


# -- OpenAI Chat and compatible servers ------------------------------------------------------------

_CHAT_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


def chat(chunks: list[Any]) -> Expected:
    exp = Expected()
    tools: dict[int, dict[str, str]] = {}
    reason: str | None = None
    usage: dict[str, Any] | None = None
    for chunk in chunks:
        if chunk.get("error"):
            return Expected(
                finish=None, error=error_class(chunk["error"]), error_text=chunk["error"].get("message")
            )
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage") or usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            exp.text += delta.get("content") or ""
            exp.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            for call in delta.get("tool_calls") or ():
                tool = tools.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                tool["id"] = tool["id"] or call.get("id") or ""
                tool["name"] = tool["name"] or function.get("name") or ""
                tool["arguments"] += function.get("arguments") or ""
            reason = choice.get("finish_reason") or reason
    exp.calls = [
        (t["id"], t["name"], json.loads(t["arguments"]) if t["arguments"] else {})
        for _, t in sorted(tools.items())
    ]
    exp.finish = _finish(_CHAT_FINISH, reason, exp.calls)
    if usage:
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        cached = cached if cached is not None else usage.get("prompt_cache_hit_tokens")
        output = _output(completion, reasoning, usage.get("total_tokens"), prompt)
        exp.usage = _usage(prompt, output, reasoning, cached)
    return exp


# -- OpenAI Responses (OpenAI, xAI, Responses-compatible servers) ----------------------------------

# hosted item type -> the hosted tool name llmroute reports (result = the item itself)
_HOSTED_ITEMS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_execution",
    "image_generation_call": "image_generation",
    "mcp_call": "mcp",
    "mcp_list_tools": "mcp_list_tools",
}
# client-executed built-in tools: item type -> (tool name, the field holding the call's input)
_CLIENT_ITEMS = {
    "local_shell_call": ("local_shell", "action"),
    "computer_call": ("computer_use", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
}
# items that carry no call of their own (outputs of earlier calls, state to send back)
_PASSIVE_ITEMS = frozenset(
    {"compaction", "shell_call_output", "tool_search_output", "program", "program_output"}
)
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content-filter"}
_DELTAS = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.reasoning_summary_text.delta": "summary",
    "response.reasoning_text.delta": "reasoning",
}


def responses(events: list[Any], *, server_custom_tools: bool = False) -> Expected:
    """``server_custom_tools``: the server executes ``custom_tool_call`` items itself (xAI's
    x_search and friends, which its non-streamed bodies call ``x_search_call``) instead of handing
    them to the client (OpenAI)."""
    done: dict[int, dict[str, Any]] = {}
    # streamed text and reasoning by (output index, part index): what the client saw arrive, keyed
    # by position because some servers give every event a new item id
    streamed: dict[tuple[str, int, int], str] = {}
    terminal: dict[str, Any] | None = None
    for event in events:
        kind = event.get("type")
        if kind in _DELTAS:
            part = event.get("summary_index", event.get("content_index", 0))
            key = (_DELTAS[kind], event["output_index"], part)
            streamed[key] = streamed.get(key, "") + event["delta"]
        if kind == "error":
            error = event.get("error") or event
            return Expected(finish=None, error=error_class(error), error_text=error.get("message"))
        if kind == "response.failed":
            error = (event.get("response") or {}).get("error") or {}
            return Expected(finish=None, error=error_class(error), error_text=error.get("message"))
        if kind == "response.output_item.done":
            done[event["output_index"]] = event["item"]
        elif kind in ("response.completed", "response.incomplete", "response.done"):
            terminal = event.get("response") or {}
    if terminal is None:
        return Expected(finish=None, error="InvalidProviderOutputError")
    items: list[dict[str, Any]] = [done[i] for i in sorted(done)] or terminal.get("output") or []
    exp = Expected()
    outputs = {i.get("call_id") for i in items if i.get("type", "").endswith("_output")}
    refused = False
    for index, item in zip(sorted(done) or range(len(items)), items, strict=True):
        kind = item.get("type")
        if kind == "message":
            parts: list[dict[str, Any]] = item.get("content") or []
            for n, part in enumerate(parts):
                refused = refused or part.get("type") == "refusal"
                text: str = part.get("text") or part.get("refusal") or ""
                exp.text += streamed.get(("text", index, n), text)
                annotations: list[dict[str, Any]] = part.get("annotations") or []
                exp.citations += [(a.get("url"), a.get("title") or a.get("filename")) for a in annotations]
        elif kind == "reasoning":
            for field, key in (("summary", "summary"), ("content", "reasoning")):
                pieces: list[dict[str, Any]] = item.get(field) or []
                for n, piece in enumerate(pieces):
                    exp.reasoning += streamed.get((key, index, n), piece.get("text") or "")
        elif kind == "function_call":
            arguments = item.get("arguments") or ""
            exp.calls.append((item["call_id"], item["name"], json.loads(arguments) if arguments else {}))
        elif kind == "x_search_call" and server_custom_tools:
            exp.hosted.append((item["id"], item["name"]))
        elif kind == "custom_tool_call":
            if server_custom_tools:
                exp.hosted.append((item["id"], item["name"]))
            else:
                exp.calls.append((item["call_id"], item["name"], item.get("input", "")))
        elif kind == "tool_search_call":
            if item.get("execution") == "client":
                exp.calls.append((item["call_id"], "tool_search", item.get("arguments")))
            else:
                exp.hosted.append((item["id"], "tool_search"))
                exp.hosted_results.append(item["id"])
        elif kind in _CLIENT_ITEMS and not (kind == "shell_call" and item.get("call_id") in outputs):
            name, field = _CLIENT_ITEMS[kind]
            exp.calls.append((item["call_id"], name, item.get(field)))
        elif kind == "shell_call":  # its output is in the same response: the server ran it
            exp.hosted.append((item["id"], "shell"))
            exp.hosted_results.append(item["id"])
        elif kind in _HOSTED_ITEMS:
            exp.hosted.append((item["id"], _HOSTED_ITEMS[kind]))
            exp.hosted_results.append(item["id"])
        elif kind == "mcp_approval_request":
            exp.approvals.append(item["id"])
        elif kind not in _PASSIVE_ITEMS:
            raise UnknownShape(f"Responses item {kind!r}")
    status = terminal.get("status") or "completed"
    if status == "incomplete":
        exp.finish = _finish(_INCOMPLETE, (terminal.get("incomplete_details") or {}).get("reason"), [])
    elif refused:
        exp.finish = "content-filter"
    else:
        exp.finish = "tool-calls" if exp.calls else "stop"
    if exp.approvals and exp.finish == "stop":
        exp.finish = "tool-calls"  # the caller must answer before the call runs
    usage = terminal.get("usage")
    if usage:
        inputs, output = usage.get("input_tokens"), usage.get("output_tokens")
        reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
        exp.usage = _usage(
            inputs, _output(output, reasoning, usage.get("total_tokens"), inputs), reasoning, cached
        )
    return exp


# -- Anthropic Messages --------------------------------------------------------------------------

_ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "pause_turn": "tool-calls",
    "refusal": "content-filter",
}
_IGNORED_BLOCKS = frozenset({"fallback", "compaction"})


def anthropic(events: list[Any]) -> Expected:
    blocks: dict[int, dict[str, Any]] = {}
    stop: str | None = None
    usage: dict[str, Any] = {}
    open_message = False
    message_id: Any = None
    for event in events:
        kind = event["type"]
        if kind == "message_start":
            message = event["message"]
            if open_message:
                if (
                    message_id is not None
                    and message.get("id") == message_id
                    and not blocks
                    and not message.get("content")
                ):
                    continue  # the same message announced again before any content: a duplicate
                return Expected(finish=None, error="InvalidProviderOutputError")  # a protocol violation
            open_message = True
            message_id = message.get("id")
            usage.update({k: v for k, v in (message.get("usage") or {}).items() if v is not None})
            stop = message.get("stop_reason") or stop
            for i, block in enumerate(message.get("content") or ()):
                blocks[i] = dict(block)
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"], _json="")
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            dtype = delta["type"]
            if dtype == "text_delta":
                block["text"] += delta["text"]
            elif dtype == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif dtype == "input_json_delta":
                block["_json"] += delta["partial_json"]
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta["citation"])
            elif dtype not in ("signature_delta", "compaction_delta"):
                raise UnknownShape(f"Anthropic delta {dtype!r}")
        elif kind == "message_delta":
            stop = event["delta"].get("stop_reason") or stop
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            open_message = False
        elif kind == "error":
            error = event.get("error") or {}
            return Expected(finish=None, error=error_class(error), error_text=error.get("message"))
    exp = Expected()
    for _, block in sorted(blocks.items()):
        btype = block["type"]
        if btype == "text":
            exp.text += block["text"]
            exp.citations += [
                (c.get("url"), c.get("title") or c.get("document_title"))
                for c in block.get("citations") or ()
            ]
        elif btype == "thinking":
            exp.reasoning += block["thinking"]
        elif btype == "tool_use":
            raw = block.get("_json")
            exp.calls.append((block["id"], block["name"], json.loads(raw) if raw else block.get("input", {})))
        elif btype in ("server_tool_use", "mcp_tool_use"):
            exp.hosted.append((block["id"], block["name"]))
        elif btype.endswith("_tool_result"):
            exp.hosted_results.append(block["tool_use_id"])
        elif btype not in _IGNORED_BLOCKS and btype != "redacted_thinking":
            raise UnknownShape(f"Anthropic block {btype!r}")
    # Anthropic's stop_reason is exact: end_turn after programmatic tool_use blocks (already run by
    # the code execution that called them) is a stop
    exp.finish = _finish(_ANTHROPIC_FINISH, stop, [])
    if usage:
        cache_read = usage.get("cache_read_input_tokens")
        inputs = (
            usage.get("input_tokens", 0) + (cache_read or 0) + (usage.get("cache_creation_input_tokens") or 0)
        )
        exp.usage = _usage(inputs, usage.get("output_tokens"), None, cache_read)
    return exp


# -- Gemini generateContent (Google AI and Vertex) ------------------------------------------------

# only the reasons the fixtures hold: another one raises UnknownShape
_GEMINI_FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content-filter"}
_PATH_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]")


def _set_path(args: dict[str, Any], path: str, value: Any, append: bool) -> None:
    """Apply one ``partialArgs`` entry: ``$.a.b[0].c`` set to ``value`` (strings streamed in pieces
    are appended to what the same path holds)."""
    steps = [(m.group(1), m.group(2)) for m in _PATH_STEP.finditer(path.removeprefix("$"))]
    node: Any = args
    for n, (key, index) in enumerate(steps):
        last = n == len(steps) - 1
        container_next: Any = None if last else ([] if steps[n + 1][1] is not None else {})
        if key is not None:
            if last:
                node[key] = node.get(key, "") + value if append and isinstance(node.get(key), str) else value
            else:
                node = node.setdefault(key, container_next)
        else:
            i = int(index)
            while len(node) <= i:
                node.append(None)
            if last:
                node[i] = node[i] + value if append and isinstance(node[i], str) else value
            else:
                if node[i] is None:
                    node[i] = container_next
                node = node[i]


def _partial_value(entry: dict[str, Any]) -> Any:
    for key in ("stringValue", "numberValue", "boolValue"):
        if key in entry:
            return entry[key]
    if "nullValue" in entry:
        return None
    raise UnknownShape(f"partialArgs entry {sorted(entry)}")


def gemini(chunks: list[Any]) -> Expected:
    exp = Expected()
    reason: str | None = None
    usage: dict[str, Any] | None = None
    pending: dict[str, Any] | None = None  # a function call whose arguments are still streaming

    def close() -> None:
        nonlocal pending
        if pending is not None:
            exp.calls.append((pending["id"], pending["name"], pending["args"]))
            pending = None

    for chunk in chunks:
        if chunk.get("error"):
            error = chunk["error"]
            return Expected(finish=None, error=error_class(error), error_text=error.get("message"))
        usage = (
            chunk.get("usageMetadata") if "promptTokenCount" in (chunk.get("usageMetadata") or {}) else usage
        )
        for candidate in (chunk.get("candidates") or [])[:1]:
            reason = candidate.get("finishReason") or reason
            if candidate.get("groundingMetadata"):
                raise UnknownShape("Gemini grounding")
            for part in (candidate.get("content") or {}).get("parts") or ():
                if "text" in part:
                    if part.get("thought"):
                        exp.reasoning += part["text"]
                    else:
                        exp.text += part["text"]
                elif "functionCall" in part:
                    call = part["functionCall"]
                    if "name" in call:
                        close()
                        pending = {
                            "id": call.get("id"),
                            "name": call["name"],
                            "args": dict(call.get("args") or {}),
                        }
                    for entry in call.get("partialArgs") or ():
                        assert pending is not None, "partialArgs before the call's name"
                        _set_path(
                            pending["args"], entry["jsonPath"], _partial_value(entry), "stringValue" in entry
                        )
                    if not call.get("willContinue"):
                        close()
                elif not set(part) <= {"thoughtSignature"}:
                    raise UnknownShape(f"Gemini part {sorted(part)}")
    close()
    exp.finish = _finish(_GEMINI_FINISH, reason, exp.calls)
    if usage:
        prompt = (usage.get("promptTokenCount") or 0) + (usage.get("toolUsePromptTokenCount") or 0)
        candidates, thoughts = usage.get("candidatesTokenCount"), usage.get("thoughtsTokenCount")
        output = (candidates or 0) + (thoughts or 0)
        total = usage.get("totalTokenCount")
        if total is not None and thoughts and prompt + (candidates or 0) == total:
            output = candidates or 0  # thoughts already inside the candidates count
        exp.usage = _usage(prompt, output, thoughts, usage.get("cachedContentTokenCount"))
    return exp


# -- Bedrock ConverseStream ----------------------------------------------------------------------

_BEDROCK_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool-calls",
    "content_filtered": "content-filter",
    "guardrail_intervened": "content-filter",
}


def bedrock(events: list[Any]) -> Expected:
    """``(event type, payload)`` pairs; an exception frame's type is ``None``."""
    exp = Expected()
    tools: dict[int, dict[str, str]] = {}
    reason: str | None = None
    usage: dict[str, Any] = {}
    for kind, data in events:
        if kind is None:
            return Expected(finish=None, error=error_class(data), error_text=data.get("message"))
        if kind == "contentBlockStart":
            tool = (data.get("start") or {}).get("toolUse")
            if tool:
                tools[data["contentBlockIndex"]] = {
                    "id": tool["toolUseId"],
                    "name": tool["name"],
                    "input": "",
                }
        elif kind == "contentBlockDelta":
            delta = data["delta"]
            exp.text += delta.get("text") or ""
            exp.reasoning += (delta.get("reasoningContent") or {}).get("text") or ""
            if "toolUse" in delta:
                tools[data["contentBlockIndex"]]["input"] += delta["toolUse"].get("input") or ""
        elif kind == "messageStop":
            reason = data.get("stopReason")
        elif kind == "metadata":
            usage = data.get("usage") or {}
        elif kind not in ("messageStart", "contentBlockStop"):
            raise UnknownShape(f"Bedrock event {kind!r}")
    exp.calls = [
        (t["id"], t["name"], json.loads(t["input"]) if t["input"] else {}) for _, t in sorted(tools.items())
    ]
    exp.finish = _finish(_BEDROCK_FINISH, reason, exp.calls)
    if usage:
        inputs, output = usage.get("inputTokens"), usage.get("outputTokens")
        read, write = usage.get("cacheReadInputTokens") or 0, usage.get("cacheWriteInputTokens") or 0
        if inputs is not None and usage.get("totalTokens") == inputs + (output or 0) + read + write:
            inputs += read + write  # Converse counts cached input apart from inputTokens
        exp.usage = _usage(inputs, output, None, usage.get("cacheReadInputTokens"))
    return exp


# -- non-streamed bodies as the events a stream would carry ----------------------------------------


def _chat_json(body: dict[str, Any]) -> list[Any]:
    choices = []
    for choice in body.get("choices") or ():
        delta = dict(choice.get("message") or {})
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(delta.get("tool_calls") or ())]
        choices.append(
            {"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")}
        )
    return [{"choices": choices, "usage": body.get("usage")}]


def _responses_json(body: dict[str, Any]) -> list[Any]:
    kind = "response.failed" if body.get("status") == "failed" else "response.completed"
    return [{"type": kind, "response": body}]


def _bedrock_json(body: dict[str, Any]) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = [("messageStart", {"role": "assistant"})]
    for i, block in enumerate((body.get("output") or {}).get("message", {}).get("content") or ()):
        if "text" in block:
            events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": block["text"]}}))
        elif "reasoningContent" in block:
            text = (block["reasoningContent"].get("reasoningText") or {}).get("text") or ""
            delta = {"reasoningContent": {"text": text}}
            events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": delta}))
        elif "toolUse" in block:
            tool = block["toolUse"]
            start = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
            events.append(("contentBlockStart", {"contentBlockIndex": i, "start": start}))
            delta = {"toolUse": {"input": json.dumps(tool.get("input") or {})}}
            events.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": delta}))
        else:
            raise UnknownShape(f"Bedrock block {sorted(block)}")
    events.append(("messageStop", {"stopReason": body.get("stopReason")}))
    events.append(("metadata", {"usage": body.get("usage")}))
    return events


def _anthropic_json(body: dict[str, Any]) -> list[Any]:
    return [{"type": "message_start", "message": body}, {"type": "message_stop"}]


def _gemini_json(body: dict[str, Any]) -> list[Any]:
    return [body]


# -- dispatch ------------------------------------------------------------------------------------

# family -> wire format (the rest are Chat Completions)
_WIRE = {
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "gemini": "gemini",
    "vertex": "gemini",
    "openai-responses": "responses",
    "copilot-responses": "responses",
    "xai-responses": "responses",
}
_FOLD: dict[str, Callable[[list[Any]], Expected]] = {
    "chat": chat,
    "anthropic": anthropic,
    "gemini": gemini,
    "responses": responses,
    "xai-responses": partial(responses, server_custom_tools=True),
    "bedrock": bedrock,
}
_FROM_JSON: dict[str, Callable[[dict[str, Any]], list[Any]]] = {
    "chat": _chat_json,
    "anthropic": _anthropic_json,
    "gemini": _gemini_json,
    "responses": _responses_json,
    "bedrock": _bedrock_json,
}


def _bedrock_frames(body: bytes) -> list[tuple[str | None, Any]]:
    return [
        (h[":event-type"] if h.get(":message-type") == "event" else None, json.loads(payload))
        for h, payload in eventstream(body)
    ]


def expect(family: str, status: int, body: bytes, *, streamed: bool = True) -> Expected:
    """The expected outcome of one recorded response of ``family`` (the converter's family names):
    a streamed body in its wire framing, or a non-streamed JSON body."""
    if status >= 400:
        return http_error(status, body)
    wire = _WIRE.get(family, "chat")
    fold = _FOLD["xai-responses" if family == "xai-responses" else wire]
    if not streamed:
        return fold(_FROM_JSON[wire](json.loads(body)))
    if wire == "bedrock":
        return fold(_bedrock_frames(body))
    events = _json_events([d for d in sse_data(body) if d != "[DONE]"])
    return _MALFORMED if events is None else fold(events)
