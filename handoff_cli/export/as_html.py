"""A transcript as one HTML file: self-contained (its style inline, nothing fetched, no script
at all), so it can be opened, mailed or kept as a CI artifact as it is.

Every string from the session is escaped (``html.escape``, quotes too) and only ever lands in
an element's text, never in an attribute, a tag's name or a style: the only attributes written
are our own classes. The page also tells the browser so (a Content-Security-Policy that allows
its inline style and nothing else), so that even a mistake here could not load or run
anything. What a person wrote, a tool's output and code are shown as the text they are, in
their lines (``pre-wrap``); what the assistant wrote, documents and summaries are Markdown,
rendered by markdown-it (CommonMark, raw HTML escaped), with a link or an image shown as its
text and its address in plain text: no element takes a session's address or a fence's name.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from handoff_cli import __version__
from handoff_cli.export.transcript import (
    ASSISTANT,
    MINOR_MARKS,
    ROLES,
    Fold,
    Header,
    Mark,
    Note,
    Part,
    Section,
    Text,
    Transcript,
    Turn,
    day_of,
    when,
)
from handoff_cli.text import one_line, readable

SUMMARY_CHARS = 160

_STYLE = """
:root { color-scheme: light dark; --fg: #1d1f23; --muted: #667085; --line: #d0d5dd;
  --user: #eef4ff; --assistant: #ffffff; --agent: #f8f9fb; --mark: #fff7e6; --failed: #b42318;
  --code: #f4f5f7; }
@media (prefers-color-scheme: dark) { :root { --fg: #e4e7ec; --muted: #98a2b3; --line: #344054;
  --user: #1a2233; --assistant: #16181d; --agent: #1d2026; --mark: #2b2416; --failed: #f97066;
  --code: #0f1114; } }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 62rem; padding: 1.5rem; color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC",
    "PingFang SC", "Hiragino Sans", "Microsoft YaHei", "Malgun Gothic", sans-serif;
  background: Canvas; }
h1 { font-size: 1.4rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
h2 { font-size: .95rem; margin: 0 0 .5rem; }
.time { color: var(--muted); font-weight: normal; margin-left: .5rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 1.5rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
section { border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem;
  margin: .75rem 0; }
.user { background: var(--user); } .assistant { background: var(--assistant); }
.tool, .agent { background: var(--agent); }
.mark { background: var(--mark); border-style: dashed; }
p.mark { border: 0; padding: .25rem 1rem; color: var(--muted); font-style: italic; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .35rem 0; }
.note { color: var(--muted); font-style: italic; margin: .35rem 0; }
.md { overflow-wrap: anywhere; margin: .35rem 0; } .md > :first-child { margin-top: 0; }
.md > :last-child { margin-bottom: 0; } .md h1, .md h2, .md h3 { font-size: 1rem; }
.md code { background: var(--code); padding: 0 .2rem; border-radius: 4px;
  font: 13px ui-monospace, monospace; }
.address { color: var(--muted); }
details { border-left: 3px solid var(--line); margin: .4rem 0; padding: .1rem .6rem; }
details.failed { border-left-color: var(--failed); }
summary { cursor: pointer; color: var(--muted); overflow-wrap: anywhere; }
.label { font-size: .8rem; color: var(--muted); margin-top: .4rem; }
pre { background: var(--code); padding: .5rem .75rem; border-radius: 6px; margin: .25rem 0;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, monospace; }
footer { color: var(--muted); font-size: .8rem; margin-top: 2rem; }
"""
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def render(transcript: Transcript) -> Iterator[str]:
    """The transcript as one HTML document, a piece at a time."""
    header = transcript.header
    yield (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(one_line(header.title, 200))}</title>\n<style>{_STYLE}</style>\n"
        "</head>\n<body>\n"
    )
    yield from _header(header)
    yield "<main>\n"
    day: str | None = None
    inside = False  # a turn's or a mark's section is open
    speaker: str | None = None
    for part in transcript.parts:
        if isinstance(part, (Turn, Mark)):
            speaker = part.role if isinstance(part, Turn) else None
            if inside:
                yield "</section>\n"
            inside = not (isinstance(part, Mark) and part.kind in MINOR_MARKS)
            yield _heading(part, day)
            day = day_of(part.stamp) or day
            if isinstance(part, Mark):
                yield from (_fold(fold) for fold in part.folds)
        else:
            if not inside:  # a part before any turn: in a section of its own
                yield '<section class="agent">\n'
                inside = True
            yield _part(part, speaker)
    if inside:
        yield "</section>\n"
    yield f"</main>\n{_footer(transcript.masked())}</body>\n</html>\n"


def text(value: str) -> str:
    """A session's text as the HTML text that shows it: escaped, quotes too."""
    return html.escape(readable(value), quote=True)


def _header(header: Header) -> Iterator[str]:
    yield f"<header>\n<h1>{text(one_line(header.title, 1_000))}</h1>\n<dl>\n"
    rows = [
        ("agent", header.agent),
        ("session", header.session_id),
        ("cwd", header.cwd),
        ("model", header.model),
        ("created", _moment(header.created)),
        ("last entry", _moment(header.last)),
        ("parent", header.parent),
        ("branch", f"{header.entries:,} entries, leaf {header.leaf or '(none)'}"),
    ]
    for name, value in rows:
        if value:
            yield f"<dt>{name}</dt><dd>{text(one_line(value, 10_000))}</dd>\n"
    yield "</dl>\n</header>\n"


def _moment(stamp: str | None) -> str | None:
    """A time of the header: in UTC where the agent wrote it so (``Z``)."""
    utc = stamp is not None and day_of(stamp) is not None and stamp.endswith("Z")
    return f"{when(stamp)} UTC" if utc else stamp


def _heading(part: Turn | Mark, day: str | None) -> str:
    stamp = when(part.stamp, day)
    at = f'<span class="time">{text(stamp)}</span>' if stamp else ""
    if isinstance(part, Turn):
        return f'<section class="{part.role}">\n<h2>{ROLES[part.role]}{at}</h2>\n'
    title = text(one_line(part.title, 1_000))
    if part.kind in MINOR_MARKS:
        return f'<p class="mark">{title}{at}</p>\n'
    return f'<section class="mark">\n<h2>◆ {title}{at}</h2>\n'


def _part(part: Part, speaker: str | None) -> str:
    if isinstance(part, Text):
        if speaker == ASSISTANT:
            return markdown(part.text)
        return f'<div class="text">{text(part.text)}</div>\n'
    if isinstance(part, Note):
        return f'<p class="note">({text(part.text)})</p>\n'
    assert isinstance(part, Fold), "turns and marks are headings"
    return _fold(part)


def _fold(fold: Fold) -> str:
    classes = "failed" if fold.failed else ""
    opening = f'<details class="{classes}"' if classes else "<details"
    opening += " open>" if fold.open else ">"
    failed = " ✗" if fold.failed else ""
    summary = text(one_line(fold.summary, SUMMARY_CHARS))
    body = "".join(_section(section) for section in fold.sections)
    body = body or '<p class="note">(empty)</p>\n'
    return f"{opening}<summary>{summary}{failed}</summary>\n{body}</details>\n"


def _section(section: Section) -> str:
    label = f'<div class="label">{text(section.label)}</div>\n' if section.label else ""
    if section.code is None:
        return f"{label}{markdown(section.text)}"

    body = section.text.rstrip("\n")
    if not body:
        return f'{label}<p class="note">(empty)</p>\n'
    return f"{label}<pre>\n{text(body)}</pre>\n"  # a parser drops the newline after <pre>


def markdown(source: str) -> str:
    """Markdown as HTML: CommonMark, raw HTML escaped, links and images as text."""
    return f'<div class="md">\n{_renderer().render(readable(source), {"links": []})}</div>\n'


@cache
def _renderer() -> MarkdownIt:
    renderer = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    for rule, render in (
        ("link_open", _link_open),
        ("link_close", _link_close),
        ("image", _image),
        ("fence", _code),
        ("code_block", _code),
    ):
        renderer.add_render_rule(rule, render)
    return renderer


def _link_open(_: Any, tokens: list[Token], index: int, __: Any, env: dict[str, Any]) -> str:
    env["links"].append(str(tokens[index].attrGet("href") or ""))
    return ""


def _link_close(_: Any, tokens: list[Token], index: int, __: Any, env: dict[str, Any]) -> str:
    address = env["links"].pop() if env["links"] else ""
    return f' <span class="address">({text(address)})</span>' if address else ""


def _image(_: Any, tokens: list[Token], index: int, __: Any, env: dict[str, Any]) -> str:
    token = tokens[index]
    alt = "".join(child.content for child in token.children or ())
    return f'<span class="address">[image: {text(alt)}] ({text(str(token.attrGet("src")))})</span>'


def _code(_: Any, tokens: list[Token], index: int, __: Any, env: dict[str, Any]) -> str:
    body = tokens[index].content.rstrip("\n")
    return f"<pre>\n{text(body)}</pre>\n"  # a parser drops the newline after <pre>


def _footer(masked: int | None) -> str:
    if masked is None:
        secrets = "secrets not masked (--no-redact)"
    else:
        secrets = f"secrets masked: {masked:,} (each shown as [REDACTED:kind:n])"
    return f"<footer>Exported by handoff_cli {text(__version__)}; {secrets}.</footer>\n"
