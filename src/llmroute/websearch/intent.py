"""Does the latest user message ask for a web search? A deterministic word-list classifier (no model
call), so an agent can route to the search tool, or hint its main model to, predictably.

Word lists (English is case-insensitive and matches whole words: ``web`` does not fire on ``webpack``,
``now`` not on ``know``; Chinese matches substrings, having no word boundaries):

- Chinese hard hits ``谷歌搜索``, ``谷歌一下``, ``百度一下``: web search, Google-preferred.
- Chinese soft hits: ``上网``; or a search verb (``搜索``, ``查找``, ``搜``) together with a web noun
  (``网络``, ``联网``, ``新闻``, ``信息``, ``报道``).
- English hard hits: ``/search``, ``web search``, ``websearch``, ``internet search``, ``search the web``,
  ``web-search``, ``internet-search``.
- English soft hits: a search verb (``search``, ``find``, ``look up``, ``look for``, ``google``)
  together with a web noun (``web``, ``internet``, ``online``, ``news``, ``information``, ``info``,
  ``report(s)``, ``article(s)``); ``google`` among the verbs makes it Google-preferred.
  Verbs and nouns pair within a language.
- Recency (sets ``recency`` only, never ``web_search``): ``latest``, ``newest``, ``recent(ly)``,
  ``today``, ``tonight``, ``yesterday``, ``current(ly)``, ``now``, ``this week/month/year``,
  ``price(s)``, ``weather``, ``forecast``; version numbers ``v3.12`` or ``3.12.1``; Korean ``최신``,
  ``오늘``, ``현재``, ``지금``, ``가격``, ``날씨``; Chinese ``最新``, ``今天``, ``最近``, ``现在``,
  ``当前``, ``价格``, ``天气``.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["SearchIntent", "classify_intent", "system_hint"]


class SearchIntent(msgspec.Struct, frozen=True):
    """What a user message asks for, read from its words."""

    web_search: bool
    """The message asks for a web search."""
    google_preferred: bool
    """It names Google (or a Chinese hard hit)."""
    recency: bool
    """It asks about something current."""
    hits: tuple[str, ...]
    """The words that fired, in order of first appearance (English lower-cased)."""


def _words(*terms: str) -> re.Pattern[str]:
    # Whole words, case-insensitive; a phrase's words may be separated by any whitespace. Longest
    # first, so "search the web" wins over "search".
    alts = sorted((r"\s+".join(map(re.escape, t.split())) for t in terms), key=len, reverse=True)
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(alts) + r")(?![a-z0-9])", re.IGNORECASE)


def _substrings(*terms: str) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(terms, key=len, reverse=True))))


_ZH_HARD: Final = _substrings("谷歌搜索", "谷歌一下", "百度一下")
_ZH_ALONE: Final = _substrings("上网")
_ZH_VERB: Final = _substrings("搜索", "查找", "搜")
_ZH_NOUN: Final = _substrings("网络", "联网", "新闻", "信息", "报道")
_EN_HARD: Final = _words(
    "web search", "websearch", "internet search", "search the web", "web-search", "internet-search"
)
_EN_SLASH: Final = re.compile(r"(?<![a-z0-9/])/search(?![a-z0-9])", re.IGNORECASE)
_EN_VERB: Final = _words("search", "find", "look up", "look for", "google")
_EN_NOUN: Final = _words(
    "web", "internet", "online", "news", "information", "info", "report", "reports", "article", "articles"
)
_RECENT_EN: Final = _words(
    "latest", "newest", "recent", "recently", "today", "tonight", "yesterday", "current", "currently",
    "now", "this week", "this month", "this year", "price", "prices", "weather", "forecast",
)  # fmt: skip
_RECENT_CJK: Final = _substrings(
    "최신", "오늘", "현재", "지금", "가격", "날씨", "最新", "今天", "最近", "现在", "当前", "价格", "天气"
)
_VERSION: Final = re.compile(r"(?<![\w.])(?:v\d+(?:\.\d+)+|\d+\.\d+\.\d+(?:\.\d+)*)(?!\.?\w)", re.IGNORECASE)


def _find(pattern: re.Pattern[str], text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in pattern.finditer(text)]


def _norm(hit: str) -> str:
    return " ".join(hit.lower().split())


def classify_intent(text: str) -> SearchIntent:
    """Classify the latest user message (see the module docstring for the word lists)."""
    hard_zh = _find(_ZH_HARD, text)
    hard_en = _find(_EN_HARD, text) + _find(_EN_SLASH, text)
    fired: list[tuple[int, int, str]] = hard_zh + hard_en + _find(_ZH_ALONE, text)
    google = bool(hard_zh)
    zh_verbs, zh_nouns = _find(_ZH_VERB, text), _find(_ZH_NOUN, text)
    if zh_verbs and zh_nouns:
        fired += zh_verbs + zh_nouns
    en_verbs, en_nouns = _find(_EN_VERB, text), _find(_EN_NOUN, text)
    if en_verbs and en_nouns:
        fired += en_verbs + en_nouns
        google = google or any(_norm(v) == "google" for _, _, v in en_verbs)
    web_search = bool(fired)
    recent = _find(_RECENT_EN, text) + _find(_RECENT_CJK, text) + _find(_VERSION, text)
    hits: dict[str, None] = {}
    covered = -1  # a hit inside an earlier, longer one ("web" in "web search") is not listed again
    for _, end, hit in sorted(fired + recent, key=lambda h: (h[0], -h[1])):
        if end > covered:
            hits.setdefault(_norm(hit), None)
            covered = end
    return SearchIntent(web_search, google and web_search, bool(recent), tuple(hits))


def system_hint() -> str:
    """A short system-prompt paragraph telling a main model when to call the search tool."""
    return (
        "You have a web search tool. Call it before answering when the question depends on facts that "
        "change or that you cannot know from training: current events and news, software versions "
        "and releases, prices, weather, schedules, or anything asked about with words like latest, "
        "today, now, current, this week, 最新 or 今天. Also call it when the user asks you to search "
        "the web. Do not call it for questions about the user's own files or code, or for stable "
        "knowledge you can answer reliably. Cite what the search returns; never invent a URL."
    )
