"""From the id a user passes to the ids the data sources list.

Users name models the way their provider's API takes them: dated snapshots, Bedrock inference
profiles and ARNs, Vertex publisher paths, ``models/`` prefixes, OpenRouter ``vendor/model``. Each rule
here rewrites one such spelling into the catalog's; none invents a model (an id that no rule maps to a
listed one is unknown).
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["SOURCES", "Sources", "bare_id", "limit_candidates", "price_ref", "sources_for"]


class Sources(msgspec.Struct, frozen=True):
    """Where an llmroute provider's models are listed: models.dev provider ids (limits and
    capabilities) and the genai-prices provider id (prices)."""

    models_dev: tuple[str, ...]
    """models.dev provider ids (limits and capabilities), first match wins."""
    prices: str | None
    """The genai-prices provider id (``None``: no prices)."""


# llmroute provider name -> its rows in each source. A name missing here is looked up under itself.
SOURCES: dict[str, Sources] = {
    "openai": Sources(("openai",), "openai"),
    "anthropic": Sources(("anthropic",), "anthropic"),
    "google": Sources(("google",), "google"),  # also google.code_assist (same model names)
    "vertex": Sources(("google-vertex", "google-vertex-anthropic"), "google"),
    "bedrock": Sources(("amazon-bedrock",), "aws"),
    "azure": Sources(("azure",), "azure"),
    "openrouter": Sources(("openrouter",), "openrouter"),
    "xai": Sources(("xai",), "x-ai"),
    "glm": Sources(("zai", "zhipuai"), "zai"),
    "deepseek": Sources(("deepseek",), "deepseek"),
    "groq": Sources(("groq",), "groq"),
    "togetherai": Sources(("togetherai",), "together"),
    "fireworks": Sources(("fireworks-ai",), "fireworks"),
    "cerebras": Sources(("cerebras",), "cerebras"),
    "deepinfra": Sources(("deepinfra",), None),
    "baseten": Sources(("baseten",), "baseten"),
    "mistral": Sources(("mistral",), "mistral"),
}


def sources_for(provider: str) -> Sources:
    return SOURCES.get(provider) or Sources((provider,), provider)


_BEDROCK_ARN = re.compile(r"^arn:aws[\w-]*:bedrock:[\w-]*:\d*:(?:inference-profile|foundation-model)/(.+)$")
_VERTEX_PATH = re.compile(r"^(?:projects/[^/]+/locations/[^/]+/)?publishers/([^/]+)/models/(.+)$")
# Cross-region inference profile prefixes (https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html)
_BEDROCK_REGION = re.compile(r"^(?:us|eu|apac|au|jp|ca|us-gov|global)\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
# A snapshot date at the end: -2024-08-06, -20250929, @20250514 (Vertex), @default.
_DATE_SUFFIX = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|@default)$")


def bare_id(provider: str, model_id: str) -> str:
    """The model id without the wrapping some APIs add: a Bedrock ARN's resource, a Vertex publisher
    path's model, Gemini's ``models/`` prefix. Application inference profile ARNs name no model and
    stay as they are (map them with ``catalog.alias``)."""
    model_id = model_id.strip()
    if provider == "bedrock" and (m := _BEDROCK_ARN.match(model_id)):
        return m.group(1)
    if m := _VERTEX_PATH.match(model_id):
        return m.group(2)
    return model_id.removeprefix("models/")


def _undated(model_id: str) -> str | None:
    stripped = _DATE_SUFFIX.sub("", model_id)
    return stripped if stripped != model_id else None


def limit_candidates(provider: str, model_id: str) -> list[tuple[str, str]]:
    """(models.dev provider, model id) pairs to try, most specific first. A snapshot shares its
    family's limits, so a dated id falls back to the undated one; a model hosted by a cloud falls
    back to its maker's listing (Bedrock and Vertex Claude, Azure OpenAI)."""
    mid = bare_id(provider, model_id)
    out: list[tuple[str, str]] = []

    def add(md_provider: str, candidate: str | None) -> None:
        if candidate and (md_provider, candidate) not in out:
            out.append((md_provider, candidate))

    rows = sources_for(provider).models_dev
    for row in rows:
        add(row, mid)
        add(row, mid.lower())
    if provider == "bedrock":
        regional = _BEDROCK_REGION.sub("", mid)
        add(rows[0], regional)
        vendor, _, rest = regional.partition(".")
        if vendor == "anthropic" and rest:
            plain = _BEDROCK_VERSION.sub("", rest)
            add("anthropic", plain)
            add("anthropic", _undated(plain))
    if provider == "vertex" and "@" in mid:
        name, _, date = mid.partition("@")
        add("anthropic", f"{name}-{date}" if date.isdigit() else name)
        add("anthropic", name)
    for row in rows:
        add(row, _undated(mid))
    if provider == "azure":
        add("openai", mid)
        add("openai", _undated(mid))
    return out


def price_ref(provider: str, model_id: str) -> str:
    """The model reference genai-prices matches (its own rules handle dates and Bedrock regions)."""
    return bare_id(provider, model_id)
