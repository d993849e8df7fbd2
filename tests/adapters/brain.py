"""A rule-following fake model for LangChain's standard integration suite: it reads the request
each protocol sent (tools, forced tool choice, output schema, JSON mode, the last turn) and
answers the way the suite's prompts ask, deterministically.

- the last turn is a tool result: a short text answer;
- tools are bound: a call to the forced one, else the one the prompt names, else the first, arguments made from its JSON Schema and the prompt (integers: the prompt's first number;
  strings: its first quoted text);
- a JSON schema or JSON mode is asked for: a JSON object made the same way;
- otherwise: a greeting.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .upstream import Call, Reply, Text, protocol_of


@dataclass
class Ask:
    """What one request asks, whatever its protocol."""

    tools: dict[str, dict[str, Any]]  # name -> JSON Schema of its input
    forced: str | None  # a tool's name, "*" for any tool, None
    schema: dict[str, Any] | None
    json_mode: bool
    after_tool: bool
    prompt: str


def _texts(value: Any) -> str:
    """Every string under ``text`` / ``content`` keys, joined (a last turn's words)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_texts(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_texts(v) for k, v in value.items() if k in ("text", "content", "parts"))
    return ""


def read(protocol: str, body: dict[str, Any]) -> Ask:
    return _READERS[protocol](body)


def _chat(body: dict[str, Any]) -> Ask:
    tools = {t["function"]["name"]: t["function"].get("parameters") or {} for t in body.get("tools") or []}
    choice = body.get("tool_choice")
    forced = (
        "*"
        if choice == "required"
        else (choice or {}).get("function", {}).get("name")
        if isinstance(choice, dict)
        else None
    )
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
    last = body["messages"][-1]
    return Ask(
        tools,
        forced,
        schema,
        fmt.get("type") == "json_object",
        last["role"] == "tool",
        _texts(last.get("content")),
    )


def _responses(body: dict[str, Any]) -> Ask:
    tools = {
        t["name"]: t.get("parameters") or {} for t in body.get("tools") or [] if t.get("type") == "function"
    }
    choice = body.get("tool_choice")
    forced = "*" if choice == "required" else choice.get("name") if isinstance(choice, dict) else None
    fmt = ((body.get("text") or {}).get("format")) or {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    last = body["input"][-1]
    after = last.get("type") == "function_call_output"
    return Ask(tools, forced, schema, fmt.get("type") == "json_object", after, _texts(last.get("content")))


def _anthropic(body: dict[str, Any]) -> Ask:
    tools = {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if "input_schema" in t}
    choice = body.get("tool_choice") or {}
    forced = (
        "*" if choice.get("type") == "any" else choice.get("name") if choice.get("type") == "tool" else None
    )
    fmt = (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    last = body["messages"][-1]
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    after = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    return Ask(tools, forced, schema, False, after, _texts(content))


def _gemini(body: dict[str, Any]) -> Ask:
    tools: dict[str, dict[str, Any]] = {}
    for group in body.get("tools") or []:
        for f in group.get("functionDeclarations") or []:
            tools[f["name"]] = f.get("parametersJsonSchema") or f.get("parameters") or {}
    config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    allowed = config.get("allowedFunctionNames") or []
    forced = (allowed[0] if len(allowed) == 1 else "*") if config.get("mode") == "ANY" else None
    generation = body.get("generationConfig") or {}
    schema = generation.get("responseJsonSchema") or generation.get("responseSchema")
    json_mode = generation.get("responseMimeType") == "application/json" and schema is None
    last = body["contents"][-1]
    after = any("functionResponse" in p for p in last.get("parts") or [])
    return Ask(tools, forced, schema, json_mode, after, _texts(last.get("parts")))


def _bedrock(body: dict[str, Any]) -> Ask:
    config = body.get("toolConfig") or {}
    tools = {
        t["toolSpec"]["name"]: t["toolSpec"]["inputSchema"]["json"]
        for t in config.get("tools") or []
        if "toolSpec" in t
    }
    choice = config.get("toolChoice") or {}
    forced = "*" if "any" in choice else (choice.get("tool") or {}).get("name")
    fmt = ((body.get("outputConfig") or {}).get("textFormat") or {}).get("structure") or {}
    raw = (fmt.get("jsonSchema") or {}).get("schema")
    last = body["messages"][-1]
    after = any("toolResult" in block for block in last.get("content") or [])
    return Ask(tools, forced, json.loads(raw) if raw else None, False, after, _texts(last.get("content")))


_READERS = {
    "chat": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
}


def value_for(schema: dict[str, Any], prompt: str, defs: dict[str, Any] | None = None) -> Any:
    """A value matching ``schema``, taken from ``prompt`` where it offers one."""
    defs = defs if defs is not None else schema.get("$defs") or schema.get("definitions") or {}
    if "$ref" in schema:
        return value_for(defs.get(schema["$ref"].split("/")[-1], {}), prompt, defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return value_for(options[0] if options else {}, prompt, defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in schema:
        return schema["enum"][0]
    if kind in ("integer", "number"):
        found = re.search(r"-?\d+", prompt)
        return int(found.group()) if found else 1
    if kind == "boolean":
        return True
    if kind == "array":
        return [value_for(schema.get("items") or {}, prompt, defs)]
    if kind == "object" or "properties" in schema:
        props: dict[str, Any] = schema.get("properties") or {}
        required = schema.get("required", list(props))
        return {name: value_for(sub, prompt, defs) for name, sub in props.items() if name in required}
    quoted = re.search(r"'([^']+)'", prompt)
    return quoted.group(1) if quoted else "example"


def _keys_object(prompt: str) -> dict[str, str]:
    keys = re.findall(r"'([A-Za-z_]+)'", prompt) or ["answer"]
    return {key: f"a {key} about it" for key in keys}


def answer(path: str, body: dict[str, Any]) -> Reply:
    ask = read(protocol_of(path), body)
    usage = {"input_tokens": 25, "output_tokens": 9, "cache_read": 5, "reasoning": 2}
    if ask.after_tool:
        return Reply((Text("The tool says so: done."),), **usage)
    name = ask.forced
    if name is None and ask.tools:
        named = [t for t in ask.tools if t in ask.prompt]
        if named:
            name = named[0]
        else:  # a bound tool is what the suite's prompts want used
            name = "*"
    if name is not None and ask.tools:
        tool = next(iter(ask.tools)) if name == "*" else name
        schema = ask.tools.get(tool) or {}
        args = value_for(schema, ask.prompt) if schema.get("properties") else {}
        if not schema.get("properties") and "JSON" in ask.prompt:  # JSON mode as a forced any-object tool
            args = _keys_object(ask.prompt)
        return Reply((Call(tool, args, id=f"call_{tool}_1"),), **usage)
    if ask.schema is not None:
        return Reply((Text(json.dumps(value_for(ask.schema, ask.prompt))),), **usage)
    if ask.json_mode or "JSON" in ask.prompt:
        return Reply((Text(json.dumps(_keys_object(ask.prompt))),), **usage)
    return Reply((Text("Hello! How can I help?"),), **usage)
