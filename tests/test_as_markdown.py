"""The Markdown export: rendered by a CommonMark renderer that passes raw HTML through (the
most a Markdown viewer does), whatever a session holds shows as its text and nothing of it
acts: no tag, no link, no image, no fold closed or opened, no heading of its own."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from handoff_cli.agents import load_session
from handoff_cli.export import as_markdown
from handoff_cli.export.as_markdown import fenced, inline, prose
from handoff_cli.export.transcript import transcript_of
from handoff_cli.sessions.tree import branch, leaf
from handoff_cli.text import readable

from .conftest import HOSTILE, hostile_session


def rendered(markdown: str) -> str:
    """The HTML a viewer makes of ``markdown``: CommonMark with raw HTML on, GFM's tables and
    strike-through."""
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    page: str = parser.render(markdown)
    return page


class Page(HTMLParser):
    """What an HTML page holds: its tags with their attributes, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.closed: list[str] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.closed.append(tag)

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def count(self, tag: str) -> int:
        return sum(name == tag for name, _ in self.tags)

    @property
    def text(self) -> str:
        return "".join(self.texts)


def exported(path: Path) -> str:
    session = load_session(path)
    made = transcript_of(session, branch(session, leaf(session)), "omp")
    return "".join(as_markdown.render(made))


OURS = {
    "h1", "h2", "ul", "li", "p", "em", "strong", "details", "summary", "pre", "code", "br", "hr",
}  # fmt: skip
"""The tags the export itself makes, rendered."""


def test_nothing_a_session_holds_acts_in_the_rendered_markdown(tmp_path: Path) -> None:
    page = Page(rendered(exported(hostile_session(tmp_path / "s.jsonl"))))
    assert {tag for tag, _ in page.tags} <= OURS  # no script, img, a, b, table, del, blockquote
    fences = [("class", "language-sh")], [("class", "language-text")], [("class", "language-json")]
    assert all(a in ([], [("open", None)], *fences) for _, a in page.tags), page.tags
    # Our own structure, exactly: the title; the user's, the assistant's and the agent's turns
    # and two marks, a compaction and the handoff (a model change is a line); a fold a call
    # (2), thinking, the summary, the custom message, the document and its prompt.
    assert (page.count("h1"), page.count("h2")) == (1, 5)
    assert page.count("details") == page.closed.count("details") == 7
    for text in HOSTILE:
        for line in text.split("\n"):
            assert line.strip() in page.text, line  # shown as the text it is


def test_markdown_meta_in_a_line_is_shown_not_read() -> None:
    for text in HOSTILE:
        page = Page(rendered(prose(text)))
        assert {tag for tag, _ in page.tags} <= {"p", "br"}, text
        assert page.text.replace("\xa0", " ").split() == readable(text).split()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_any_text_renders_as_itself(text: str) -> None:
    """Whatever the text, the rendered prose has its characters, line by line, and no markup
    but paragraphs and line breaks."""
    assume(text.strip())  # a blank text is no part of a transcript
    page = Page(rendered(prose(text)))
    assert {tag for tag, _ in page.tags} <= {"p", "br"}
    shown = [line.split() for line in page.text.replace("\xa0", " ").split("\n")]
    lines = [line.split() for line in readable(text).split("\n")]
    assert [words for words in shown if words] == [words for words in lines if words]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_any_text_inline_stays_in_its_line(text: str) -> None:
    page = Page(rendered(f"- name: {inline(text)}\n"))
    assert {tag for tag, _ in page.tags} <= {"ul", "li"}
    assert page.text.split() == ["name:", *readable(" ".join(text.split())).split()]


def test_a_fence_outlasts_any_backticks_inside() -> None:
    text = "a\n```\nb\n`````\n~~~"
    page = Page(rendered(fenced(text, "text") + "\n\nafter"))
    assert page.count("pre") == 1 and page.text.startswith(text)
    assert page.count("p") == 1  # "after" is a paragraph of its own: the fence closed once
