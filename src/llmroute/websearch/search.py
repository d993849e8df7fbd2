"""``GroundedSearch``: the ``websearch_grounded`` tool over whichever provider has credentials.

    search = websearch.GroundedSearch(providers=["google", "openrouter"], config="opencode.json",
                                      auth="~/.local/share/opencode/auth.json", client=client)
    result = await search.run({"query": "latest Python release"})   # WebSearchResult
    markdown = await search.report("latest Python release")
    await client.generate(request, tools=[search.tool])             # "websearch_grounded"

Providers are tried in order: one without credentials is skipped, one that still fails after the
retries moves on to the next; the result names the provider that answered. Invalid arguments are
answered without sending anything. Provider, auth and network failures never raise: they come back
as the result's ``error`` (a typed code and a message without secrets). Cancellation propagates.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, cast

import msgspec

from ..client import Client
from ..route.policy import RetryPolicy, Timeouts
from ..route.redact import redact_text
from ..schema.errors import AuthenticationError, LLMError
from ..terminal import sanitize
from ..tools.tool import Tool
from .answer import GroundedAnswer
from .cited import UngroundedAnswerError, render_cited
from .config import (
    PROVIDERS,
    ConfigError,
    Login,
    OAuthLogin,
    ProviderSettings,
    load_auth,
    load_config,
    settings_for,
)
from .extract import collect
from .limits import LimitExceeded, SearchLimits
from .providers import LABELS, MISSING, SEARCH_SYSTEM, Calls, failure_type
from .result import SearchError, WebSearchResult, error_result, render, report_error, report_markdown

__all__ = ["SEARCH_RETRY", "TOOL_NAME", "GroundedSearch", "check_arguments"]

TOOL_NAME = "websearch_grounded"
TOOL_DESCRIPTION = (
    "Search the web and return an answer grounded in the results, with inline [n] citation markers "
    "and a numbered Sources list. Use for current events and facts that may have changed."
)
TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to search for."}},
    "required": ["query"],
    "additionalProperties": False,
}

# 5xx and connection failures: 3 retries, 1 s, 2 s, 4 s (+/- jitter).
SEARCH_RETRY = RetryPolicy(
    max_retries=3, initial_backoff=1.0, multiplier=2.0, statuses=frozenset(range(500, 600))
)
_BODY_SNIPPET = 300


_ONLY_QUERY = f"{TOOL_NAME} only accepts a single 'query' field."


def _bad_arguments(details: str) -> SearchError:
    # the contract's wording: returnDisplay is the sentence alone; llmContent and error.message add why
    return SearchError(f"{_ONLY_QUERY}\n\nDetails: {details}", "INVALID_TOOL_ARGUMENTS", display=_ONLY_QUERY)


def check_arguments(args: Any) -> str | SearchError:
    """The trimmed query, or why the arguments are refused (nothing is sent then)."""
    if not isinstance(args, Mapping):
        return _bad_arguments("arguments must be an object.")
    fields = cast("Mapping[Any, Any]", args)
    unknown = [str(k) for k in fields if k != "query"]
    if unknown:
        return _bad_arguments(f"Unknown argument(s): {', '.join(unknown)}, only 'query' supported.")
    query = fields.get("query")
    if not isinstance(query, str) or not query.strip():
        return SearchError("The 'query' parameter cannot be empty.", "INVALID_QUERY")
    return query.strip()


class GroundedSearch:
    """Grounded web search over ``providers`` (tried in order). ``config`` / ``auth``: opencode's
    config and ``auth.json`` (mapping or path; see ``websearch.config``); ``env`` replaces
    ``os.environ``; ``client`` defaults to one this object owns (close it with ``aclose()`` or
    ``async with``); ``retry`` replaces ``SEARCH_RETRY``; ``timeouts`` bound each provider call;
    ``limits`` (``websearch.limits.SearchLimits``) bounds the query and prompt (checked before
    anything is sent), each response body and the whole search's wall clock; ``on_progress`` receives one line per
    step (which provider is tried, skipped, failed). ``style="cited"`` makes ``llm_content`` the
    answer cited by construction (``websearch.cited.render_cited``: ``[Source](url)`` links taken
    only from the grounding, a ``## Sources`` list) and an answer without citable sources an
    ``UNGROUNDED_ANSWER`` error; the default ``"markers"`` renders ``[n]`` markers."""

    def __init__(
        self,
        providers: Sequence[str] = PROVIDERS,
        *,
        config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        auth: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        client: Client | None = None,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        max_results: int = 5,
        limits: SearchLimits | None = None,
        on_progress: Callable[[str], None] | None = None,
        style: Literal["markers", "cited"] = "markers",
    ) -> None:
        if style not in ("markers", "cited"):
            raise ConfigError(f"style must be 'markers' or 'cited', got {style!r}")
        self.style = style
        self.providers = (providers,) if isinstance(providers, str) else tuple(providers)
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"max_results must be a positive int, got {max_results!r}")
        self.config = load_config(config)
        self.logins: dict[str, Login] = load_auth(auth)
        # a path is read again when a login is refused: the user's own tool may have renewed it
        self._auth_path = None if auth is None or isinstance(auth, Mapping) else auth
        self.env: Mapping[str, str] = os.environ if env is None else env
        unknown = [p for p in self.providers if p not in PROVIDERS]
        if unknown:
            raise ConfigError(
                f"unknown web search provider(s): {', '.join(unknown)}; known: {', '.join(PROVIDERS)}"
            )
        self._owns_client = client is None
        self.client = client if client is not None else Client()
        self.retry = retry or SEARCH_RETRY
        self.timeouts = timeouts or Timeouts(first_byte=120.0, idle=60.0, total=300.0)
        self.limits = limits or SearchLimits()
        self.on_progress = on_progress
        self._calls = Calls(lambda: self.client.http, self.env, max_results)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    async def __aenter__(self) -> GroundedSearch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _progress(self, line: str) -> None:
        if self.on_progress is not None:
            self.on_progress(line)

    # -- the contract ------------------------------------------------------------------------------

    async def run(self, args: Any) -> WebSearchResult:
        """The tool: ``{"query": ...}`` -> ``WebSearchResult``."""
        checked = self._check(args)
        if isinstance(checked, SearchError):
            return error_result(checked)
        outcome = await self.answer(checked)
        if isinstance(outcome, SearchError):
            return error_result(outcome)
        result = render(outcome, checked)
        if self.style == "markers" or not sanitize(outcome.text).strip():
            return result
        try:
            cited = render_cited(outcome)
        except UngroundedAnswerError as exc:
            return error_result(SearchError(str(exc), "UNGROUNDED_ANSWER", provider=outcome.provider))
        return msgspec.structs.replace(result, llm_content=cited)

    async def search(self, query: str) -> WebSearchResult:
        """``run({"query": query})``."""
        return await self.run({"query": query})

    async def report(self, query: str) -> str:
        """The Markdown report of a search (``## Search Results`` ... or the failure's section)."""
        checked = self._check({"query": query})
        outcome = checked if isinstance(checked, SearchError) else await self.answer(checked)
        return report_error(outcome) if isinstance(outcome, SearchError) else report_markdown(outcome)

    def _check(self, args: Any) -> str | SearchError:
        """The query, or why nothing is sent: bad arguments, a query or prompt over the limits."""
        checked = check_arguments(args)
        if isinstance(checked, SearchError):
            return checked
        try:
            self.limits.check_query(checked)
            self.limits.check_prompt(SEARCH_SYSTEM, checked)
        except LimitExceeded as exc:
            return SearchError(exc.message, exc.code)
        return checked

    @property
    def tool(self) -> Tool:
        """``websearch_grounded`` for the core's tool runtime; its result is ``to_builtins()``."""

        async def handler(args: Any) -> dict[str, Any]:
            return (await self.run(args)).to_builtins()

        return Tool.dynamic(TOOL_NAME, TOOL_SCHEMA, handler, description=TOOL_DESCRIPTION)

    # -- providers in order ------------------------------------------------------------------------

    async def _ask(self, settings: ProviderSettings, query: str) -> GroundedAnswer:
        """One provider's answer. A refused OAuth login is asked once more: with the login now in
        the ``auth`` file when the user's own tool has renewed it there (nothing is refreshed, so
        no refresh token is rotated behind that tool's back), else refreshed when it can be."""
        try:
            return await self._once(settings, query)
        except AuthenticationError:
            renewed = self._renewed_login(settings)
            if renewed is not None:
                self._progress(f"{settings.id}: login refused; the auth file has a newer one, using it")
                return await self._once(renewed, query)
            if not self._calls.reauthorize(settings.id):
                raise
            self._progress(f"{settings.id}: login refused, refreshing it once")
            return await self._once(settings, query)

    def _renewed_login(self, settings: ProviderSettings) -> ProviderSettings | None:
        """The provider's settings with the OAuth login the ``auth`` file holds now, when that
        differs from the refused one; ``None`` otherwise (or when the file cannot be read)."""
        if self._auth_path is None or not isinstance(settings.login, OAuthLogin):
            return None
        try:
            fresh = load_auth(self._auth_path).get(settings.id)
        except ConfigError:
            return None
        if not isinstance(fresh, OAuthLogin) or fresh.access.reveal() == settings.login.access.reveal():
            return None
        self.logins[settings.id] = fresh
        self._calls.forget(settings.id)
        return settings_for(settings.id, self.config, self.logins, self.env)

    async def _once(self, settings: ProviderSettings, query: str) -> GroundedAnswer:
        request = await self._calls.build(settings, query)
        stream = self.client.stream(
            request,
            retry=self.retry,
            timeouts=self.timeouts,
            max_response_bytes=self.limits.max_response_bytes,
        )
        async with stream as events:
            return await collect(events, provider=settings.id, model=settings.model)

    async def answer(self, query: str) -> GroundedAnswer | SearchError:
        """The first provider's answer, or the error to report (the last failure; when every
        provider lacked credentials, what to set for each; ``SEARCH_TIMEOUT`` when the whole search
        outlived ``limits.timeout``)."""
        try:
            with self.limits.wall_clock():
                return await self._in_order(query)
        except LimitExceeded as exc:
            return SearchError(exc.message, exc.code)

    async def _in_order(self, query: str) -> GroundedAnswer | SearchError:
        missing: list[tuple[str, SearchError]] = []
        failure: SearchError | None = None
        for provider in self.providers:
            settings = settings_for(provider, self.config, self.logins, self.env)
            if settings.login is None:
                kind, message = MISSING[provider]
                missing.append((provider, SearchError(message, kind, provider=provider)))
                self._progress(f"{provider}: no credentials, skipped")
                continue
            self._progress(f"{provider}: searching with {settings.model}")
            try:
                answer = await self._ask(settings, query)
            except Exception as exc:  # never raised to the caller: reported as the result's error
                failure = _failure(settings, exc, self.limits)
                self._progress(f"{provider}: failed ({failure.message.splitlines()[0]})")
                continue
            self._progress(f"{provider}: answered")
            return answer
        if failure is not None:
            return failure
        if len(missing) == 1:
            return missing[0][1]
        names = ", ".join(p for p, _ in missing) or "none"
        lines = "\n".join(f"- {e.message}" for _, e in missing)
        return SearchError(
            f"No web search provider has credentials (tried: {names}).\n{lines}", "NO_PROVIDERS_AVAILABLE"
        )


def _failure(settings: ProviderSettings, exc: Exception, limits: SearchLimits) -> SearchError:
    """A provider failure as a ``SearchError``: the core's message (already redacted), the HTTP
    status, and a bounded, sanitised excerpt of the error body. An exception that is not an
    ``LLMError`` is a bug: only its type is reported."""
    label = f"{LABELS[settings.id]} web search failed ({settings.model})"
    if not isinstance(exc, LLMError):
        return SearchError(
            f"{label}: internal error ({type(exc).__name__})", failure_type(settings), None, settings.id
        )
    limit = limits.exceeded(exc)
    if limit is not None:  # the response cap or a total deadline: the limit's own code
        return SearchError(f"{label}: {limit.message}", limit.code, None, settings.id)
    status = exc.http.status if exc.http is not None else None
    message = f"{label}: {sanitize(redact_text(str(exc)))}"
    body = exc.http.body if exc.http is not None else None
    # an HTML error page is named by its title in the core's message: its markup adds nothing
    if body and status is not None and status >= 400 and not body.lstrip().startswith("<"):
        snippet = " ".join(sanitize(redact_text(body)).split())
        if snippet and snippet not in message:
            if len(snippet) > _BODY_SNIPPET:
                snippet = snippet[:_BODY_SNIPPET] + "…"
            message += f"\nResponse body: {snippet}"
    return SearchError(message, failure_type(settings), status, settings.id)
