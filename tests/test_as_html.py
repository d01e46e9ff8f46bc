"""The HTML export: one self-contained page, whatever the session holds shows as its text and
nothing of it acts (no script, no tag, no attribute, nothing fetched)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from handoff_cli.agents import load_session
from handoff_cli.document import wrap_document
from handoff_cli.export import as_html
from handoff_cli.export.as_html import text
from handoff_cli.export.transcript import transcript_of
from handoff_cli.sessions.tree import branch, leaf
from handoff_cli.text import readable

from .conftest import EXAMPLES, FIXTURES, HOSTILE, Entries, hostile_session, write_session
from .test_as_markdown import Page

OURS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "dl", "dt", "dd", "main",
    "section", "h2", "span", "div", "p", "details", "summary", "pre", "footer",
}  # fmt: skip
"""Every tag the page is made of."""
MARKDOWN = {
    "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "strong", "em", "code",
    "blockquote", "hr", "br", "pre",
}  # fmt: skip
"""Every tag markdown-it makes of CommonMark (with no attribute: ``ol``'s ``start`` aside)."""
ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "open", "start"}
CLASSES = {
    "user", "assistant", "agent", "tool", "mark", "time", "text", "note", "label", "failed",
    "md", "address",
}  # fmt: skip


def exported(path: Path, agent: str = "omp") -> str:
    session = load_session(path)
    made = transcript_of(session, branch(session, leaf(session)), agent)
    return "".join(as_html.render(made))


def test_nothing_a_session_holds_acts_in_the_page(tmp_path: Path) -> None:
    page_html = exported(hostile_session(tmp_path / "s.jsonl"))
    page = Page(page_html)
    assert {tag for tag, _ in page.tags} <= OURS | MARKDOWN
    assert {name for _, attributes in page.tags for name, _ in attributes} <= ATTRIBUTES
    classes = {v for _, attributes in page.tags for k, v in attributes if k == "class"}
    assert classes <= CLASSES
    assert page.count("details") == page.closed.count("details") == 7
    assert page.count("section") == page.closed.count("section")
    assert not re.search(r"<(script|img|a|iframe|object|link)\b", page_html, re.IGNORECASE)
    assert "javascript:alert(3)" in page.text  # there as text, and only as text
    for hostile in HOSTILE:
        for line in hostile.split("\n"):
            assert line.strip() in page.text, line


def test_the_page_is_self_contained_and_says_so_to_the_browser() -> None:
    page_html = exported(next(EXAMPLES.glob("-home-dev-projects-weather-cli/*.jsonl")))
    page = Page(page_html)
    policy = next(dict(a)["content"] for tag, a in page.tags if dict(a).get("http-equiv"))
    assert policy is not None and policy.startswith("default-src 'none'; style-src 'unsafe-inline'")
    assert not re.search(r"\b(src|href)=|url\(|@import", page_html)  # nothing fetched
    assert page.count("style") == 1 and page.count("script") == 0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_shown_as_itself(value: str) -> None:
    page = Page(f"<div>{text(value)}</div>")
    assert [tag for tag, _ in page.tags] == ["div"]
    assert page.text == readable(value)


def test_a_claude_code_and_a_codex_session() -> None:
    for path, agent in (
        (FIXTURES / "claude/made/tools.jsonl", "claude"),
        (FIXTURES / "codex/handoff/tools-old.jsonl", "codex"),
    ):
        page = Page(exported(path, agent))
        assert page.count("section") == page.closed.count("section") > 2
        assert page.count("details") == page.closed.count("details") > 1


def test_the_assistants_markdown_and_the_documents_are_rendered_and_act_in_nothing(
    tmp_path: Path,
) -> None:
    entries = Entries()
    entries.user("Please **fix** it:\n- keep my lines")
    entries.assistant(
        "Done: **two** changes.\n\n- `parse()` accepts CRLF\n- a test\n\n"
        "See [the docs](https://docs.example/a) and ![a pixel](https://evil.example/p.png), "
        "not [this](javascript:alert(1)).\n\n"
        '```js" onmouseover="alert(2)\nlet x = "<b>";\n```\n\n<script>alert(3)</script>'
    )
    entries.add("custom_message", customType="handoff", display=True,
                content=wrap_document("## Goal\n- **ship** it"))  # fmt: skip
    page_html = exported(write_session(tmp_path / "s.jsonl", entries.items))
    page = Page(page_html)
    assert (
        "<strong>two</strong>" in page_html
        and "<li><code>parse()</code> accepts CRLF</li>" in page_html
    )
    assert "<h2>Goal</h2>" in page_html and "<strong>ship</strong>" in page_html
    assert "Please **fix** it:" in page.text and "<strong>fix" not in page_html  # as typed
    assert "the docs (https://docs.example/a)" in page.text
    assert "[this](javascript:alert(1))" in page.text  # no link CommonMark would follow
    assert "[image: a pixel] (https://evil.example/p.png)" in page.text
    assert "<pre>\nlet x = &quot;&lt;b&gt;&quot;;</pre>" in page_html
    assert "<script>alert(3)</script>" in page.text
    assert {name for _, attributes in page.tags for name, _ in attributes} <= ATTRIBUTES
    assert not re.search(r"<(script|img|a|iframe)\b|\b(src|href|onmouseover)=", page_html)
    assert '"Noto Sans CJK SC"' in page_html  # a font for Chinese, Japanese and Korean
