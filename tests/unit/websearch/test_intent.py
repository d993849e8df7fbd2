"""``websearch.classify_intent``: one table pins the behaviour (zh, en, ko, mixed, negatives)."""

from __future__ import annotations

import pytest

from llmroute.websearch.intent import SearchIntent, classify_intent, system_hint

W, G, R = "web", "google", "recent"
# (sentence, flags among {W, G, R}, hits)
TABLE: list[tuple[str, set[str], tuple[str, ...]]] = [
    # Chinese hard hits: web search, Google-preferred
    ("帮我谷歌搜索一下这个错误", {W, G}, ("谷歌搜索",)),
    ("谷歌一下 Rust 2024 edition", {W, G}, ("谷歌一下",)),
    ("百度一下今天的天气", {W, G, R}, ("百度一下", "今天", "天气")),
    # Chinese soft hits
    ("上网查一下这家公司", {W}, ("上网",)),
    ("搜索一下关于量子计算的新闻", {W}, ("搜索", "新闻")),
    ("请联网查找这个漏洞的信息", {W}, ("联网", "查找", "信息")),
    ("搜一下最新的报道", {W, R}, ("搜", "最新", "报道")),
    ("在网络上搜索 Python 3.13.1 的发布说明", {W, R}, ("网络", "搜索", "3.13.1")),
    # Chinese negatives
    ("在这个文件里查找所有的TODO", set(), ()),
    ("搜索这个函数的定义", set(), ()),
    ("这条信息是什么意思?", set(), ()),
    ("今天我们重构一下代码", {R}, ("今天",)),
    ("最新的提交破坏了构建", {R}, ("最新",)),
    # English hard hits
    ("/search rust async runtimes", {W}, ("/search",)),
    ("Do a web search for the CVE", {W}, ("web search",)),
    ("websearch: who won the match", {W}, ("websearch",)),
    ("Run an internet search on this company", {W}, ("internet search",)),
    ("Please SEARCH THE WEB for reviews", {W}, ("search the web",)),
    ("web-search this error message", {W}, ("web-search",)),
    ("internet-search the quote", {W}, ("internet-search",)),
    # English soft hits
    ("Search online for the best laptop", {W}, ("search", "online")),
    ("find news about the election", {W}, ("find", "news")),
    ("Can you look up information on mitochondria?", {W}, ("look up", "information")),
    ("look for articles on retrieval augmentation", {W}, ("look for", "articles")),
    ("Google the latest reports on inflation", {W, G, R}, ("google", "latest", "reports")),
    ("find info about v3.12 on the internet", {W, R}, ("find", "info", "v3.12", "internet")),
    ("search the report archive today", {W, R}, ("search", "report", "today")),
    # English recency only
    ("What's the latest Python version?", {R}, ("latest",)),
    ("What is the weather like now?", {R}, ("weather", "now")),
    ("bitcoin price this week", {R}, ("price", "this week")),
    ("does 3.12.1 fix the regression?", {R}, ("3.12.1",)),
    ("what is the current release?", {R}, ("current",)),
    # English negatives
    ("search this file for TODOs", set(), ()),
    ("find the bug", set(), ()),
    ("find the webpack config", set(), ()),  # whole words: web != webpack
    ("I know the answer", set(), ()),  # now != know
    ("do some research on this function", set(), ()),  # search != research
    ("google it", set(), ()),  # a verb without a web noun
    ("Python 3.12 has a new parser", set(), ()),  # x.y alone is not read as a version
    ("update the info panel", set(), ()),  # a noun without a verb
    # Korean: recency only
    ("최신 뉴스 알려줘", {R}, ("최신",)),
    ("오늘 날씨 어때?", {R}, ("오늘", "날씨")),
    ("이 함수의 버그를 찾아줘", set(), ()),
    # mixed
    ("帮我search一下最新的news", {W, R}, ("search", "最新", "news")),
    ("用google查找一下AI新闻", {W}, ("查找", "新闻")),  # Chinese pair; English google lacks a noun
    ("오늘 web search 해줘", {W, R}, ("오늘", "web search")),
    ("最新のニュースを search the web で", {W, R}, ("最新", "search the web")),
]


@pytest.mark.parametrize(("text", "flags", "hits"), TABLE, ids=[t[0] for t in TABLE])
def test_classifier_table(text: str, flags: set[str], hits: tuple[str, ...]) -> None:
    assert classify_intent(text) == SearchIntent(W in flags, G in flags, R in flags, hits)


def test_the_table_is_big_and_covers_every_outcome() -> None:
    assert len(TABLE) >= 40
    assert {frozenset(f) for _, f, _ in TABLE} >= {
        frozenset(),
        frozenset({W}),
        frozenset({R}),
        frozenset({W, G}),
    }


def test_phrases_tolerate_any_whitespace_and_case() -> None:
    assert classify_intent("Look\n  UP the News").hits == ("look up", "news")


def test_system_hint_names_when_to_search() -> None:
    hint = system_hint()
    for word in ("current events", "versions", "prices", "weather", "latest", "today"):
        assert word in hint
    assert len(hint) < 800
