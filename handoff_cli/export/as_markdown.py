"""A transcript as Markdown: readable as text, and rendered (GitHub, an editor's preview, a CI
page) as the same transcript, whatever the session holds.

Nothing from the session is ever read as Markdown or HTML: its prose is escaped (every
character that could start emphasis, a link, an image, a tag, an entity, a table, code or a
heading, wherever it could), each of its lines kept as a line (a hard break); code (a command,
a call's arguments, a result) goes in a fence longer than any run of backticks it holds; what
stands in the HTML of a fold (``<details>``, its ``<summary>``) is HTML-escaped. So a message
cannot close a fold, open a turn of its own or run anything where the file is rendered.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from handoff_cli import __version__
from handoff_cli.export.transcript import (
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

_INLINE = re.compile(r"[\\`*_\[\]<>&|~$]")
"""What starts or ends an inline construct anywhere in a line: escapes, code, emphasis,
links and images, tags and autolinks, entities, table cells, strike-through, math."""
_BLOCK_START = re.compile(r"[#=+-]|[0-9]{1,9}(?=[.)])")  # CommonMark's digits are ASCII
"""What starts a block at the start of a line: a heading, a setext underline or a thematic
break, a list item (``*`` and ``>`` are escaped everywhere already)."""


def render(transcript: Transcript) -> Iterator[str]:
    """The transcript as one Markdown document, a piece at a time."""
    yield from _header(transcript.header)
    day: str | None = None
    for part in transcript.parts:
        if isinstance(part, (Turn, Mark)):
            yield _heading(part, day)
            day = day_of(part.stamp) or day
            if isinstance(part, Mark):
                yield from (_fold(fold) for fold in part.folds)
        else:
            yield _part(part)
    yield _footer(transcript.masked())


def _header(header: Header) -> Iterator[str]:
    yield f"# {inline(header.title)}\n\n"
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
    yield "".join(f"- {name}: {inline(value)}\n" for name, value in rows if value) + "\n"


def _moment(stamp: str | None) -> str | None:
    """A time of the header: in UTC where the agent wrote it so (``Z``)."""
    utc = stamp is not None and day_of(stamp) is not None and stamp.endswith("Z")
    return f"{when(stamp)} UTC" if utc else stamp


def _heading(part: Turn | Mark, day: str | None) -> str:
    stamp = when(part.stamp, day)
    at = f" · {inline(stamp)}" if stamp else ""
    if isinstance(part, Turn):
        return f"## {ROLES[part.role]}{at}\n\n"
    if part.kind in MINOR_MARKS:
        return f"*{inline(part.title)}{at}*\n\n"
    return f"## ◆ {inline(part.title)}{at}\n\n"


def _part(part: Part) -> str:
    if isinstance(part, Text):
        return prose(part.text) + "\n\n"
    if isinstance(part, Note):
        return f"*({inline(part.text)})*\n\n"
    assert isinstance(part, Fold), "turns and marks are headings"
    return _fold(part)


def _fold(fold: Fold) -> str:
    summary = html.escape(readable(one_line(fold.summary, SUMMARY_CHARS)))
    failed = " ✗" if fold.failed else ""
    body = "".join(_section(section) for section in fold.sections) or "*(empty)*\n\n"
    opening = "<details open>" if fold.open else "<details>"
    return f"{opening}\n<summary>{summary}{failed}</summary>\n\n{body}</details>\n\n"


def _section(section: Section) -> str:
    label = f"**{inline(section.label)}**\n\n" if section.label else ""
    if section.code is None:
        return label + prose(section.text) + "\n\n"
    return label + fenced(section.text, section.code) + "\n\n"


def _footer(masked: int | None) -> str:
    if masked is None:
        secrets = "secrets not masked (--no-redact)"
    else:
        secrets = f"secrets masked: {masked:,} (each shown as [REDACTED:kind:n])"
    return f"---\n\n*Exported by handoff\\_cli {inline(__version__)}; {inline(secrets)}.*\n"


def inline(text: str) -> str:
    """A session's text within a line of Markdown (never at its start), shown as the text
    it is."""
    return _INLINE.sub(r"\\\g<0>", readable(one_line(text, 10_000)))


def prose(text: str) -> str:
    """A session's text as Markdown paragraphs that show it as the text it is: each line a
    line, blank lines between paragraphs, indentation kept."""
    lines = readable(text).split("\n")
    out: list[str] = []
    for index, line in enumerate(lines):
        if not line.strip():
            out.append("")
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        out.append(_escaped(line) + ("\\" if following.strip() else ""))  # a hard break
    return "\n".join(out).strip("\n") or "*(empty)*"


def _escaped(line: str) -> str:
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    body = _INLINE.sub(r"\\\g<0>", body)
    start = _BLOCK_START.match(body)
    if start is not None:
        cut = start.end() if start.group().isdigit() else 0  # ``1.``: the dot is escaped
        body = body[:cut] + "\\" + body[cut:]
    # Leading white space would be dropped (or make a code block): kept as no-break spaces.
    return indent.replace("\t", "    ").replace(" ", "&nbsp;") + body


def fenced(text: str, language: str) -> str:
    """``text`` as a fenced code block, the fence longer than any run of backticks in it, so
    that nothing in it can close the block."""
    body = readable(text).rstrip("\n")
    runs = re.findall(r"`+", body)
    fence = "`" * max(3, max(map(len, runs), default=0) + 1)
    return f"{fence}{language}\n{body}\n{fence}" if body else "*(empty)*"
