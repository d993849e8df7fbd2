"""``websearch.check_citations``: a passing answer, one failing answer per rule (with where it
fails), and the Markdown cases that decide what counts as a citation."""

from __future__ import annotations

import pytest

from llmroute.websearch.contract import RULES, check_citations

A, B = (
    "https://docs.python.org/3/whatsnew/3.13.html",
    "https://en.wikipedia.org/wiki/Python_(programming_language)",
)
GOOD = f"""Python 3.13 added a new REPL [Source]({A}). It is named after Monty Python [Source]({B}).

## Sources

- [What's New In Python 3.13]({A})
- [Python (programming language)]({B})
"""


def test_a_good_answer_passes_every_rule() -> None:
    report = check_citations(GOOD, searched=2, allowed_urls=[A, B, "https://unused.test/"])
    assert report.ok and report.violations == ()
    assert report.inline_urls == (A, B) and report.source_urls == (A, B)


def _swap(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


FAILING: list[tuple[str, str, dict[str, object], str | None]] = [
    # (rule, answer, check kwargs, the text the violation points at — None: about the whole answer)
    ("sources-heading", _swap("## Sources", "## Sources:"), {}, None),
    ("inline-citation", f"Python 3.13 added a new REPL `[Source]({A})`.\n\n## Sources\n", {}, None),
    (
        "inline-citation",
        _swap(f"[Source]({B})", f"[Source]({B}) [Source](ftp://files.test/b)"),
        {},
        "[Source](ftp://files.test/b)",
    ),
    (
        "forbidden-host",
        GOOD.replace(A, "https://docs.example.com/x"),
        {},
        "[Source](https://docs.example.com/x)",
    ),
    (
        "forbidden-host",
        GOOD.replace(A, "https://YOUR-SOURCE.com./a"),
        {},
        "[Source](https://YOUR-SOURCE.com./a)",
    ),
    ("forbidden-token", GOOD.replace(A, "https://python.org/TODO"), {}, "[Source](https://python.org/TODO)"),
    ("forbidden-token", GOOD.replace(A, "https://python.org/..."), {}, "[Source](https://python.org/...)"),
    ("set-equality", _swap(f"- [Python (programming language)]({B})\n", ""), {}, f"[Source]({B})"),
    ("set-equality", GOOD + "- https://peps.python.org/pep-0745/\n", {}, "https://peps.python.org/pep-0745/"),
    ("set-equality", GOOD + f"- [again]({A})\n", {}, f"[again]({A})"),
    ("set-equality", GOOD + "- the official docs\n", {}, "- the official docs"),
    (
        "url-compare",
        _swap(f"- [What's New In Python 3.13]({A})", f"- [What's New]({A.upper()})"),
        {},
        f"[Source]({A})",
    ),
    ("sources-last", GOOD + "\nHope this helps!\n", {}, "Hope this helps!"),
    ("sources-last", GOOD + "\n## Notes\n", {}, "## Notes"),
    ("sources-last", GOOD + "\n```\ncode\n```\n", {}, "```\ncode\n```\n"),
    ("search-evidence", GOOD, {"searched": 0}, None),
    ("provenance", GOOD, {"allowed_urls": [A]}, f"[Source]({B})"),
]


@pytest.mark.parametrize(
    ("rule", "answer", "kwargs", "at"), FAILING, ids=[f"{f[0]}-{n}" for n, f in enumerate(FAILING)]
)
def test_each_rule_has_a_failing_answer(
    rule: str, answer: str, kwargs: dict[str, object], at: str | None
) -> None:
    report = check_citations(answer, **kwargs)  # type: ignore[arg-type]
    assert not report.ok
    assert report.rules() == (rule,), report.violations
    violation = report.violations[0]
    assert violation.detail
    if at is None:
        assert (violation.start, violation.end, violation.line) == (None, None, None)
    else:
        assert violation.start is not None and violation.end is not None
        assert answer[violation.start : violation.end] == at
        assert violation.line == answer.count("\n", 0, violation.start) + 1


def test_every_rule_is_exercised() -> None:
    assert {f[0] for f in FAILING} == set(RULES)


def test_urls_compare_after_trimming_trailing_punctuation_only() -> None:
    answer = f"Claim [Source]({A}). More [Source]({B}).\n\n## Sources\n\n1. {A};\n2. <{B}>\n"
    report = check_citations(answer)
    assert report.ok, report.violations
    assert report.source_urls == (A, B)


@pytest.mark.parametrize(
    "hidden",
    [
        f"![Source]({A})",  # an image, not a link
        f"`[Source]({A})`",  # a code span
        f"``x `[Source]({A})` y``",  # a longer code span containing backticks
        f"\\[Source]({A})",  # an escaped bracket
        f'<a title="[Source]({A})">x</a>',  # inside an HTML tag
        f"<!-- [Source]({A}) -->",  # an HTML comment
        f"```\n[Source]({A})\n```",  # fenced code
        f"~~~~python\n[Source]({A})\n~~~~",  # tilde fence with an info string
        f"<div>\n[Source]({A})\n</div>",  # an HTML block
        f"```\n[Source]({A})",  # an unclosed fence runs to the end
        f"[Source](<{A}>)",  # angle-bracket destinations are not followed
        f"[Source]({A}`x`)",  # a destination with a backtick
    ],
)
def test_citations_in_code_html_or_images_do_not_count(hidden: str) -> None:
    answer = f"Claim:\n\n{hidden}\n\n## Sources\n"
    report = check_citations(answer)
    assert "inline-citation" in report.rules() and report.inline_urls == ()
    if not hidden.startswith("```\n[Source]") or hidden.endswith("```"):  # an unclosed fence eats the heading
        assert report.rules() == ("inline-citation",)


def test_links_next_to_code_and_html_still_count() -> None:
    answer = f"`code` then [Source]({A}) <b>bold</b> `a`b\n\n## Sources\n\n- {A}\n"
    assert check_citations(answer).ok
    # a heading inside fenced code is not the heading
    fenced = f"Claim [Source]({A})\n\n```\n## Sources\n```\n"
    assert "sources-heading" in check_citations(fenced).rules()


def test_no_results_passes_only_with_a_search() -> None:
    assert check_citations("NO_RESULTS", searched=1).ok
    assert check_citations("  NO_RESULTS\n", searched=3).ok
    assert check_citations("NO_RESULTS").rules() == ("search-evidence",)
    assert check_citations("NO_RESULTS", searched=0).rules() == ("search-evidence",)


def test_an_empty_answer_breaks_the_structural_rules() -> None:
    assert check_citations("").rules() == ("sources-heading", "inline-citation")


def test_details_never_carry_control_sequences() -> None:
    evil = "https://evil.test/\u202eexe.txt"
    report = check_citations(f"Claim [Source]({evil})\n\n## Sources\n\n- [x]({evil})\n", allowed_urls=[A])
    assert report.rules() == ("provenance",)
    assert "\u202e" not in report.violations[0].detail and "evil.test/exe.txt" in report.violations[0].detail


def test_source_entries_may_carry_an_indented_description() -> None:
    answer = f"Claim [Source]({A}).\n\n## Sources\n\n1. [What's New]({A})\n   The release notes.\n"
    assert check_citations(answer).ok
    assert check_citations(answer.replace("   The", "The")).rules() == ("sources-last",)
