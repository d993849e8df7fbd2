"""websearch/contract.py pinned: every placeholder host and token the docstring lists (so dropping a
table entry fails), the URL trimming set, URLs with no host, line numbers, the Sources section's
entry shapes and the checker's verdicts."""

from __future__ import annotations

import pytest

from llmroute.websearch.contract import NO_RESULTS, RULES, check_citations, url_key, url_problem

A = "https://docs.python.org/3/"
B = "https://peps.python.org/pep-0703/"


def answer(inline: list[str], listed: list[str], *, tail: str = "") -> str:
    body = " ".join(f"Claim {n} [Source]({u})." for n, u in enumerate(inline))
    entries = "".join(f"- [{u}]({u})\n" for u in listed)
    return f"{body}\n\n## Sources\n\n{entries}{tail}"


# -- url_problem ----------------------------------------------------------------------------------

FORBIDDEN_HOSTS = ["example.com", "example.org", "example.net", "foo.com", "bar.com", "your-source.com"]


@pytest.mark.parametrize("host", FORBIDDEN_HOSTS)
@pytest.mark.parametrize(
    "form", ["https://{}/a", "http://{}./a", "https://docs.{}/a", "https://A.B.{}:8443/"]
)
def test_every_placeholder_host_and_its_subdomains(host: str, form: str) -> None:
    url = form.format(host.upper() if "A.B" in form else host)
    problem = url_problem(url)
    assert problem is not None and problem[0] == "forbidden-host"
    assert problem[1] == f"{url!r} is on {host}, a placeholder host"
    report = check_citations(answer([url], [url]))
    assert report.rules() == ("forbidden-host",)


@pytest.mark.parametrize(
    "url",
    [
        "https://notexample.com/",
        "https://example.com.evil.test/",
        "https://example.co/",
        "https://foo.community/",
    ],
)
def test_hosts_that_only_look_like_placeholders(url: str) -> None:
    assert url_problem(url) is None


FORBIDDEN_TOKENS = [("...", "..."), ("…", "…"), ("todo", "TODO"), ("placeholder", "PlaceHolder"), ("your-source", "YOUR-SOURCE")]  # fmt: skip


@pytest.mark.parametrize(("token", "written"), FORBIDDEN_TOKENS)
def test_every_placeholder_token_in_any_case(token: str, written: str) -> None:
    url = f"https://real.test/a{written}b"
    assert url_problem(url) == ("forbidden-token", f"{url!r} contains the placeholder {token!r}")
    assert check_citations(answer([url], [url])).rules() == ("forbidden-token",)


@pytest.mark.parametrize(
    ("url", "detail"),
    [
        ("http://", "is not an http(s) URL"),
        ("https:///path", "is not an http(s) URL"),
        ("https://./x", "is not an http(s) URL"),
        ("ftp://files.test/a", "is not an http(s) URL"),
        ("mailto:a@b.test", "is not an http(s) URL"),
        ("http://[::1/x", "is not a valid URL"),
    ],
)
def test_urls_without_an_http_host(url: str, detail: str) -> None:
    assert url_problem(url) == ("inline-citation", f"{url!r} {detail}")


def test_upper_case_schemes_are_http() -> None:
    assert url_problem("HTTPS://docs.python.org/") is None
    assert url_problem("Http://docs.python.org/") is None


@pytest.mark.parametrize("mark", list(".,;:!?)]"))
def test_url_key_trims_each_trailing_mark(mark: str) -> None:
    assert url_key(f"{A}{mark}{mark}") == A
    report = check_citations(answer([A + mark], [A]))
    assert report.ok, report.violations


def test_url_key_keeps_other_trailing_characters() -> None:
    for keep in ("/", "(", "[", "'", "-", "#"):
        assert url_key(A + keep) == A + keep


def test_a_long_url_is_shown_cut_in_details() -> None:
    long = "https://example.com/" + "a" * 400
    (violation,) = check_citations(answer([long], [long])).violations[:1]
    shown = violation.detail.split("'")[1]
    assert len(shown) == 200 and shown.endswith("…") and shown.startswith("https://example.com/aaa")
    exact = "https://example.com/" + "a" * 180  # exactly 200 characters: shown whole
    assert f"{exact!r}" in url_problem(exact)[1]  # type: ignore[index]


# -- verdicts ---------------------------------------------------------------------------------------


def test_search_evidence_and_no_results() -> None:
    assert check_citations(answer([A], [A]), searched=1).ok
    (v,) = check_citations(answer([A], [A]), searched=0).violations
    assert (v.rule, v.detail) == (
        "search-evidence",
        "the answer rests on 0 successful searches; at least 1 is required",
    )
    assert check_citations(NO_RESULTS, searched=1).ok
    assert check_citations(f"  {NO_RESULTS}\n", searched=3).ok
    assert check_citations(NO_RESULTS).rules() == ("search-evidence",)
    assert check_citations(NO_RESULTS, searched=0).rules() == ("search-evidence",)
    assert len(check_citations(NO_RESULTS, searched=0).violations) == 1


def test_violations_carry_positions_and_line_numbers() -> None:
    text = answer([A], [A, B])
    report = check_citations(text)
    (v,) = report.violations
    assert v.rule == "set-equality"
    assert v.start is not None and v.end is not None and text[v.start : v.end] == f"[{B}]({B})"
    assert v.line == 6
    first = check_citations(f"[Source](ftp://x.test/a)\n\n## Sources\n\n- {A}\n")
    assert next((x.rule, x.line) for x in first.violations if x.start is not None) == ("inline-citation", 1)
    assert first.violations[0].line is None  # "no citation at all" is about the whole answer


def test_the_report_lists_inline_and_source_urls_in_order_once() -> None:
    report = check_citations(answer([B, A, B + "."], [A, B]))
    assert report.ok
    assert report.inline_urls == (B, A) and report.source_urls == (A, B)


def test_duplicate_source_entries_and_entries_without_urls() -> None:
    report = check_citations(answer([A], [A, A + "."]))
    assert [(v.rule, v.detail) for v in report.violations] == [
        ("set-equality", f"{A + '.'!r} is listed under Sources more than once")
    ]
    report = check_citations(answer([A], [A], tail="- a book on a shelf\n"))
    assert [(v.rule, v.detail) for v in report.violations] == [
        ("set-equality", "a source entry without a URL")
    ]


def test_both_directions_of_set_equality_and_case() -> None:
    report = check_citations(answer([A, B], [A, "https://other.test/"]))
    assert [(v.rule, v.detail) for v in report.violations] == [
        ("set-equality", f"{B!r} is cited inline but not listed under Sources"),
        ("set-equality", "'https://other.test/' is listed under Sources but never cited inline"),
    ]
    upper = A.replace("docs", "DOCS")
    report = check_citations(answer([A], [upper]))
    assert [v.rule for v in report.violations] == ["url-compare"]
    assert report.violations[0].detail == (
        f"{A!r} and the Sources entry {upper!r} differ in case; URLs must be byte-identical"
    )


def test_provenance() -> None:
    assert check_citations(answer([A], [A]), allowed_urls=[A + ")"]).ok
    report = check_citations(answer([A, B], [A, B]), allowed_urls=[A])
    assert [(v.rule, v.detail) for v in report.violations] == [
        ("provenance", f"{B!r} is not a URL this search returned")
    ]  # reported once though cited inline and listed


@pytest.mark.parametrize(
    "entry",
    [
        "- {u}",
        "* {u}",
        "+ {u}",
        "1. {u}",
        "12) {u}",
        "   - {u}",
        "[{u}]({u})",
        "<{u}>",
        "{u}",
        "-\t{u}",
        "1.\t[title]({u})",
    ],
)
def test_source_entry_shapes(entry: str) -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n{entry.format(u=A)}\n"
    report = check_citations(text)
    assert report.ok, report.violations
    assert report.source_urls == (A,)


@pytest.mark.parametrize(
    "line",
    ["Thanks for reading!", "### More", "-no space", "1.no space", "0123456789. ten digits"],
)
def test_lines_after_the_sources_that_are_not_entries(line: str) -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- {A}\n\n{line}\n"
    assert "sources-last" in check_citations(text).rules()


def test_descriptions_under_an_entry_need_indentation() -> None:
    ok = f"Claim [Source]({A}).\n\n## Sources\n\n- {A}\n  The docs.\n\tMore docs.\n"
    assert check_citations(ok).ok
    flat = f"Claim [Source]({A}).\n\n## Sources\n\n- {A}\n The docs.\n"
    assert check_citations(flat).rules() == ("sources-last",)
    first = f"Claim [Source]({A}).\n\n## Sources\n\n  Indented prose.\n- {A}\n"
    assert check_citations(first).rules() == ("sources-last",)


def test_bare_urls_in_code_spans_and_links_are_not_double_counted() -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- [{A}]({A}) and `{B}`\n"
    report = check_citations(text)
    assert report.ok and report.source_urls == (A,)
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- see {A}, then\n"
    assert check_citations(text).source_urls == (A,)
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- `code` {A}\n"
    assert check_citations(text).source_urls == (A,)


def test_code_after_the_heading_is_reported() -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- {A}\n\n```\ncode\n```\n"
    report = check_citations(text)
    assert report.rules() == ("sources-last",)
    assert report.violations[0].detail == "code or HTML after the Sources heading"
    before = f"```\nx\n```\n\nClaim [Source]({A}).\n\n## Sources\n\n- {A}\n"
    assert check_citations(before).ok


def test_the_heading_inside_code_does_not_count_and_inline_citations_after_it_do_not_count() -> None:
    text = f"Claim [Source]({A}).\n\n```\n## Sources\n```\n"
    assert check_citations(text).rules() == ("sources-heading", "sources-last")[:1]
    after = f"Claim.\n\n## Sources\n\n- {A}\n\n[Source]({A})\n"
    report = check_citations(after)
    assert "inline-citation" in report.rules()
    v = next(v for v in report.violations if v.rule == "inline-citation")
    assert v.detail == "no [Source](http(s)://…) citation outside code and HTML before the Sources heading"
    assert check_citations("No citations at all.").violations[1].detail == (
        "no [Source](http(s)://…) citation outside code and HTML"
    )


def test_rule_order_is_the_checker_order() -> None:
    text = (
        f"Claim [Source](https://example.com/x) [Source](ftp://a.test/).\n\n## Sources\n\n- {A}\n\nProse.\n"
    )
    report = check_citations(text, searched=0, allowed_urls=[])
    assert list(report.rules()) == sorted(report.rules(), key=RULES.index)
    assert report.rules()[0] == "inline-citation"
    assert report.rules()[-1] == "provenance"


@pytest.mark.parametrize(
    ("entry", "url"),
    [
        ("- http://docs.python.org/3/", "http://docs.python.org/3/"),
        ("http://docs.python.org/3/", "http://docs.python.org/3/"),
        ("- http://a", "http://a"),
        (f"- {A}<br>", A),
        (f"- {A}> see", A),
        (f"- {A}`x`", A),
        (f'- "{A}"', A),
        (f"- '{A}'", A),
        (f"- <{A.upper()}>", A.upper()),
        ("- <git+ssh.v-2:x>", "git+ssh.v-2:x"),
        ("- <ab:>", "ab:"),
        ("- <" + "a" * 32 + ":x>", "a" * 32 + ":x"),
        (f"   [docs]({A})", A),
        (f"123456789. {A}", A),
    ],
)
def test_urls_found_in_a_source_entry(entry: str, url: str) -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n{entry}\n"
    assert check_citations(text).source_urls == (url,)


def test_a_bare_marker_is_an_entry_without_a_url() -> None:
    text = f"Claim [Source]({A}).\n\n## Sources\n\n- {A}\n-\n"
    assert [(v.rule, v.detail) for v in check_citations(text).violations] == [
        ("set-equality", "a source entry without a URL")
    ]


def test_the_heading_right_after_a_closed_fence_counts() -> None:
    text = f"Claim [Source]({A}).\n```\ncode\n```\n## Sources\n- {A}\n"
    assert check_citations(text).ok
